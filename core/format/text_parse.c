/* text_parse.c: the text format (.pg) parser; grammar in docs/text-format.md.
 *
 * One pass over the buffer, statement by statement, building the program
 * through the program.h API so that use lists and name indexes are right from
 * the start. The file is first checked to be UTF-8 (and free of NUL bytes) as a
 * whole, so the scanner can then count columns in code points.
 *
 * Inside a graph a value must be defined before it is used: a use looks the
 * name up in the graph's hashed name index (pr_graph_find), which keeps a
 * million-node program linear. Names that may legitimately come later (a
 * delegate defined after the method that calls it, an op or blob declared
 * further down) are resolved at the end from a list of pending uses, so their
 * errors still point at the use. The parser checks op arity only loosely (not
 * too many arguments, none missing that has no default); types are the
 * verifier's business.
 *
 * Nothing malloc'd for a statement may live past it unless the program
 * keeps it: the parser's tables are made once, and a name is copied only
 * for a lookup that missed. The CLI keeps freed memory in the heap, never
 * returned (keep_freed_memory, tools/passrun.c), so a chunk held to the end
 * of the parse is, once freed, a resident hole among the program's own
 * chunks that later passes do not fill: 24 bytes per value statement so
 * held raised the peak RSS of the 10^6 .pg pipeline by 31 MB (861.8 ->
 * 892.6 MB). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "passrun/data.h"
#include "passrun/format.h"
#include "passrun/strbuf.h"
#include "text_lex.h"

/* A top-level name (op, blob, delegate, method) and the line defining it. */
struct tp_seen {
	char *key;            /* kind letter + name */
	uint32_t line;
	UT_hash_handle hh;
};

/* ---- small helpers ---------------------------------------------------- */

/* Returns the line that first defined (kind, name), or records this one and
 * returns 0. */
static uint32_t tp_seen_add(tp *p, char kind, const char *name, uint32_t line)
{
	char *key = pr_xasprintf("%c%s", kind, name);
	tp_seen *e;
	HASH_FIND_STR(p->seen, key, e);
	if (e) {
		free(key);
		return e->line;
	}
	e = pr_xcalloc(1, sizeof *e);
	e->key = key;
	e->line = line;
	HASH_ADD_KEYPTR(hh, p->seen, e->key, strlen(e->key), e);
	return 0;
}

static void tp_seen_free(tp *p)
{
	tp_seen *e, *tmp;
	HASH_ITER(hh, p->seen, e, tmp) {
		HASH_DEL(p->seen, e);
		free(e->key);
		free(e);
	}
}

/* p->scratch := the len bytes at s (NUL-terminated), for a table's lookup. */
static void tp_scratch_set(tp *p, const char *s, size_t len)
{
	p->scratch.len = 0;
	pr_strbuf_add(&p->scratch, s, len);
}

static void tp_pend(tp *p, tp_pending_kind kind, pr_node *n, const char *name, size_t at)
{
	PR_GROW(p->pend, p->n_pend, p->cap_pend);
	p->pend[p->n_pend++] = (tp_pending){ kind, n, pr_xstrdup(name), p->line, tp_col(p, at) };
}

/* A word that is a keyword, not the namespace of an op name. Inline, so
 * that the keyword's length and bytes are constants. */
static inline __attribute__((always_inline)) bool tp_keyword(tp *p, const char *w, size_t k, const char *kw)
{
	return tp_word_is(w, k, kw) && !(p->pos + 1 < p->n && p->s[p->pos] == ':' && p->s[p->pos + 1] == ':');
}

/* ---- arguments -------------------------------------------------------- */

/* Arguments being read, on the stack while they fit in inl; once complete
 * they move into the graph's storage (tp_args_to_graph), as do list items,
 * and string arguments are interned: nothing of them is malloc'd per node,
 * and nothing is left to free on an error. */
#define TP_INLINE_ARGS 8

typedef struct tp_args {
	pr_arg *v;            /* inl, or malloc'd once more are read */
	int n, cap;
	pr_arg inl[TP_INLINE_ARGS];
} tp_args;

static void tp_args_init(tp_args *a)
{
	a->v = a->inl;
	a->n = 0;
	a->cap = TP_INLINE_ARGS;
}

static pr_arg *tp_args_push(tp_args *a)
{
	if (a->n == a->cap) {
		a->cap *= 2;
		if (a->v == a->inl)
			a->v = memcpy(pr_xmalloc((size_t)a->cap * sizeof *a->v), a->inl, sizeof a->inl);
		else
			a->v = pr_xrealloc(a->v, (size_t)a->cap * sizeof *a->v);
	}
	pr_arg *x = &a->v[a->n++];
	memset(x, 0, sizeof *x);
	return x;
}

static void tp_args_done(tp_args *a)
{
	if (a->v != a->inl)
		free(a->v);
	tp_args_init(a);
}

/* The args read, as g's storage (pr_graph_new_args); a is emptied. */
static pr_arg *tp_args_to_graph(pr_graph *g, tp_args *a, int *n)
{
	pr_arg *out = pr_graph_new_args(g, a->n);
	if (a->n)
		memcpy(out, a->v, (size_t)a->n * sizeof *out);
	*n = a->n;
	tp_args_done(a);
	return out;
}

/* Values defined lately, by the hash of their name: most uses name a value
 * defined a few lines up, and this small table, in the cache, answers them
 * without a probe of the program's string table (a cache miss each in a
 * large program). A value is entered once appended, that is bound to its
 * name in its graph, and nodes are not removed while parsing: an entry whose
 * graph and name match is what pr_graph_find would return. A miss asks it. */
#define TP_RECENT 16384   /* a power of two */

struct tp_recent {
	uint32_t hash;
	pr_node *node;        /* NULL: empty */
};

static tp_recent *tp_recent_slot(tp *p, uint32_t h)
{
	if (!p->recent)
		p->recent = pr_xcalloc(TP_RECENT, sizeof *p->recent);
	return &p->recent[h & (TP_RECENT - 1)];
}

/* n, named by a string whose pr_str_hash is h. */
static void tp_recent_add(tp *p, pr_node *n, uint32_t h)
{
	*tp_recent_slot(p, h) = (tp_recent){ h, n };
}

/* The value g binds to the len bytes of the buffer at name, or NULL. A hit
 * is compared in place; a miss asks g's index by the bytes and hash and
 * enters what it finds, as a value used once is often used again (a
 * layer's cache, the mask). A name g lacks is copied into p->scratch (NUL-
 * terminated) for the error. */
static pr_node *tp_find_value(tp *p, pr_graph *g, const char *name, size_t len)
{
	uint32_t h = pr_str_hash(name, len);
	tp_recent *e = tp_recent_slot(p, h);
	if (e->node && e->hash == h && e->node->graph == g && tp_same_bytes(e->node->name, name, len) &&
	    !e->node->name[len])
		return e->node;
	pr_node *v = pr_graph_find_hashed(g, name, len, h);
	if (v)
		*e = (tp_recent){ h, v };
	else
		tp_scratch_set(p, name, len);
	return v;
}

/* '%' NAME: the value it names, which must be defined earlier in g. */
static pr_node *tp_value_ref(tp *p, pr_graph *g)
{
	size_t at = (tp_ws(p), p->pos);
	size_t len = 0;
	if (!tp_expect(p, '%', "a value (%name)") || !(len = tp_name_len(p, "a value name after '%'")))
		return NULL;
	pr_node *v = tp_find_value(p, g, p->s + p->pos - len, len);
	if (!v)
		tp_error_at(p, at, "undefined value '%%%s': expected a value defined earlier in '@%s'",
			    p->scratch.data, g->name);
	return v;
}

static bool tp_arg(tp *p, pr_graph *g, pr_arg *a);

/* '[' [ARG {',' ARG}] ']'; the '[' is consumed. */
static bool tp_list(tp *p, pr_graph *g, pr_arg *a, size_t at)
{
	if (++p->depth > TP_MAX_LIST_DEPTH)
		return tp_error_at(p, at, "expected lists nested at most %d deep, found deeper nesting",
				   TP_MAX_LIST_DEPTH);
	tp_args items;
	tp_args_init(&items);
	bool ok = true;
	a->kind = PR_ARG_LIST;
	if (!tp_accept(p, ']')) {
		do
			ok = tp_arg(p, g, tp_args_push(&items));
		while (ok && tp_accept(p, ','));
		ok = ok && tp_expect(p, ']', "',' or ']' in a list");
	}
	a->u.items = tp_args_to_graph(g, &items, &a->n_items);
	p->depth--;
	return ok;
}

static bool tp_arg_number(tp *p, pr_arg *a)
{
	bool is_float;
	if (!tp_number(p, &is_float, &a->u.i, &a->u.f))
		return false;
	a->kind = is_float ? PR_ARG_FLOAT : PR_ARG_INT;
	return true;
}

static bool tp_arg(tp *p, pr_graph *g, pr_arg *a)
{
	int c = tp_peek(p);
	size_t at = p->pos;
	if (c == '%') {
		a->kind = PR_ARG_VALUE;
		return (a->u.value = tp_value_ref(p, g)) != NULL;
	}
	if (c == '"') {
		if (!tp_string_kept(p, NULL, &a->u.s))   /* graph args' strings are interned */
			return false;
		a->kind = PR_ARG_STRING;
		return true;
	}
	if (c == '[') {
		p->pos++;
		return tp_list(p, g, a, at);
	}
	if ((c >= '0' && c <= '9') || c == '-')   /* a number: not a word */
		return tp_arg_number(p, a);
	const char *w;
	size_t k = tp_word(p, &w);
	if (tp_word_is(w, k, "true") || tp_word_is(w, k, "false")) {
		a->kind = PR_ARG_BOOL;
		a->u.b = k == 4;
		return true;
	}
	if (tp_word_is(w, k, "none")) {
		a->kind = PR_ARG_NONE;
		return true;
	}
	p->pos = at;
	if (tp_looks_numeric(p) || tp_word_is(w, k, "inf") || tp_word_is(w, k, "nan"))
		return tp_arg_number(p, a);
	a->kind = PR_ARG_NONE;
	return tp_expected(p, at, "an argument (a %value, a number, a string, true, false, none or a [list])");
}

/* '(' [ARG {',' ARG}] ')' */
static bool tp_call_args(tp *p, pr_graph *g, tp_args *out)
{
	if (!tp_expect(p, '(', "'(' to start the arguments"))
		return false;
	if (tp_accept(p, ')'))
		return true;
	do {
		if (!tp_arg(p, g, tp_args_push(out)))
			return false;
	} while (tp_accept(p, ','));
	return tp_expect(p, ')', "',' or ')' after an argument");
}

/* ---- op calls --------------------------------------------------------- */

/* Ops and delegates called lately, by the bytes of the name written: a
 * program calls a few dozen, thousands of times each, and this answers a
 * call without a probe of the program's tables. A slot holds only what a
 * table found (schemas and delegates stay put while parsing), keyed by the
 * name where the buffer first spelled it. */
#define TP_CALLEES 64   /* per kind; a power of two (16 slots for 16 ops: 1 call in 6 missed) */

struct tp_callee {
	const char *name;     /* in the buffer */
	size_t len;
	void *found;          /* a pr_schema or a pr_delegate; NULL: empty */
};

/* The op's schema (is_op) or the delegate named by the len bytes at name,
 * or NULL, which leaves the name in p->scratch. */
static void *tp_callee_find(tp *p, bool is_op, const char *name, size_t len)
{
	if (!p->callees)
		p->callees = pr_xcalloc(2 * TP_CALLEES, sizeof *p->callees);
	uint32_t slot = (is_op ? TP_CALLEES : 0) + (pr_str_hash(name, len) & (TP_CALLEES - 1));
	tp_callee *c = &p->callees[slot];
	if (c->found && c->len == len && tp_same_bytes(c->name, name, len))
		return c->found;
	tp_scratch_set(p, name, len);
	void *found = is_op ? (void *)pr_program_find_schema(p->prog, p->scratch.data)
			    : (void *)pr_program_find_delegate(p->prog, p->scratch.data);
	if (found)
		*c = (tp_callee){ name, len, found };
	return found;
}

/* [A-Za-z_][A-Za-z0-9_]* right at the cursor (no blanks skipped). */
static size_t tp_ident_here(tp *p)
{
	size_t b = p->pos;
	while (p->pos < p->n) {
		char c = p->s[p->pos];
		bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
		if (!letter && !(p->pos > b && c >= '0' && c <= '9'))
			break;
		p->pos++;
	}
	return p->pos - b;
}

/* ns::name[.overload]: it ends at the cursor, left in the buffer. */
static bool tp_op_name(tp *p)
{
	size_t b = (tp_ws(p), p->pos);
	if (!tp_ident_here(p) || p->pos + 1 >= p->n || p->s[p->pos] != ':' || p->s[p->pos + 1] != ':') {
		p->pos = b;
		return tp_expected(p, b, "an op call (namespace::name(...))");
	}
	p->pos += 2;
	if (!tp_ident_here(p))
		return tp_expected(p, p->pos, "an op name after '::'");
	if (p->pos < p->n && p->s[p->pos] == '.') {
		p->pos++;
		size_t ob = p->pos;
		while (p->pos < p->n && ((p->s[p->pos] >= 'a' && p->s[p->pos] <= 'z') ||
		       (p->s[p->pos] >= 'A' && p->s[p->pos] <= 'Z') ||
		       (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') || p->s[p->pos] == '_'))
			p->pos++;
		if (p->pos == ob)
			return tp_expected(p, ob, "an overload name after '.'");
	}
	return true;
}

/* Loose arity: not more than the schema has, none missing without a default. */
static int tp_arity_need(const pr_schema *s)
{
	int need = 0;
	for (int i = 0; i < s->n_args; i++)
		if (!s->args[i].default_value)
			need = i + 1;
	return need;
}

static bool tp_check_arity(tp *p, const pr_schema *s, int given, uint32_t line, uint32_t col)
{
	int need = tp_arity_need(s);
	if (given > s->n_args)
		return tp_error_line(p, line, col, "expected at most %d arguments for '%s', found %d",
				     s->n_args, s->full_name, given);
	if (given < need)
		return tp_error_line(p, line, col, "expected at least %d arguments for '%s', found %d",
				     need, s->full_name, given);
	return true;
}

static bool tp_append(tp *p, pr_graph *g, pr_node *n, size_t at)
{
	n->line = p->line;
	pr_err *e = pr_graph_append(g, n);
	if (!e)
		return true;
	tp_error_at(p, at, "%s", pr_err_message(e));
	pr_err_free(e);
	return false;
}

/* n's args: what a read, in g's storage. */
static void tp_set_args(pr_graph *g, pr_node *n, tp_args *a)
{
	int count;
	pr_arg *args = tp_args_to_graph(g, a, &count);
	pr_node_set_graph_args(n, args, count);
}

/* OP(args) with the op name at the cursor; n has its name and type. */
static bool tp_op_call(tp *p, pr_graph *g, pr_node *n)
{
	size_t at = (tp_ws(p), p->pos);
	if (!tp_op_name(p))
		return false;
	/* Usually declared already; otherwise keep the name for the end. */
	pr_schema *s = tp_callee_find(p, true, p->s + at, p->pos - at);
	char *op = s ? NULL : pr_xstrdup(p->scratch.data);
	tp_args args;
	tp_args_init(&args);
	bool ok = tp_call_args(p, g, &args);
	if (!ok) {
		tp_args_done(&args);
		free(op);
		return false;
	}
	tp_set_args(g, n, &args);
	n->of_kind.schema = s;
	/* The column (a scan of the line) only for an error. */
	if (!s)
		tp_pend(p, TP_PEND_OP, n, op, at);
	else if (n->n_args > s->n_args || n->n_args < tp_arity_need(s))
		ok = tp_check_arity(p, s, n->n_args, p->line, tp_col(p, at));
	free(op);
	return ok;
}

/* ---- value statements ------------------------------------------------- */

/* Can a constant of dtype t hold v, written at `at`? pr_data_value_fits
 * (data.h) says; the binary loader asks the same question. */
static bool tp_value_fits(tp *p, pr_dtype t, double v, size_t at)
{
	char why[160];
	return pr_data_value_fits(t, v, why, sizeof why) || tp_error_at(p, at, "%s", why);
}

static bool tp_data_list(tp *p, pr_data *d, size_t at, int64_t numel, pr_dtype t)
{
	int64_t cap = 0;
	d->kind = PR_DATA_LIST;
	if (!tp_accept(p, ']')) {
		do {
			PR_GROW(d->values, d->n_values, cap);
			const char *w;
			size_t vb = (tp_ws(p), p->pos);
			size_t k = tp_word(p, &w);
			double *v = &d->values[d->n_values++];
			if (tp_word_is(w, k, "true") || tp_word_is(w, k, "false")) {
				*v = k == 4;
				continue;
			}
			p->pos = vb;
			bool is_float;
			int64_t i;
			if (!tp_number(p, &is_float, &i, v))
				return false;
			if (!is_float)
				*v = (double)i;
			if (!tp_value_fits(p, t, *v, vb))
				return false;
		} while (tp_accept(p, ','));
		if (!tp_expect(p, ']', "',' or ']' in the data list"))
			return false;
	}
	if (d->n_values != numel)
		return tp_error_at(p, at, "expected %lld values (the tensor's element count), found %lld",
				   (long long)numel, (long long)d->n_values);
	return true;
}

static bool tp_paren_number(tp *p, bool want_int, double *f, int64_t *i)
{
	bool is_float;
	if (!tp_expect(p, '(', "'('"))
		return false;
	tp_ws(p);
	size_t at = p->pos;
	if (!tp_number(p, &is_float, i, f))
		return false;
	if (want_int && (is_float || *i < 0))
		return tp_expected(p, at, "a seed (an integer >= 0)");
	if (!is_float)
		*f = (double)*i;
	return tp_expect(p, ')', "')'");
}

/* data=DATA for input node n (a tensor). */
static bool tp_data(tp *p, pr_node *n)
{
	pr_data *d = &n->of_kind.input->data;
	size_t at = (tp_ws(p), p->pos);
	if (tp_accept(p, '[')) {
		/* read apart and given to n (owned), after an error too */
		pr_data list = {0};
		bool ok = tp_data_list(p, &list, at, pr_spec_numel(&n->type.tensor),
				       n->type.tensor.dtype);
		d->kind = list.kind;
		pr_node_set_data_values(n, list.values, list.n_values, PR_STORAGE_OWNED);
		return ok;
	}
	if (tp_accept(p, '@')) {
		if (!tp_name(p, "a blob name after '@'"))
			return false;
		d->kind = PR_DATA_BLOB;
		tp_pend(p, TP_PEND_BLOB, n, p->scratch.data, at);
		return true;
	}
	const char *w;
	size_t k = tp_word(p, &w);
	int64_t seed = 0;
	if (tp_word_is(w, k, "zeros"))
		d->kind = PR_DATA_ZEROS;
	else if (tp_word_is(w, k, "ones"))
		d->kind = PR_DATA_ONES;
	else if (tp_word_is(w, k, "arange"))
		d->kind = PR_DATA_ARANGE;
	else if (tp_word_is(w, k, "fill")) {
		d->kind = PR_DATA_FILL;
		size_t vat = (tp_ws(p), p->pos + 1);   /* past the '(' */
		return tp_paren_number(p, false, &d->fill, &seed) &&
		       tp_value_fits(p, n->type.tensor.dtype, d->fill, vat);
	}
	else if (tp_word_is(w, k, "random")) {
		double unused;
		d->kind = PR_DATA_RANDOM;
		if (!tp_paren_number(p, true, &unused, &seed))
			return false;
		d->seed = (uint64_t)seed;
	} else {
		p->pos = at;
		return tp_expected(p, at, "data (zeros, ones, fill(X), arange, random(SEED), [values] or @BLOB)");
	}
	return true;
}

static bool tp_input_kind(tp *p, pr_node *n)
{
	static const struct { const char *word; pr_input_kind kind; } kinds[] = {
		{ "user", PR_INPUT_USER }, { "parameter", PR_INPUT_PARAMETER },
		{ "buffer", PR_INPUT_BUFFER }, { "constant", PR_INPUT_CONSTANT },
	};
	const char *w;
	size_t at = (tp_ws(p), p->pos);
	size_t k = tp_word(p, &w);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (tp_word_is(w, k, kinds[i].word)) {
			n->of_kind.input->kind = kinds[i].kind;
			return true;
		}
	}
	p->pos = at;
	return tp_expected(p, at, "an input kind (user, parameter, buffer or constant; plain 'input' "
			   "is only for delegate bodies)");
}

/* input KIND ["NAME"] [data=DATA], or plain `input` in a delegate body. */
static bool tp_input(tp *p, pr_graph *g, pr_node *n)
{
	pr_node_make_input(n);
	if (g->delegate) {
		n->of_kind.input->kind = PR_INPUT_POSITIONAL;
		if (!tp_at_eol(p))
			return tp_expected(p, p->pos, "end of line (inputs of a delegate body are plain 'input')");
		return true;
	}
	if (!tp_input_kind(p, n))
		return false;
	if (tp_peek(p) == '"') {   /* the node keeps it: g's storage */
		char *quoted;
		if (!tp_string_kept(p, g, &quoted))
			return false;
		pr_node_set_input_name(n, quoted, PR_STORAGE_GRAPH);
	}
	if (tp_at_eol(p))
		return true;
	const char *w;
	size_t at = p->pos;
	size_t k = tp_word(p, &w);
	if (!tp_word_is(w, k, "data")) {
		p->pos = at;
		return tp_expected(p, at, "end of line or data=...");
	}
	if (n->of_kind.input->kind == PR_INPUT_USER)
		return tp_error_at(p, at, "expected end of line: data= is only for parameters, buffers "
				   "and constants, not user inputs");
	if (n->type.kind != PR_TYPE_TENSOR)
		return tp_error_at(p, at, "expected a tensor type for a value with data=");
	return tp_expect(p, '=', "'=' after data") && tp_data(p, n);
}

static bool tp_getitem(tp *p, pr_graph *g, pr_node *n)
{
	n->kind = PR_NODE_GETITEM;
	pr_node *v = tp_value_ref(p, g);
	if (!v || !tp_expect(p, ',', "',' after the getitem's value"))
		return false;
	tp_ws(p);
	size_t at = p->pos;
	int64_t index;
	if (!tp_int(p, "an index (an integer from 0 to 2147483647)", &index))
		return false;
	if (index < 0 || index > INT32_MAX)
		return tp_expected(p, at, "an index (an integer from 0 to 2147483647)");
	n->of_kind.index = (int32_t)index;
	pr_arg *a = pr_graph_new_args(g, 1);
	a->kind = PR_ARG_VALUE;
	a->u.value = v;
	pr_node_set_graph_args(n, a, 1);
	return true;
}

static bool tp_delegate_call(tp *p, pr_graph *g, pr_node *n)
{
	n->kind = PR_NODE_DELEGATE;
	size_t at = (tp_ws(p), p->pos);
	size_t len = 0;
	if (!tp_expect(p, '@', "'@' and the delegate's name") ||
	    !(len = tp_name_len(p, "a delegate name after '@'")))
		return false;
	/* Usually defined already; otherwise keep the name (the arguments
	 * overwrite scratch) for the end. */
	pr_delegate *d = tp_callee_find(p, false, p->s + p->pos - len, len);
	char *name = d ? NULL : pr_xstrdup(p->scratch.data);
	tp_args args;
	tp_args_init(&args);
	bool ok = tp_call_args(p, g, &args);
	if (ok) {
		tp_set_args(g, n, &args);
		n->of_kind.delegate = d;
		if (!d)
			tp_pend(p, TP_PEND_DELEGATE, n, name, at);
	} else {
		tp_args_done(&args);
	}
	free(name);
	return ok;
}

/* The right-hand side; n->kind is set by what it turns out to be. */
static bool tp_rhs(tp *p, pr_graph *g, pr_node *n)
{
	const char *w;
	size_t at = (tp_ws(p), p->pos);
	size_t k = tp_word(p, &w);
	if (tp_keyword(p, w, k, "input"))
		return tp_input(p, g, n);
	if (tp_keyword(p, w, k, "getitem"))
		return tp_getitem(p, g, n);
	if (tp_keyword(p, w, k, "delegate"))
		return tp_delegate_call(p, g, n);
	p->pos = at;
	if (!k)
		return tp_expected(p, at, "input, delegate @NAME(...), getitem or an op call");
	n->kind = PR_NODE_OP;
	return tp_op_call(p, g, n);
}

/* The error for a value named like old, written at `at`: it comes first in
 * the statement, so it replaces one the rest of the statement gave. */
static bool tp_duplicate(tp *p, pr_graph *g, const pr_node *old, size_t at)
{
	pr_err_free(p->err);
	p->err = NULL;
	return tp_error_at(p, at, "duplicate name '%%%s': expected a name not yet used in '@%s' "
			   "(first defined at line %u)", old->name, g->name, old->line);
}

/* %name: TYPE = RHS. The name stays in the buffer until the statement is
 * read: pr_graph_append_named then interns and binds it in one probe, and
 * refuses a name g has, which is then looked up for the message. */
static bool tp_value_stmt(tp *p, pr_graph *g)
{
	size_t at = p->pos++;
	size_t len = tp_name_len(p, "a value name after '%'");
	if (!len)
		return false;
	const char *name = p->s + p->pos - len;
	uint32_t h = pr_str_hash(name, len);   /* once, for both tables */
	pr_node *n = pr_graph_new_node(g, PR_NODE_OP, NULL);
	bool ok = tp_expect(p, ':', "':' and the value's type") && tp_type(p, n) &&
		  tp_expect(p, '=', "'=' after the type") && tp_rhs(p, g, n);
	/* Appended even after an error, so the program frees it with the rest;
	 * a node refused stays in g's slab, which frees it too. */
	n->line = p->line;
	pr_err *e = pr_graph_append_named(g, n, name, len, h);
	if (e) {
		pr_err_free(e);
		return tp_duplicate(p, g, pr_graph_find(g, n->name), at);
	}
	tp_recent_add(p, n, h);
	return ok && tp_end_stmt(p, "the statement");
}

/* OP(args) with no result. */
static bool tp_call_stmt(tp *p, pr_graph *g)
{
	size_t at = p->pos;
	pr_node *n = pr_graph_new_node(g, PR_NODE_OP, NULL);
	n->type.kind = PR_TYPE_NONE;
	bool ok = tp_op_call(p, g, n);
	return tp_append(p, g, n, at) && ok && tp_end_stmt(p, "the op call");
}

/* ['->' (buffer|input) "NAME"] after a returned value: its write-back,
 * the target interned (graph storage, as the node keeps it). */
static bool tp_writeback(tp *p, pr_writeback *wb)
{
	if (tp_peek(p) != '-' || p->pos + 1 >= p->n || p->s[p->pos + 1] != '>')
		return true;
	p->pos += 2;
	const char *w;
	size_t kat = (tp_ws(p), p->pos);
	size_t k = tp_word(p, &w);
	if (tp_word_is(w, k, "buffer"))
		wb->kind = PR_WRITEBACK_BUFFER;
	else if (tp_word_is(w, k, "input"))
		wb->kind = PR_WRITEBACK_INPUT;
	else
		return tp_expected(p, kat, "'buffer' or 'input' after '->'");
	return tp_string_kept(p, NULL, &wb->target);
}

/* The n write-backs at wb as g's storage (a return's, one per argument;
 * NULL when it has none); wb is freed. */
static pr_writeback *tp_writebacks_to_graph(pr_graph *g, pr_writeback *wb, int n)
{
	pr_writeback *out = n ? memcpy(pr_graph_alloc(g, (size_t)n * sizeof *wb), wb, (size_t)n * sizeof *wb)
			      : NULL;
	free(wb);
	return out;
}

/* return [ret {',' ret}], ret = %v ['->' (buffer|input) "NAME"] */
static bool tp_return_stmt(tp *p, pr_graph *g)
{
	size_t at = p->pos;
	tp_args args;
	tp_args_init(&args);
	pr_writeback *wb = NULL;
	int cap_wb = 0;
	bool ok = true;
	if (!tp_at_eol(p)) {
		do {
			pr_arg *a = tp_args_push(&args);
			PR_GROW(wb, args.n - 1, cap_wb);
			wb[args.n - 1] = (pr_writeback){ PR_WRITEBACK_NONE, NULL };
			a->kind = PR_ARG_VALUE;
			ok = (a->u.value = tp_value_ref(p, g)) != NULL;
			if (!ok) {
				a->kind = PR_ARG_NONE;
				break;
			}
			ok = tp_writeback(p, &wb[args.n - 1]);
		} while (ok && tp_accept(p, ','));
	}
	pr_node *n = pr_graph_new_node(g, PR_NODE_RETURN, NULL);
	int n_wb = args.n;
	tp_set_args(g, n, &args);
	pr_node_set_writebacks(n, tp_writebacks_to_graph(g, wb, n_wb), PR_STORAGE_GRAPH);
	if (!tp_append(p, g, n, at))
		return false;
	return ok && tp_end_stmt(p, "the return values");
}

/* ---- graphs and top-level statements ---------------------------------- */

/* The lines from the cursor to the first that starts with '}': at most one
 * statement each, so room for that many nodes, made at once, spares the
 * graph's slab and the program's string table their growing (each growth
 * of the table touches it all again). A hint: a '}' indented, or a body
 * with blank lines, only makes it more than needed. */
static size_t tp_body_lines(const tp *p)
{
	size_t lines = 0;
	for (const char *q = p->s + p->pos, *e = p->s + p->n; q < e && *q != '}'; lines++) {
		q = memchr(q, '\n', (size_t)(e - q));
		if (!q)
			break;
		q++;
	}
	return lines;
}

/* Statements up to the closing '}' (which it consumes); the '{' line is done. */
static bool tp_body(tp *p, pr_graph *g, uint32_t open_line)
{
	bool returned = false;
	pr_graph_reserve_nodes(g, tp_body_lines(p));
	for (;;) {
		tp_skip_blank_lines(p);
		int c = tp_peek(p);
		size_t at = p->pos;
		if (c < 0)
			return tp_error_at(p, at, "expected '}' to close '@%s' (opened at line %u), found end of file",
					   g->name, open_line);
		if (c == '}') {
			if (!returned)
				return tp_error_at(p, at, "expected a 'return' statement before '}' closing '@%s'", g->name);
			p->pos++;
			return tp_end_stmt(p, "'}'");
		}
		if (returned)
			return tp_expected(p, at, "'}' after the return statement");
		if (c == '%') {
			if (!tp_value_stmt(p, g))
				return false;
			continue;
		}
		const char *w;
		size_t k = tp_word(p, &w);
		if (tp_keyword(p, w, k, "return")) {
			if (!tp_return_stmt(p, g))
				return false;
			returned = true;
			continue;
		}
		p->pos = at;
		if (!k)
			return tp_expected(p, at, "a statement (%name: TYPE = ..., an op call, return or '}')");
		if (!tp_call_stmt(p, g))
			return false;
	}
}

static bool tp_top_name(tp *p, char kind, const char *what_kind)
{
	tp_ws(p);
	size_t at = p->pos;
	if (!tp_expect(p, '@', "'@' and a name") || !tp_name(p, "a name after '@'"))
		return false;
	uint32_t first = tp_seen_add(p, kind, p->scratch.data, p->line);
	if (first)
		return tp_error_at(p, at, "duplicate %s '@%s': expected a new name (first defined at line %u)",
				   what_kind, p->scratch.data, first);
	return true;
}

static bool tp_op_stmt(tp *p)
{
	tp_ws(p);
	size_t b = p->pos;
	const char *nl = memchr(p->s + b, '\n', p->n - b);
	size_t e = nl ? (size_t)(nl - p->s) : p->n;
	/* The schema ends at a comment; '#' inside a quoted default does not count. */
	char quote = 0;
	for (size_t i = b; i < e; i++) {
		char c = p->s[i];
		if (quote && c == '\\')
			i++;
		else if (quote && c == quote)
			quote = 0;
		else if (!quote && (c == '"' || c == '\''))
			quote = c;
		else if (!quote && c == '#')
			e = i;
	}
	while (e > b && (p->s[e - 1] == ' ' || p->s[e - 1] == '\t' || p->s[e - 1] == '\r'))
		e--;
	pr_schema *s;
	size_t col = 0;
	pr_err *err = pr_schema_parse(p->s + b, e - b, &s, &col);
	if (err) {
		tp_error_at(p, b + col, "%s", pr_err_message(err));
		pr_err_free(err);
		return false;
	}
	pr_schema *old = pr_program_find_schema(p->prog, s->full_name);
	if (old) {
		bool same = strcmp(old->text, s->text) == 0;
		uint32_t first = tp_seen_add(p, 'o', s->full_name, p->line);
		if (!same)
			tp_error_at(p, b, "expected one schema per op: '%s' was declared differently at line %u",
				    s->full_name, first);
		pr_schema_free(s);
		if (!same)
			return false;
	} else {
		tp_seen_add(p, 'o', s->full_name, p->line);
		pr_err *e2 = pr_program_add_schema(p->prog, s);
		if (e2) {
			tp_error_at(p, b, "%s", pr_err_message(e2));
			pr_err_free(e2);
			pr_schema_free(s);
			return false;
		}
	}
	p->pos = e;
	return tp_end_stmt(p, "the schema");
}

/* blob @NAME hex"..." */
static bool tp_blob_stmt(tp *p)
{
	if (!tp_top_name(p, 'b', "blob"))
		return false;
	char *name = pr_xstrdup(p->scratch.data);
	tp_ws(p);
	size_t at = p->pos;
	if (p->n - at < 4 || memcmp(p->s + at, "hex\"", 4) != 0) {
		free(name);
		return tp_expected(p, at, "hex\"...\" (the blob's bytes in hexadecimal)");
	}
	size_t b = at + 4, e = b;
	while (e < p->n && tp_hex_digit((unsigned char)p->s[e]) >= 0)
		e++;
	if (e >= p->n || p->s[e] != '"') {
		free(name);
		p->pos = e;
		return tp_expected(p, e, "a hex digit or '\"' closing the blob");
	}
	if ((e - b) % 2) {
		free(name);
		return tp_error_at(p, e, "expected an even number of hex digits (two per byte), found %zu", e - b);
	}
	int64_t size = (int64_t)(e - b) / 2;
	uint8_t *bytes = pr_xmalloc(size ? (size_t)size : 1);
	for (int64_t i = 0; i < size; i++)
		bytes[i] = (uint8_t)(tp_hex_digit((unsigned char)p->s[b + 2 * i]) * 16 +
				     tp_hex_digit((unsigned char)p->s[b + 2 * i + 1]));
	pr_blob *blob;
	pr_err *err = pr_program_add_blob(p->prog, name, bytes, size, false, &blob);
	free(bytes);
	free(name);
	if (err) {
		tp_error_at(p, at, "%s", pr_err_message(err));
		pr_err_free(err);
		return false;
	}
	p->pos = e + 1;
	return tp_end_stmt(p, "the blob");
}

/* delegate @NAME key="value" ... { body } */
static bool tp_delegate_stmt(tp *p)
{
	uint32_t open_line = p->line;
	if (!tp_top_name(p, 'd', "delegate"))
		return false;
	pr_delegate *d;
	pr_err *err = pr_program_add_delegate(p->prog, p->scratch.data, &d);
	if (err) {
		tp_error_at(p, p->pos, "%s", pr_err_message(err));
		pr_err_free(err);
		return false;
	}
	while (!tp_accept(p, '{')) {
		const char *w;
		size_t at = (tp_ws(p), p->pos);
		size_t k = tp_word(p, &w);
		if (!k)
			return tp_expected(p, at, "a compile spec (key=\"value\") or '{'");
		char *key = pr_xstrndup(w, k), *value = NULL;
		bool ok = !pr_delegate_spec(d, key) ||
			  tp_error_at(p, at, "expected each compile spec once, found a second '%s'", key);
		ok = ok && tp_expect(p, '=', "'=' after the compile spec's key") && tp_string(p, &value);
		if (ok)
			pr_delegate_set_spec(d, key, value);
		free(key);
		free(value);
		if (!ok)
			return false;
	}
	return tp_end_stmt(p, "'{'") && tp_body(p, d->body, open_line);
}

static bool tp_method_stmt(tp *p)
{
	uint32_t open_line = p->line;
	if (!tp_top_name(p, 'm', "method"))
		return false;
	pr_graph *g;
	pr_err *err = pr_program_add_method(p->prog, p->scratch.data, &g);
	if (err) {
		tp_error_at(p, p->pos, "%s", pr_err_message(err));
		pr_err_free(err);
		return false;
	}
	return tp_expect(p, '{', "'{' to open the method's body") && tp_end_stmt(p, "'{'") &&
	       tp_body(p, g, open_line);
}

static bool tp_version(tp *p)
{
	tp_skip_blank_lines(p);
	const char *w;
	size_t at = p->pos;
	size_t k = tp_word(p, &w);
	if (!tp_word_is(w, k, "passrun")) {
		p->pos = at;
		return tp_expected(p, at, "'passrun 1' (the format version) as the first statement");
	}
	tp_ws(p);
	size_t vat = p->pos;
	int64_t v;
	if (!tp_int(p, "the format version number (1)", &v))
		return false;
	if (v != 1)
		return tp_error_at(p, vat, "expected format version 1, found version %lld "
				   "(this passrun reads version 1)", (long long)v);
	return tp_end_stmt(p, "the format version");
}

static bool tp_top(tp *p)
{
	const char *w;
	size_t at = p->pos;
	size_t k = tp_word(p, &w);
	if (tp_word_is(w, k, "op"))
		return tp_op_stmt(p);
	if (tp_word_is(w, k, "blob"))
		return tp_blob_stmt(p);
	if (tp_word_is(w, k, "delegate"))
		return tp_delegate_stmt(p);
	if (tp_word_is(w, k, "method"))
		return tp_method_stmt(p);
	p->pos = at;
	return tp_expected(p, at, "a top-level statement (op, blob, delegate or method)");
}

/* ---- the end: pending names ------------------------------------------- */

static bool tp_resolve_one(tp *p, tp_pending *e)
{
	pr_node *n = e->node;
	switch (e->kind) {
	case TP_PEND_OP:
		n->of_kind.schema = pr_program_find_schema(p->prog, e->name);
		if (!n->of_kind.schema)
			return tp_error_line(p, e->line, e->col, "unknown op '%s': expected an op declared "
					     "with an 'op' statement", e->name);
		return tp_check_arity(p, n->of_kind.schema, n->n_args, e->line, e->col);
	case TP_PEND_DELEGATE:
		n->of_kind.delegate = pr_program_find_delegate(p->prog, e->name);
		if (!n->of_kind.delegate)
			return tp_error_line(p, e->line, e->col, "unknown delegate '@%s': expected a delegate "
					     "defined in this file", e->name);
		return true;
	case TP_PEND_BLOB: {
		pr_blob *b = pr_program_find_blob(p->prog, e->name);
		if (!b)
			return tp_error_line(p, e->line, e->col, "unknown blob '@%s': expected a blob "
					     "defined with a 'blob' statement", e->name);
		int64_t need = pr_spec_storage_bytes(&n->type.tensor);
		if (b->size != need)
			return tp_error_line(p, e->line, e->col, "expected a blob of %lld bytes (the tensor's "
					     "storage), found '@%s' with %lld bytes", (long long)need, e->name,
					     (long long)b->size);
		n->of_kind.input->data.blob = b;
		return true;
	}
	}
	return true;
}

static bool tp_resolve(tp *p)
{
	for (size_t i = 0; i < p->n_pend; i++)
		if (!tp_resolve_one(p, &p->pend[i]))
			return false;
	return true;
}

/* ---- UTF-8 ------------------------------------------------------------ */

/* The line and its start for an error at byte i of the check below, which
 * does not count lines as it goes. */
static bool tp_utf8_error(tp *p, size_t i)
{
	for (const char *q = p->s, *nl; (nl = memchr(q, '\n', (size_t)(p->s + i - q))); q = nl + 1) {
		p->line++;
		p->line_start = (size_t)(nl + 1 - p->s);
	}
	const unsigned char c = (unsigned char)p->s[i];
	if (c == 0)
		return tp_error_at(p, i, "expected text, found a NUL byte");
	return tp_error_at(p, i, "expected UTF-8 text, found the invalid byte 0x%02x", c);
}

/* Any ASCII byte but NUL is text here (the scanner judges control bytes
 * where it meets them), so a word need only have no high bit and no zero
 * byte (the subtraction borrows into the high bit of a zero); a newline
 * does not stop the run, as lines are counted only for an error. Four words
 * are judged together, with one branch: a .pg file is nearly all ASCII. */
/* The high bit of each byte of w that is not text for sure (a zero byte or
 * one >= 0x80). */
static uint64_t tp_not_ascii(uint64_t w)
{
	const uint64_t lows = 0x0101010101010101u, highs = 0x8080808080808080u;
	return (w | ((w - lows) & ~w)) & highs;
}

/* How many of the n bytes at s, in whole words, are plain ASCII text. */
static size_t tp_ascii_run(const unsigned char *s, size_t n)
{
	size_t i = 0;
	for (uint64_t w[4]; i + sizeof w <= n; i += sizeof w) {
		memcpy(w, s + i, sizeof w);
		if (tp_not_ascii(w[0]) | tp_not_ascii(w[1]) | tp_not_ascii(w[2]) | tp_not_ascii(w[3]))
			break;
	}
	for (uint64_t w; i + 8 <= n && (memcpy(&w, s + i, 8), !tp_not_ascii(w)); i += 8)
		;
	return i;
}

static bool tp_check_utf8(tp *p)
{
	const unsigned char *s = (const unsigned char *)p->s;
	size_t i = 0;
	while (i < p->n) {
		i += tp_ascii_run(s + i, p->n - i);
		if (i >= p->n)
			break;
		if (s[i] && s[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = pr_utf8_len(s + i, p->n - i);
		if (!k)
			return tp_utf8_error(p, i);
		i += k;
	}
	return true;
}

/* ---- entry point ------------------------------------------------------ */

pr_err *pr_text_parse(const char *filename, const char *text, size_t len, pr_program **out)
{
	tp p = { .file = filename ? filename : "<text>", .s = text, .n = len, .line = 1 };
	pr_strbuf_init(&p.scratch);
	pr_strbuf_add(&p.scratch, "", 0);
	*out = NULL;
	p.prog = pr_program_new();
	bool ok = tp_check_utf8(&p) && tp_version(&p);
	while (ok) {
		tp_skip_blank_lines(&p);
		if (p.pos >= p.n)
			break;
		ok = tp_top(&p);
	}
	ok = ok && tp_resolve(&p);
	for (size_t i = 0; i < p.n_pend; i++)
		free(p.pend[i].name);
	free(p.pend);
	tp_seen_free(&p);
	pr_strbuf_free(&p.scratch);
	free(p.shapes);
	free(p.recent);
	free(p.callees);
	if (!ok) {
		pr_program_free(p.prog);
		return p.err ? p.err : pr_err_new("%s: cannot parse", p.file);
	}
	*out = p.prog;
	return NULL;
}
