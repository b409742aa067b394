/* verify.c: the core verifier (verify.h).
 *
 * pr_verify checks every method and every delegate body in one walk each, in
 * graph order, against what the program itself declares: op schemas, delegate
 * bodies and the graph's own inputs. It never stops at the first finding: each
 * one becomes an error diagnostic (pass_name, the method or delegate, a node
 * name, its size in bytes when a tensor is involved, a message saying what is
 * wrong and what was expected), and the count is returned.
 *
 * Structure (methods and delegate bodies):
 *   - every argument value (list items included) is a node of the same graph,
 *     has a result and comes before its reader in graph order (node order
 *     numbers, renumbered first when stale);
 *   - use lists agree with the arguments: each use names an argument slot of
 *     its user that reads the value, no slot twice, and as many uses as slots
 *     read the value. Linear time, each use looked at once: every slot that
 *     reads a value of the graph must find itself in that value's use list
 *     at its use_index, and the slots together as many as the graph's use
 *     lists hold; then each entry is some slot's, and only once. When that
 *     fails, a second walk counts the readers of each value in an array
 *     (node->scratch points at its counter meanwhile, and gets its old value
 *     back) and compares each use list with its count, to say what is wrong;
 *   - op calls against their schema: argument count (too many, or a missing
 *     one without a default), argument kinds (Tensor <- tensor value, int <-
 *     integer or int value, T[] <- list, ...), and the result kind;
 *   - getitem reads a tuple, its index is in range and its tensor type is that
 *     element's (dtype, shape, strides; in a method the device is a placement
 *     fact, below; memory is the plan checker's);
 *   - delegate calls name a delegate of the program, pass as many arguments as
 *     its body has inputs (same kinds, dtypes and shapes) and have the type its
 *     body returns (one tensor, or a tuple of them);
 *   - exactly one return node, the last; it returns values;
 *   - write-backs: `-> buffer "N"` names a buffer input of that method, `->
 *     input "N"` a user input, with the value's dtype and shape; none in a
 *     delegate body; delegate bodies have only positional inputs, methods none.
 * Placement (methods only: a delegate body runs wholly on its delegate's
 * device, and its values carry host specs in text):
 *   - a host op (an op without the h2d/d2h traits) reads only host tensors,
 *     unless its schema is shape_only; a tensor on a device whose type is
 *     registered host addressable (device.h) counts as a host tensor for
 *     what host code reads;
 *   - an h2d op reads host tensors and produces a device tensor; a d2h op reads
 *     device tensors and produces a host tensor;
 *   - a device delegate (target_device parses to a non-host device) reads only
 *     tensors on its device and produces results on it; a host delegate (no
 *     target_device, or cpu) reads and produces host tensors; a target_device
 *     that pr_delegate_device refuses is left to the placement passes (B5). A device
 *     delegate call is "not placed yet" when its method holds no copy op and
 *     none of its results is on a device: that is a program as the user wrote
 *     it (docs/text-format.md's example), or one where a pass tagged constants with
 *     a device before propagate-device ran. Such a call may read host tensors
 *     and tensors on its own device, never another device's;
 *   - a getitem is on the device of the tuple element it reads;
 *   - an in-place result (a return aliasing a written argument) has exactly
 *     the spec (dtype, shape, strides, device, memory) of what it writes. This
 *     one is also checked in delegate bodies: aliasing does not depend on where
 *     the body runs.
 * Memory-plan overlaps are pr_plan_check's business (plan.h), not ours.
 * Views: a strided view whose schema states its geometry (arguments named
 * size, stride and storage_offset, as as_strided's) and whose arguments are
 * constants must address only elements of its base's storage (E-VIEW;
 * view_bounds.c). Other views (view, expand, slice, t, ...) take their
 * geometry from their base at run time, where a spec does not say it (a spec
 * has no storage offset, and `%wt: f32[2,3] = aten::t(%w)` is declared
 * contiguous): their kernels check them against the storage instead
 * (tests/runtime/refused/).
 *
 * Codes (stable; docs/diagnostics.md):
 *   E-STRUCTURE  a broken graph: bad links, an op without schema, a delegate
 *                without body, graph order not increasing
 *   E-UNDEFINED  an argument that names no value, a value of another graph,
 *                or one defined at or after its reader
 *   E-USES       a use list that disagrees with the arguments
 *   E-ARITY      wrong argument count (op vs schema, getitem, input, delegate
 *                call vs its body's inputs)
 *   E-TYPE       an argument or result of the wrong kind, dtype or shape, or
 *                a read of a node with no result
 *   E-GETITEM    getitem of a non-tuple, index out of range, wrong type
 *   E-VIEW       a strided view reaching outside its base's storage
 *   E-DELEGATE   unknown delegate, call result vs the body's return
 *   E-RETURN     no return, more than one, not last, a literal returned
 *   E-WRITEBACK  a write-back target that is not a buffer/user input of the
 *                method, a write-back in a delegate body, a type mismatch
 *   E-INPUT      a positional input in a method, a named one in a delegate
 *                body, two inputs with the same quoted name
 *   E-PLACEMENT  the placement rules above
 *   E-RECURSION  a delegate body that calls itself, directly or through other
 *                delegates (a program has no control flow, so such a call
 *                never ends): reported once, at the first call of the cycle
 *                found, with every call on it and its line
 * The diagnostic's node is the node with the problem, except for a placement
 * error about a tensor that is read: then it is that tensor (with its size),
 * and the message names the reader. */
#include "passrun/verify.h"
#include "view_bounds.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- context and reporting ------------------------------------------- */

/* What a delegate call is checked against, computed once per delegate. */
typedef struct dinfo {
	pr_delegate *d;
	int n_inputs;
	pr_node **inputs;     /* the body's inputs, in order */
	pr_node *ret;         /* the body's first return node, or NULL */
	bool device_known;    /* target_device absent, or a registered device */
	pr_device device;     /* host when absent */
	pr_device_id device_id; /* device interned once: a call's placement
				   checks compare ids, with no interning */
	bool host;            /* pr_device_is_host(device), asked once, not per call */
} dinfo;

typedef enum base_kind { B_TENSOR, B_INT, B_FLOAT, B_BOOL, B_SCALAR, B_STR, B_OTHER } base_kind;

typedef struct arg_type {
	base_kind base;
	bool optional;       /* the whole argument may be none */
	bool list;
	bool fixed_len;      /* T[N]: a single T is accepted too (PyTorch broadcasts it) */
	bool elem_optional;  /* Tensor?[] */
} arg_type;

/* What op calls are checked against, read once per schema: its argument
 * types parsed, its result kind, whether it writes, its view geometry. */
typedef struct sinfo {
	arg_type *args;           /* one per schema argument */
	bool result_known;        /* schema_result_kind said which */
	pr_type_kind result;
	bool writes;              /* some argument is written: in-place results */
	pr_view_geometry view;
} sinfo;

/* Open addressing from a pointer (a schema, a delegate) to an index: what
 * each call of it looks up, a multiply and a compare. */
typedef struct ptr_map {
	const void **keys;
	int *vals;
	size_t cap, n;        /* cap a power of two, more than twice n */
} ptr_map;

/* The quoted names of a method's inputs, by a hash of the name: each input
 * and each write-back looks its name up once. A slot keeps the hash beside
 * the input's place in the map's list of names, so that a probe past another
 * name reads neither that entry nor its name (on a big method, two cache
 * misses), in 8 bytes: half the lines a pointer would take. The list holds
 * each name beside its node, so that comparing a name is one line and the
 * name's, not the node's, its input record's and the name's. The table is
 * sized once for the inputs that open the method (where the loaders and the
 * passes keep them), and grows only for inputs further on. */
typedef struct name_slot {
	uint32_t hash;        /* name_hash of the name */
	uint32_t at;          /* 1 + the input's index in name_map.names; 0: free slot */
} name_slot;

typedef struct named_input {
	const char *name;     /* node->of_kind.input->name */
	pr_node *node;
} named_input;

typedef struct name_map {
	name_slot *slots;
	size_t cap, n;        /* cap a power of two (or 0), more than twice n */
	named_input *names;   /* n of them, in the order they were put; room for
			       * cap / 2 (name_map_fit keeps n under it) */
} name_map;

typedef struct vctx {
	pr_program *p;
	pr_diags *diags;
	const char *pass;
	int errors;
	dinfo *dinfos;        /* one per p->delegates[i] */
	ptr_map by_delegate;  /* delegate -> index in dinfos (the first, if twice) */
	sinfo *sinfos;        /* one per schema that op calls name, as met */
	int n_sinfos, cap_sinfos;
	ptr_map by_schema;    /* schema -> index in sinfos */
	/* per graph */
	pr_graph *g;
	bool body;            /* g is a delegate body */
	int64_t uses;         /* entries in the use lists of g's nodes */
	int64_t slots;        /* argument slots of g that read a value of g */
	bool uses_suspect;    /* a slot not at its use_index: check_uses says why */
	const pr_arg **sorted;/* room to sort one use list */
	size_t sorted_cap;
	name_map inputs;
	pr_node **nodes;      /* g's nodes in order, as the link walk found them */
	size_t nodes_cap;
	int64_t at;           /* the index in nodes of the node being checked */
	uint32_t ahead[16];   /* name_hash of input nodes[i]'s name at i % 16 */
	int n_returns;
	bool has_copies;      /* g holds an h2d or d2h op (of the nodes linked so far) */
	bool assumed_no_copies; /* a check read has_copies as false before the
				   link walk had seen all of g */
} vctx;

/* ---- tables --------------------------------------------------------------- */

static size_t ptr_slot(const void *k, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)k * 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 29) & (cap - 1);
}

/* The index stored for k, or -1. */
static inline int ptr_map_get(const ptr_map *m, const void *k)
{
	if (!m->cap)
		return -1;
	for (size_t i = ptr_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k)
			return m->vals[i];
		if (!m->keys[i])
			return -1;
	}
}

static void ptr_map_put(ptr_map *m, const void *k, int v);

static void ptr_map_grow(ptr_map *m)
{
	ptr_map old = *m;
	m->cap = old.cap ? old.cap * 2 : 64;
	m->n = 0;
	m->keys = pr_xcalloc(m->cap, sizeof *m->keys);
	m->vals = pr_xmalloc(m->cap * sizeof *m->vals);
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			ptr_map_put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
}

/* k must not be there yet. */
static void ptr_map_put(ptr_map *m, const void *k, int v)
{
	if (2 * (m->n + 1) >= m->cap)
		ptr_map_grow(m);
	size_t i = ptr_slot(k, m->cap);
	while (m->keys[i])
		i = (i + 1) & (m->cap - 1);
	m->keys[i] = k;
	m->vals[i] = v;
	m->n++;
}

static void ptr_map_free(ptr_map *m)
{
	free(m->keys);
	free(m->vals);
}

/* The name map's hash of a quoted input name. */
static uint32_t name_hash(const char *name)
{
	return pr_str_hash(name, strlen(name));
}

static pr_node *slot_node(const name_map *m, const name_slot *s)
{
	return s->at ? m->names[s->at - 1].node : NULL;
}

/* The slot of the input named name (whose name_hash is h), or the free slot
 * where it would go; the table has slots. */
static name_slot *name_map_at(const name_map *m, const char *name, uint32_t h)
{
	size_t i = h & (m->cap - 1);
	while (m->slots[i].at &&
	       (m->slots[i].hash != h || strcmp(m->names[m->slots[i].at - 1].name, name)))
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

/* Puts the input n, named name (hash h), in the free slot at. */
static void name_map_put(name_map *m, name_slot *at, pr_node *n, const char *name, uint32_t h)
{
	m->names[m->n] = (named_input){name, n};
	*at = (name_slot){h, (uint32_t)++m->n};
}

/* The table grown to a power of two (64 slots or more) over twice want,
 * each entry placed again by the hash it keeps; its names keep their
 * places. */
static void name_map_grow(name_map *m, size_t want)
{
	name_map old = *m;
	for (m->cap = old.cap ? old.cap * 2 : 64; 2 * want >= m->cap;)
		m->cap *= 2;
	m->names = pr_xrealloc(m->names, m->cap / 2 * sizeof *m->names);
	m->slots = pr_xcalloc(m->cap, sizeof *m->slots);
	pr_pages_fill(m->slots, m->cap * sizeof *m->slots);   /* probed all over */
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.slots[i].at)
			continue;
		size_t j = old.slots[i].hash & (m->cap - 1);
		while (m->slots[j].at)
			j = (j + 1) & (m->cap - 1);
		m->slots[j] = old.slots[i];
	}
	free(old.slots);
}

/* Room for want names: each input asks, so the test is kept inline. */
static inline void name_map_fit(name_map *m, size_t want)
{
	if (want && 2 * want >= m->cap)
		name_map_grow(m, want);
}

static void name_map_clear(name_map *m)
{
	free(m->slots);
	free(m->names);
	*m = (name_map){0};
}

static const char *diag_node_name(const pr_node *n)
{
	if (!n)
		return NULL;
	if (n->name)
		return n->name;
	if (n->kind == PR_NODE_OP && n->of_kind.schema)
		return n->of_kind.schema->full_name;
	if (n->kind == PR_NODE_RETURN)
		return "return";
	return NULL;
}

static int64_t node_bytes(pr_node *n)
{
	pr_spec *s = n ? pr_node_spec(n) : NULL;
	return s ? pr_spec_nbytes(s) : -1;
}

__attribute__((format(printf, 5, 0)))
static void vreport(vctx *c, const char *code, const char *node, int64_t bytes,
		    const char *fmt, va_list ap)
{
	pr_diags_addv(c->diags, PR_SEV_ERROR, code, c->pass, c->g ? c->g->name : NULL,
		      node, bytes, fmt, ap);
	c->errors++;
}

/* An error about node n (its name, its size when it is a tensor). */
__attribute__((format(printf, 4, 5)))
static void report(vctx *c, const char *code, pr_node *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(c, code, diag_node_name(n), node_bytes(n), fmt, ap);
	va_end(ap);
}

/* ---- text for messages ------------------------------------------------ */

#define LABEL_MAX 160
#define SPEC_MAX 768

/* "%x", "the call to aten::add.Tensor", "the return". */
static const char *label(const pr_node *n, char *buf)
{
	if (!n)
		snprintf(buf, LABEL_MAX, "(no node)");
	else if (n->name)
		snprintf(buf, LABEL_MAX, "%%%s", n->name);
	else if (n->kind == PR_NODE_OP && n->of_kind.schema)
		snprintf(buf, LABEL_MAX, "the call to %s", n->of_kind.schema->full_name);
	else if (n->kind == PR_NODE_DELEGATE && n->of_kind.delegate)
		snprintf(buf, LABEL_MAX, "the call to @%s", n->of_kind.delegate->name);
	else if (n->kind == PR_NODE_RETURN)
		snprintf(buf, LABEL_MAX, "the return");
	else
		snprintf(buf, LABEL_MAX, "an unnamed node");
	return buf;
}

static void append(char *buf, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t *len, const char *fmt, ...)
{
	if (*len >= SPEC_MAX - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *len, SPEC_MAX - *len, fmt, ap);
	va_end(ap);
	if (k > 0)
		*len = *len + (size_t)k < SPEC_MAX ? *len + (size_t)k : SPEC_MAX - 1;
}

/* The text syntax of a tensor type: f32[2,3]@cuda:0{strides=[1,2], mem=cuda:0:64}. */
static const char *spec_str(const pr_spec *s, char *buf)
{
	char dev[PR_DEVICE_STR_MAX];
	size_t len = 0;
	buf[0] = 0;
	int rank = s->rank < 0 ? 0 : s->rank > PR_MAX_RANK ? PR_MAX_RANK : s->rank;
	append(buf, &len, "%s[", pr_dtype_name(s->dtype));
	for (int i = 0; i < rank; i++)
		append(buf, &len, "%s%" PRId64, i ? "," : "", s->shape[i]);
	append(buf, &len, "]");
	if (!pr_spec_on_host(s))
		append(buf, &len, "@%s", pr_device_str(pr_spec_device(s), dev));
	bool strided = !pr_spec_is_contiguous(s);
	if (strided || s->has_mem) {
		append(buf, &len, "{");
		if (strided) {
			append(buf, &len, "strides=[");
			for (int i = 0; i < rank; i++)
				append(buf, &len, "%s%" PRId64, i ? "," : "", pr_spec_strides(s)[i]);
			append(buf, &len, "]%s", s->has_mem ? ", " : "");
		}
		if (s->has_mem)
			append(buf, &len, "mem=%s:%" PRId64, pr_device_str(pr_spec_mem_arena(s), dev),
			       s->mem_offset);
		append(buf, &len, "}");
	}
	return buf;
}

static const char *type_kind_str(const pr_type *t)
{
	switch (t->kind) {
	case PR_TYPE_NONE: return "no result";
	case PR_TYPE_TENSOR: return "a tensor";
	case PR_TYPE_TUPLE: return "a tuple";
	case PR_TYPE_INT: return "an int";
	}
	return "an unknown type";
}

static const char *arg_kind_str(const pr_arg *a)
{
	switch (a->kind) {
	case PR_ARG_VALUE: return a->u.value ? type_kind_str(&a->u.value->type) : "no value";
	case PR_ARG_INT: return "an integer literal";
	case PR_ARG_FLOAT: return "a float literal";
	case PR_ARG_BOOL: return "a bool literal";
	case PR_ARG_NONE: return "none";
	case PR_ARG_STRING: return "a string literal";
	case PR_ARG_LIST: return "a list";
	}
	return "an unknown argument";
}

static inline bool same_dtype_shape(const pr_spec *a, const pr_spec *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return false;
	if (a->shape == b->shape)
		return true;   /* interned: the same dims share the array */
	for (int i = 0; i < a->rank && i < PR_MAX_RANK; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

/* ---- values and use lists --------------------------------------------- */

/* Every line of node n, for a check to find in cache. */
static void prefetch_node(const pr_node *n)
{
	const char *p = (const char *)n;
	for (size_t off = 0; off < sizeof *n; off += 64)
		__builtin_prefetch(p + off);
}

/* check_value's findings, in its order: each test again, from the first,
 * for a slot that failed one of them. */
static __attribute__((noinline)) pr_node *check_value_slow(vctx *c, pr_node *user, pr_arg *a)
{
	char lu[LABEL_MAX], lv[LABEL_MAX];
	pr_node *v = a->u.value;
	if (!v) {
		report(c, "E-UNDEFINED", user, "%s has an argument that names no value; "
		       "expected a value defined earlier in @%s", label(user, lu), c->g->name);
		return NULL;
	}
	if (v->graph != c->g) {
		report(c, "E-UNDEFINED", user, "%s reads %s, which is not a node of @%s; "
		       "expected a value of the same graph", label(user, lu), label(v, lv),
		       c->g->name);
		return NULL;
	}
	/* This slot belongs in v's use list, well placed or not, at its use_index. */
	c->slots++;
	int k = a->use_index;
	if (k < 0 || k >= v->n_uses || v->uses[k].arg != a || a->owner != user)
		c->uses_suspect = true;
	if (v->order >= user->order) {   /* check_links renumbered a stale graph */
		report(c, "E-UNDEFINED", user, "%s reads %s before it is defined; expected "
		       "every value to be defined before its readers (graph order)",
		       label(user, lu), label(v, lv));
		return NULL;
	}
	if (v->type.kind == PR_TYPE_NONE || v->kind == PR_NODE_RETURN) {
		report(c, "E-TYPE", user, "%s reads %s, which has no result; expected a value",
		       label(user, lu), label(v, lv));
		return NULL;
	}
	if (a->owner != user)
		report(c, "E-USES", user, "an argument of %s that reads %s has another owner; "
		       "expected each argument to know its node", label(user, lu), label(v, lv));
	return v;
}

/* The value slot a reads, when it is a node of this graph with a result
 * defined before user; NULL (reported) otherwise. A slot that passes every
 * test (nearly all) is decided here in one condition, cheapest reads first,
 * with no frame for the reports' labels. */
static inline pr_node *check_value(vctx *c, pr_node *user, pr_arg *a)
{
	pr_node *v = a->u.value;
	int k = a->use_index;
	if (v && v->graph == c->g && a->owner == user && v->order < user->order &&
	    k >= 0 && k < v->n_uses && v->uses[k].arg == a &&
	    v->type.kind != PR_TYPE_NONE && v->kind != PR_NODE_RETURN) {
		c->slots++;
		return v;
	}
	return check_value_slow(c, user, a);
}

/* Checks every argument value of n (list items included); returns how many
 * name no readable value. */
static int check_list_values(vctx *c, pr_node *user, pr_arg *list);

static inline int check_arg_values(vctx *c, pr_node *user, pr_arg *args, int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		if (args[i].kind == PR_ARG_VALUE)
			bad += !check_value(c, user, &args[i]);
		else if (args[i].kind == PR_ARG_LIST)
			bad += check_list_values(c, user, &args[i]);
	}
	return bad;
}

/* check_arg_values of a list's items, out of line: few nodes have a list
 * of values, and the walk of a node's own slots is then inlined in
 * check_node, with no frame of its own per node. */
static __attribute__((noinline)) int check_list_values(vctx *c, pr_node *user, pr_arg *list)
{
	return check_arg_values(c, user, list->u.items, list->n_items);
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
	return x < y ? -1 : x > y;
}

/* How many of the n slots in s are repeats (s is sorted in place). */
static int64_t count_repeats(const pr_arg **s, int n)
{
	int64_t repeats = 0;
	if (n <= 8) {
		for (int i = 1; i < n; i++)
			for (int j = 0; j < i; j++)
				if (s[i] == s[j]) {
					repeats++;
					break;
				}
		return repeats;
	}
	qsort(s, (size_t)n, sizeof *s, cmp_ptr);
	for (int i = 1; i < n; i++)
		repeats += s[i] == s[i - 1];
	return repeats;
}

/* n's use list against the arguments that read it (counted by check_value,
 * so this runs after the whole graph): each use names an argument of its
 * user that reads n, no argument twice, and as many as read n. */
static void check_uses(vctx *c, pr_node *n, int64_t readers)
{
	char ln[LABEL_MAX], lu[LABEL_MAX];
	if ((size_t)n->n_uses > c->sorted_cap) {
		c->sorted_cap = (size_t)n->n_uses * 2;
		c->sorted = pr_xrealloc(c->sorted, c->sorted_cap * sizeof *c->sorted);
	}
	int valid = 0;
	for (int i = 0; i < n->n_uses; i++) {
		pr_use *u = &n->uses[i];
		const pr_node *user = u->arg ? pr_use_user(u) : NULL;
		bool ok = user && user->graph == c->g && u->arg->kind == PR_ARG_VALUE &&
			  u->arg->u.value == n;
		if (ok)
			c->sorted[valid++] = u->arg;
		else
			report(c, "E-USES", n, "the use list of %s names %s, which does not read it "
			       "there; expected only arguments that read %s", label(n, ln),
			       label(user, lu), label(n, ln));
	}
	int64_t repeats = count_repeats(c->sorted, valid);
	if (repeats)
		report(c, "E-USES", n, "the use list of %s names an argument twice; expected "
		       "one use per argument that reads it", label(n, ln));
	if (valid - repeats != readers)
		report(c, "E-USES", n, "%" PRId64 " argument%s read %s but its use list names %"
		       PRId64 "; expected one use per argument that reads it", readers,
		       readers == 1 ? "" : "s", label(n, ln), valid - repeats);
}

/* Counts, in the counter each value's scratch points at, the slots of args
 * that read a value of g: the slots check_value takes for its use list. */
static void count_readers(pr_graph *g, pr_arg *args, int n)
{
	for (int i = 0; i < n; i++) {
		pr_arg *a = &args[i];
		if (a->kind == PR_ARG_LIST)
			count_readers(g, a->u.items, a->n_items);
		else if (a->kind == PR_ARG_VALUE && a->u.value && a->u.value->graph == g)
			(*(int64_t *)a->u.value->scratch)++;
	}
}

/* ---- op calls against their schema ------------------------------------ */

static base_kind base_of(const char *s, size_t n)
{
	static const struct { const char *name; base_kind k; } names[] = {
		{"Tensor", B_TENSOR}, {"int", B_INT}, {"SymInt", B_INT},
		{"ScalarType", B_INT}, {"Layout", B_INT}, {"MemoryFormat", B_INT},
		{"float", B_FLOAT}, {"bool", B_BOOL}, {"Scalar", B_SCALAR}, {"str", B_STR},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i].name) == n && !memcmp(names[i].name, s, n))
			return names[i].k;
	return B_OTHER;
}

/* "Tensor", "Tensor?", "int[]", "int[2]", "int[]?", "Tensor?[]". */
static arg_type parse_arg_type(const char *s)
{
	arg_type t = {0};
	size_t n = s ? strlen(s) : 0;
	if (n && s[n - 1] == '?') {
		t.optional = true;
		n--;
	}
	if (n && s[n - 1] == ']') {
		const char *lb = memchr(s, '[', n);
		if (lb) {
			t.list = true;
			t.fixed_len = lb + 1 < s + n - 1;
			n = (size_t)(lb - s);
			if (n && s[n - 1] == '?') {
				t.elem_optional = true;
				n--;
			}
		}
	}
	t.base = base_of(s, n);
	return t;
}

static bool value_is(const pr_arg *a, pr_type_kind k)
{
	return a->kind == PR_ARG_VALUE && a->u.value && a->u.value->type.kind == k;
}

static inline bool scalar_fits(base_kind b, const pr_arg *a)
{
	switch (b) {
	case B_TENSOR: return value_is(a, PR_TYPE_TENSOR);
	case B_INT: return a->kind == PR_ARG_INT || value_is(a, PR_TYPE_INT);
	case B_FLOAT: return a->kind == PR_ARG_FLOAT || a->kind == PR_ARG_INT || value_is(a, PR_TYPE_INT);
	case B_BOOL: return a->kind == PR_ARG_BOOL;
	case B_SCALAR:
		return a->kind == PR_ARG_INT || a->kind == PR_ARG_FLOAT || a->kind == PR_ARG_BOOL ||
		       value_is(a, PR_TYPE_INT);
	case B_STR: return a->kind == PR_ARG_STRING;
	case B_OTHER: return true;
	}
	return false;
}

static bool arg_fits(const arg_type *t, const pr_arg *a)
{
	if (a->kind == PR_ARG_NONE)
		return t->optional || t->base == B_OTHER;
	if (!t->list)
		return scalar_fits(t->base, a);
	if (a->kind != PR_ARG_LIST)
		return t->fixed_len && scalar_fits(t->base, a);
	for (int i = 0; i < a->n_items; i++) {
		const pr_arg *it = &a->u.items[i];
		if (!(it->kind == PR_ARG_NONE ? t->elem_optional : scalar_fits(t->base, it)))
			return false;
	}
	return true;
}

static void check_op_args(vctx *c, pr_node *n, const sinfo *si)
{
	char ln[LABEL_MAX];
	const pr_schema *s = n->of_kind.schema;
	if (n->n_args > s->n_args)
		report(c, "E-ARITY", n, "%s passes %d arguments; expected at most %d (%s)",
		       label(n, ln), n->n_args, s->n_args, s->text ? s->text : s->full_name);
	for (int i = n->n_args; i < s->n_args; i++)
		if (!s->args[i].default_value)
			report(c, "E-ARITY", n, "%s is missing argument %d '%s', which has no "
			       "default; expected %s", label(n, ln), i,
			       s->args[i].name ? s->args[i].name : "?", s->args[i].type);
	for (int i = 0; i < n->n_args && i < s->n_args; i++) {
		if (!arg_fits(&si->args[i], &n->args[i]))
			report(c, "E-TYPE", n, "argument %d '%s' of %s is %s; expected %s",
			       i, s->args[i].name ? s->args[i].name : "?", label(n, ln),
			       arg_kind_str(&n->args[i]), s->args[i].type);
	}
}

/* The result kind the schema gives; PR_TYPE_NONE also for "not checked". */
static bool schema_result_kind(const pr_schema *s, pr_type_kind *out)
{
	if (s->n_returns == 0) {
		*out = PR_TYPE_NONE;
		return true;
	}
	if (s->returns_tuple || s->n_returns > 1) {
		*out = PR_TYPE_TUPLE;
		return true;
	}
	arg_type t = parse_arg_type(s->returns[0].type);
	if (t.list || t.optional || (t.base != B_TENSOR && t.base != B_INT))
		return false;
	*out = t.base == B_TENSOR ? PR_TYPE_TENSOR : PR_TYPE_INT;
	return true;
}

static void check_op_result(vctx *c, pr_node *n, const sinfo *si)
{
	char ln[LABEL_MAX];
	const pr_schema *s = n->of_kind.schema;
	pr_type_kind want = si->result;
	if (n->type.kind == PR_TYPE_NONE || !si->result_known)
		return;  /* a statement may drop any result */
	if (want == PR_TYPE_NONE)
		report(c, "E-TYPE", n, "%s has a result, but %s returns nothing; expected a "
		       "statement without a result", label(n, ln), s->full_name);
	else if (n->type.kind != want)
		report(c, "E-TYPE", n, "%s is %s; expected %s, as %s returns", label(n, ln),
		       type_kind_str(&n->type),
		       want == PR_TYPE_TENSOR ? "a tensor" : want == PR_TYPE_INT ? "an int" : "a tuple",
		       s->full_name);
	else if (want == PR_TYPE_TUPLE && n->type.n_elems != s->n_returns)
		report(c, "E-TYPE", n, "%s is a tuple of %d; expected %d elements, as %s returns",
		       label(n, ln), n->type.n_elems, s->n_returns, s->full_name);
}

/* ---- placement ---------------------------------------------------------- */

/* The spec of argument a when it reads a well-formed tensor value. */
static pr_spec *arg_spec(pr_arg *a)
{
	if (a->kind != PR_ARG_VALUE || !a->u.value || a->u.value->type.kind != PR_TYPE_TENSOR)
		return NULL;
	return &a->u.value->type.tensor;
}

/* Can host code read d's memory in place: the host, or a device of a type
 * registered as host addressable (device.h)? */
static bool host_addressable(pr_device d)
{
	if (pr_device_is_host(d))
		return true;
	const pr_device_type *t = pr_device_type_find(d.type);
	return t && t->host_addressable;
}

/* May a tensor of spec s be read where the rule wants the host (want_host:
 * host-addressable memory will do) or the device whose id is want_id, or
 * either when also_host? The host test only where the rule asks it: a
 * placed device read (most of them, after propagate-device) compares
 * devices alone. */
static inline bool read_fits(const pr_spec *s, bool want_host, pr_device_id want_id,
			     bool also_host)
{
	return want_host ? pr_spec_on_host(s) || host_addressable(pr_spec_device(s)) :
			   (s->device_id == want_id || (also_host && pr_spec_on_host(s)));
}

/* Every tensor n reads (list items included) must be on the host (want_host)
 * or on want, whose id is want_id, or on either when also_host (read_fits);
 * `what` says which rule asks. The caller has the id from a table made once
 * (dinfo), so no call interns a device. */
static void check_reads_on(vctx *c, pr_node *n, pr_arg *args, int n_args, bool want_host,
			   pr_device want, pr_device_id want_id, bool also_host, const char *what)
{
	char ln[LABEL_MAX], lv[LABEL_MAX], sp[SPEC_MAX], dw[PR_DEVICE_STR_MAX];
	for (int i = 0; i < n_args; i++) {
		if (args[i].kind == PR_ARG_LIST) {
			check_reads_on(c, n, args[i].u.items, args[i].n_items, want_host,
				       want, want_id, also_host, what);
			continue;
		}
		pr_spec *s = arg_spec(&args[i]);
		if (!s || read_fits(s, want_host, want_id, also_host))
			continue;
		pr_node *v = args[i].u.value;
		report(c, "E-PLACEMENT", v, "%s reads %s (%s, %" PRId64 " bytes); %s, expected "
		       "a tensor on %s%s", label(n, ln), label(v, lv), spec_str(s, sp),
		       pr_spec_nbytes(s), what, want_host ? "the host" : pr_device_str(want, dw),
		       also_host ? " or the host (not placed yet)" : "");
	}
}

/* n's own tensor result(s) must be on the host (want_host) or on want,
 * whose id is want_id. */
static void check_result_on(vctx *c, pr_node *n, bool want_host, pr_device want,
			    pr_device_id want_id, const char *what)
{
	char ln[LABEL_MAX], sp[SPEC_MAX], dw[PR_DEVICE_STR_MAX];
	int count = n->type.kind == PR_TYPE_TENSOR ? 1 :
		    n->type.kind == PR_TYPE_TUPLE ? n->type.n_elems : 0;
	for (int i = 0; i < count; i++) {
		pr_spec *s = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : &n->type.elems[i];
		bool ok = s->device_id == want_id;
		if (ok)
			continue;
		report(c, "E-PLACEMENT", n, "%s%s is %s; %s, expected it on %s", label(n, ln),
		       n->type.kind == PR_TYPE_TUPLE ? (i ? " (a later element)" : " (element 0)") : "",
		       spec_str(s, sp), what, want_host ? "the host" : pr_device_str(want, dw));
	}
}

static void check_op_placement(vctx *c, pr_node *n)
{
	const pr_schema *s = n->of_kind.schema;
	char ln[LABEL_MAX], lv[LABEL_MAX], sp[SPEC_MAX];
	if (s->h2d || s->d2h) {
		const char *rule = s->h2d ? "an h2d copy reads the host" : "a d2h copy reads a device";
		for (int i = 0; i < n->n_args; i++) {
			pr_spec *a = arg_spec(&n->args[i]);
			if (!a || pr_spec_on_host(a) == (bool)s->h2d)
				continue;
			report(c, "E-PLACEMENT", n->args[i].u.value, "%s reads %s (%s, %" PRId64
			       " bytes); %s, expected a %s tensor", label(n, ln),
			       label(n->args[i].u.value, lv), spec_str(a, sp), pr_spec_nbytes(a),
			       rule, s->h2d ? "host" : "device");
		}
		pr_spec *r = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : NULL;   /* pr_node_spec */
		if (r && pr_spec_on_host(r) == (bool)s->h2d)
			report(c, "E-PLACEMENT", n, "%s is %s; %s, expected its result on %s",
			       label(n, ln), spec_str(r, sp),
			       s->h2d ? "an h2d copy produces a device tensor" :
					"a d2h copy produces a host tensor",
			       s->h2d ? "a device" : "the host");
		return;
	}
	if (!s->shape_only)
		check_reads_on(c, n, n->args, n->n_args, true, pr_device_host(),
			       PR_DEVICE_ID_HOST, false, "a host op reads only host memory unless its schema is shape_only");
}

/* An in-place result has the spec of the tensor it writes. */
static void check_inplace(vctx *c, pr_node *n, const sinfo *si)
{
	char ln[LABEL_MAX], lv[LABEL_MAX], s1[SPEC_MAX], s2[SPEC_MAX];
	const pr_schema *s = n->of_kind.schema;
	if (!si->writes)
		return;
	int count = n->type.kind == PR_TYPE_TENSOR ? 1 :
		    n->type.kind == PR_TYPE_TUPLE ? n->type.n_elems : 0;
	for (int r = 0; r < count && r < s->n_returns; r++) {
		int a = pr_node_alias_arg(n, r);
		if (a < 0 || a >= n->n_args || !pr_schema_arg_writes(s, a))
			continue;
		pr_spec *w = arg_spec(&n->args[a]);
		pr_spec *res = n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : &n->type.elems[r];
		if (!w || pr_spec_equal(res, w))
			continue;
		report(c, "E-PLACEMENT", n, "in-place result %s%s is %s but writes %s, which is %s; "
		       "expected the same spec (dtype, shape, strides, device, memory) as the "
		       "tensor it writes", label(n, ln), n->type.kind == PR_TYPE_TUPLE ? " (tuple)" : "",
		       spec_str(res, s1), label(n->args[a].u.value, lv), spec_str(w, s2));
	}
}

/* ---- node kinds --------------------------------------------------------- */

/* s's sinfo, read from s the first time a call names it. The pointer lasts
 * until the next new schema. */
static const sinfo *schema_info(vctx *c, const pr_schema *s)
{
	int k = ptr_map_get(&c->by_schema, s);
	if (k >= 0)
		return &c->sinfos[k];
	PR_GROW(c->sinfos, c->n_sinfos, c->cap_sinfos);
	sinfo *si = &c->sinfos[c->n_sinfos];
	si->args = s->n_args > 0 ? pr_xmalloc((size_t)s->n_args * sizeof *si->args) : NULL;
	si->writes = false;
	for (int i = 0; i < s->n_args; i++) {
		si->args[i] = parse_arg_type(s->args[i].type);
		si->writes |= pr_schema_arg_writes(s, i);
	}
	si->result_known = schema_result_kind(s, &si->result);
	pr_view_geometry_of(s, &si->view);
	ptr_map_put(&c->by_schema, s, c->n_sinfos++);
	return si;
}

static void check_op(vctx *c, pr_node *n)
{
	if (!n->of_kind.schema) {
		report(c, "E-STRUCTURE", n, "an op call without a schema; expected every op "
		       "call to name a declared op");
		return;
	}
	const sinfo *si = schema_info(c, n->of_kind.schema);
	check_op_args(c, n, si);
	check_op_result(c, n, si);
	check_inplace(c, n, si);
	char msg[320];
	if (si->view.strided && !pr_view_within_storage(n, &si->view, msg, sizeof msg))
		report(c, "E-VIEW", n, "%%%s %s", diag_node_name(n), msg);
	if (!c->body)
		check_op_placement(c, n);
}

static void check_getitem(vctx *c, pr_node *n)
{
	char ln[LABEL_MAX], lv[LABEL_MAX], s1[SPEC_MAX], s2[SPEC_MAX];
	if (n->n_args != 1) {
		report(c, "E-ARITY", n, "getitem %s has %d arguments; expected one tuple value",
		       label(n, ln), n->n_args);
		return;
	}
	pr_arg *a = &n->args[0];
	if (a->kind != PR_ARG_VALUE || !a->u.value || a->u.value->type.kind != PR_TYPE_TUPLE) {
		report(c, "E-GETITEM", n, "getitem %s reads %s; expected a tuple", label(n, ln),
		       arg_kind_str(a));
		return;
	}
	pr_node *t = a->u.value;
	if (n->of_kind.index < 0 || n->of_kind.index >= t->type.n_elems) {
		report(c, "E-GETITEM", n, "getitem %s reads element %" PRId64 " of %s, which has "
		       "%d; expected an index from 0 to %d", label(n, ln), (int64_t)n->of_kind.index,
		       label(t, lv), t->type.n_elems, t->type.n_elems - 1);
		return;
	}
	const pr_spec *e = &t->type.elems[n->of_kind.index];
	if (n->type.kind != PR_TYPE_TENSOR) {
		report(c, "E-GETITEM", n, "getitem %s is %s; expected %s, element %" PRId64
		       " of %s", label(n, ln), type_kind_str(&n->type), spec_str(e, s1),
		       (int64_t)n->of_kind.index, label(t, lv));
		return;
	}
	if (!pr_spec_same_layout(&n->type.tensor, e))
		report(c, "E-GETITEM", n, "getitem %s is %s; expected %s, element %" PRId64
		       " of %s", label(n, ln), spec_str(&n->type.tensor, s1), spec_str(e, s2),
		       (int64_t)n->of_kind.index, label(t, lv));
	else if (n->type.tensor.device_id != e->device_id)
		report(c, c->body ? "E-GETITEM" : "E-PLACEMENT", n, "getitem %s is %s but "
		       "element %" PRId64 " of %s is %s; expected a getitem on the device of "
		       "the element it reads",
		       label(n, ln), spec_str(&n->type.tensor, s1), (int64_t)n->of_kind.index, label(t, lv),
		       spec_str(e, s2));
}

static dinfo *find_dinfo(vctx *c, pr_delegate *d)
{
	int k = ptr_map_get(&c->by_delegate, d);
	return k < 0 ? NULL : &c->dinfos[k];
}

/* Is argument a a value of the kind of the body's input of type want? */
static inline bool delegate_arg_kind_fits(const pr_arg *a, const pr_type *want)
{
	return a->kind == PR_ARG_VALUE && a->u.value && a->u.value->type.kind == want->kind;
}

/* Has argument a, of want's kind, the dtype and shape of a tensor input? */
static inline bool delegate_arg_shape_fits(const pr_arg *a, const pr_type *want)
{
	return want->kind != PR_TYPE_TENSOR || same_dtype_shape(&a->u.value->type.tensor, &want->tensor);
}

static void check_delegate_args(vctx *c, pr_node *n, const dinfo *di)
{
	char ln[LABEL_MAX], s1[SPEC_MAX], s2[SPEC_MAX];
	if (n->n_args != di->n_inputs)
		report(c, "E-ARITY", n, "%s passes %d arguments; expected %d, the inputs of the "
		       "body of @%s", label(n, ln), n->n_args, di->n_inputs, di->d->name);
	for (int i = 0; i < n->n_args && i < di->n_inputs; i++) {
		pr_arg *a = &n->args[i];
		const pr_type *want = &di->inputs[i]->type;
		if (!delegate_arg_kind_fits(a, want)) {
			report(c, "E-TYPE", n, "argument %d of %s is %s; expected %s, like input %d "
			       "of @%s", i, label(n, ln), arg_kind_str(a), type_kind_str(want), i,
			       di->d->name);
			continue;
		}
		if (!delegate_arg_shape_fits(a, want))
			report(c, "E-TYPE", n, "argument %d of %s is %s; expected the dtype and "
			       "shape of input %d of @%s, %s", i, label(n, ln),
			       spec_str(&a->u.value->type.tensor, s1), i, di->d->name,
			       spec_str(&want->tensor, s2));
	}
}

/* Does result spec r match returned value v (dtype and shape)? */
static bool returned_fits(const pr_spec *r, pr_arg *ret_arg)
{
	pr_spec *v = arg_spec(ret_arg);
	return v && same_dtype_shape(r, v);
}

static void check_delegate_result(vctx *c, pr_node *n, const dinfo *di)
{
	char ln[LABEL_MAX];
	int rn = di->ret ? di->ret->n_args : 0;
	bool ok;
	switch (n->type.kind) {
	case PR_TYPE_NONE:
		ok = rn == 0;
		break;
	case PR_TYPE_TENSOR:
		ok = rn == 1 && returned_fits(&n->type.tensor, &di->ret->args[0]);
		break;
	case PR_TYPE_TUPLE:
		ok = n->type.n_elems == rn;
		for (int i = 0; ok && i < rn; i++)
			ok = returned_fits(&n->type.elems[i], &di->ret->args[i]);
		break;
	default:
		ok = rn == 1 && value_is(&di->ret->args[0], PR_TYPE_INT);
		break;
	}
	if (ok)
		return;
	const char *want = rn == 0 ? "no result" :
			   rn == 1 ? "one tensor, or a tuple of one, with the dtype and shape it returns" :
				     "a tuple with the dtypes and shapes it returns";
	if (n->type.kind == PR_TYPE_TUPLE)
		report(c, "E-DELEGATE", n, "%s is a tuple of %d, but the body of @%s returns %d "
		       "value%s; expected %s", label(n, ln), n->type.n_elems, di->d->name, rn,
		       rn == 1 ? "" : "s", want);
	else
		report(c, "E-DELEGATE", n, "%s is %s, but the body of @%s returns %d value%s; "
		       "expected %s", label(n, ln), type_kind_str(&n->type), di->d->name, rn,
		       rn == 1 ? "" : "s", want);
}

/* Does n have a tensor result on a device? */
static bool result_on_device(const pr_node *n)
{
	if (n->type.kind == PR_TYPE_TENSOR)
		return !pr_spec_on_host(&n->type.tensor);
	for (int i = 0; n->type.kind == PR_TYPE_TUPLE && i < n->type.n_elems; i++)
		if (!pr_spec_on_host(&n->type.elems[i]))
			return true;
	return false;
}

/* The placement rule a delegate call in a method answers to. */
typedef struct call_rule {
	bool checked;         /* false: none (a delegate body; an unknown
			       * target_device is B5's error, not a placement fact) */
	bool want_host;       /* a host delegate */
	bool not_placed;      /* reads on its device or the host; results not checked */
	const char *reads, *results;   /* the rule, as the reports name it */
} call_rule;

static call_rule delegate_rule(vctx *c, const pr_node *n, const dinfo *di)
{
	if (c->body || !di->device_known)
		return (call_rule){0};
	if (!di->host && !c->has_copies && !result_on_device(n)) {
		/* Not placed yet: a program as the user wrote it, or one that a pass
		 * (device constants) tagged before propagate-device ran. */
		c->assumed_no_copies = true;
		return (call_rule){.checked = true, .not_placed = true,
				   .reads = "a device delegate never reads another device's memory"};
	}
	if (di->host)
		return (call_rule){.checked = true, .want_host = true,
				   .reads = "a host delegate reads only host memory",
				   .results = "a host delegate produces host tensors"};
	return (call_rule){.checked = true,
			   .reads = "a device delegate reads only its own device's memory",
			   .results = "a device delegate's results are on its device"};
}

/* Would check_delegate_args and the rule's read checks find nothing? One
 * walk of n's arguments, with no report, for nearly every call: where it
 * says no, the checks run one after the other and say what is wrong. */
static bool delegate_args_clean(const pr_node *n, const dinfo *di, const call_rule *rule)
{
	if (n->n_args != di->n_inputs)
		return false;
	for (int i = 0; i < n->n_args; i++) {
		const pr_arg *a = &n->args[i];
		const pr_type *want = &di->inputs[i]->type;
		if (!delegate_arg_kind_fits(a, want) || !delegate_arg_shape_fits(a, want))
			return false;
		if (rule->checked && want->kind == PR_TYPE_TENSOR &&
		    !read_fits(&a->u.value->type.tensor, rule->want_host, di->device_id,
			       rule->not_placed))
			return false;
	}
	return true;
}

static void check_delegate_call(vctx *c, pr_node *n)
{
	char ln[LABEL_MAX];
	dinfo *di = n->of_kind.delegate ? find_dinfo(c, n->of_kind.delegate) : NULL;
	if (!di) {
		report(c, "E-DELEGATE", n, "%s names %s; expected a delegate defined in the "
		       "program", label(n, ln), n->of_kind.delegate ?
		       "a delegate the program does not hold" : "no delegate");
		return;
	}
	call_rule rule = delegate_rule(c, n, di);
	bool clean = delegate_args_clean(n, di, &rule);
	if (!clean)
		check_delegate_args(c, n, di);
	check_delegate_result(c, n, di);
	if (rule.checked && !clean)
		check_reads_on(c, n, n->args, n->n_args, rule.want_host, di->device,
			       di->device_id, rule.not_placed, rule.reads);
	if (rule.checked && !rule.not_placed)
		check_result_on(c, n, rule.want_host, di->device, di->device_id, rule.results);
}

/* Input n's arguments (none) and kind (positional in a delegate body, not
 * in a method), when one of them is wrong: out of line, so that
 * check_input keeps no room for the reports' labels. */
static __attribute__((noinline)) void check_input_form(vctx *c, pr_node *n, bool positional)
{
	char ln[LABEL_MAX];
	if (n->n_args)
		report(c, "E-ARITY", n, "input %s has %d arguments; expected none", label(n, ln),
		       n->n_args);
	if (c->body && !positional)
		report(c, "E-INPUT", n, "input %s of delegate @%s has a kind; expected a plain "
		       "positional `input` in a delegate body", label(n, ln), c->g->name);
	else if (!c->body && positional)
		report(c, "E-INPUT", n, "input %s of method @%s is positional; expected user, "
		       "parameter, buffer or constant", label(n, ln), c->g->name);
}

/* Input n is named like the input of slot at. */
static __attribute__((noinline)) void report_named_twice(vctx *c, pr_node *n, const name_slot *at)
{
	char ln[LABEL_MAX], le[LABEL_MAX];
	report(c, "E-INPUT", n, "input %s is named \"%s\", like %s; expected unique "
	       "input names", label(n, ln), n->of_kind.input->name,
	       label(slot_node(&c->inputs, at), le));
}

static void check_input(vctx *c, pr_node *n)
{
	bool positional = n->of_kind.input->kind == PR_INPUT_POSITIONAL;
	if (n->n_args || c->body != positional)
		check_input_form(c, n, positional);
	if (!n->of_kind.input->name || c->body)
		return;
	uint32_t h = c->ahead[c->at & 15];
	name_map_fit(&c->inputs, c->inputs.n + 1);
	name_slot *at = name_map_at(&c->inputs, n->of_kind.input->name, h);
	if (at->at)
		report_named_twice(c, n, at);
	else
		name_map_put(&c->inputs, at, n, n->of_kind.input->name, h);
}

static const char *input_kind_str(pr_input_kind k)
{
	switch (k) {
	case PR_INPUT_POSITIONAL: return "positional";
	case PR_INPUT_USER: return "user";
	case PR_INPUT_PARAMETER: return "parameter";
	case PR_INPUT_BUFFER: return "buffer";
	case PR_INPUT_CONSTANT: return "constant";
	}
	return "unknown";
}

/* Write-back i of ret, whose target names e among the inputs checked so far
 * (NULL: none, or no target); e is not read in a delegate body. */
static void check_writeback(vctx *c, pr_node *ret, int i, pr_node *e)
{
	char lv[LABEL_MAX], lt[LABEL_MAX], s1[SPEC_MAX], s2[SPEC_MAX];
	const pr_writeback *wb = &ret->of_kind.writebacks[i];
	bool buffer = wb->kind == PR_WRITEBACK_BUFFER;
	const char *kw = buffer ? "buffer" : "input";
	if (c->body) {
		report(c, "E-WRITEBACK", ret, "return value %d of delegate @%s is written back "
		       "(-> %s \"%s\"); expected no write-back in a delegate body", i, c->g->name,
		       kw, wb->target ? wb->target : "");
		return;
	}
	pr_input_kind want = buffer ? PR_INPUT_BUFFER : PR_INPUT_USER;
	if (!e || e->of_kind.input->kind != want) {
		char what[LABEL_MAX + 48];
		if (e)
			snprintf(what, sizeof what, "which is %s, a %s input", label(e, lt),
				 input_kind_str(e->of_kind.input->kind));
		else
			snprintf(what, sizeof what, "which names no input");
		report(c, "E-WRITEBACK", ret, "return value %d is written back to %s \"%s\", %s; "
		       "expected the name of a %s input of @%s", i, kw, wb->target ? wb->target : "",
		       what, buffer ? "buffer" : "user", c->g->name);
		return;
	}
	pr_spec *v = arg_spec(&ret->args[i]);
	pr_spec *t = e->type.kind == PR_TYPE_TENSOR ? &e->type.tensor : NULL;   /* pr_node_spec */
	if (v && t && !same_dtype_shape(v, t))
		report(c, "E-WRITEBACK", ret, "return value %d, %s (%s), is written back to %s "
		       "\"%s\" (%s, %s); expected the same dtype and shape", i,
		       label(ret->args[i].u.value, lv), spec_str(v, s1), kw, wb->target,
		       label(e, lt), spec_str(t, s2));
}

/* How far apart, in write-backs, check_writebacks' stages run. */
#define WB_STAGE 4

/* The write-backs whose stages overlap: more than 5 * WB_STAGE. */
#define WB_RING 32

/* Does write-back i of ret look its target up? */
static inline bool wb_looks_up(const pr_node *ret, int i)
{
	const pr_writeback *wb = &ret->of_kind.writebacks[i];
	return wb->kind != PR_WRITEBACK_NONE && wb->target;
}

/* Every write-back of ret, in order. A method's return writes back every
 * buffer it has (a big model: tens of thousands), and each target's lookup
 * is a chain of cache misses: its name, its slot, the input's entry, the
 * input's name and node, its record. So each lookup is asked for in stages,
 * each WB_STAGE write-backs ahead of the next, each when the lines the
 * stage before asked for are in: the check itself then finds them in
 * cache. The stages only fetch lines; the check looks the target up as
 * always. */
static __attribute__((noinline)) void check_writebacks(vctx *c, pr_node *ret)
{
	const name_map *m = &c->inputs;
	if (c->body || !m->cap) {
		for (int i = 0; i < ret->n_args; i++)
			if (ret->of_kind.writebacks[i].kind != PR_WRITEBACK_NONE)
				check_writeback(c, ret, i, NULL);
		return;
	}
	/* by write-back, i % WB_RING: its target's hash, and the entry its slot
	 * names when the hashes agree (1 + index; 0: none) */
	uint32_t hash[WB_RING], entry[WB_RING];
	int n = ret->n_args;
	for (int j = 0; j < n + 5 * WB_STAGE; j++) {
		int i = j;
		if (i < n && wb_looks_up(ret, i)) {
			__builtin_prefetch(ret->of_kind.writebacks[i].target);
			if (ret->args[i].kind == PR_ARG_VALUE && ret->args[i].u.value)
				prefetch_node(ret->args[i].u.value);
		}
		if ((i -= WB_STAGE) >= 0 && i < n && wb_looks_up(ret, i)) {
			uint32_t h = name_hash(ret->of_kind.writebacks[i].target);
			hash[i % WB_RING] = h;
			__builtin_prefetch(&m->slots[h & (m->cap - 1)]);
		}
		if ((i -= WB_STAGE) >= 0 && i < n) {
			uint32_t at = 0;
			if (wb_looks_up(ret, i)) {
				const name_slot *sl = &m->slots[hash[i % WB_RING] & (m->cap - 1)];
				at = sl->hash == hash[i % WB_RING] ? sl->at : 0;
			}
			entry[i % WB_RING] = at;
			if (at)
				__builtin_prefetch(&m->names[at - 1]);
		}
		if ((i -= WB_STAGE) >= 0 && i < n && entry[i % WB_RING]) {
			const named_input *e = &m->names[entry[i % WB_RING] - 1];
			__builtin_prefetch(e->name);
			prefetch_node(e->node);
		}
		if ((i -= WB_STAGE) >= 0 && i < n && entry[i % WB_RING])
			__builtin_prefetch(m->names[entry[i % WB_RING] - 1].node->of_kind.input);
		if ((i -= WB_STAGE) >= 0 && ret->of_kind.writebacks[i].kind != PR_WRITEBACK_NONE) {
			const char *t = ret->of_kind.writebacks[i].target;
			check_writeback(c, ret, i, t ? slot_node(m, name_map_at(m, t, hash[i % WB_RING]))
						     : NULL);
		}
	}
}

static void check_return(vctx *c, pr_node *n)
{
	char ln[LABEL_MAX];
	if (++c->n_returns > 1)
		report(c, "E-RETURN", n, "@%s has a second return; expected exactly one",
		       c->g->name);
	if (n != c->g->last)
		report(c, "E-RETURN", n, "the return of @%s is followed by %s; expected the "
		       "return to be the last node", c->g->name, label(n->next, ln));
	for (int i = 0; i < n->n_args; i++)
		if (n->args[i].kind != PR_ARG_VALUE)
			report(c, "E-RETURN", n, "return value %d of @%s is %s; expected a value",
			       i, c->g->name, arg_kind_str(&n->args[i]));
	if (n->of_kind.writebacks)
		check_writebacks(c, n);
}

/* How far ahead check_many_values asks for a slot's value, and then its use. */
#define ARGS_AHEAD 8

/* check_arg_values of a node that reads many values (a method's return: every
 * output and written-back buffer), each value's node and then its use entry
 * asked for ahead, as fetch_ahead does for the nodes to come: on a big method
 * each is a cache miss, and the checks would wait for each in turn. */
static __attribute__((noinline)) int check_many_values(vctx *c, pr_node *n)
{
	pr_arg *args = n->args;
	int bad = 0;
	for (int i = 0; i < n->n_args; i++) {
		int j = i + ARGS_AHEAD;
		if (j < n->n_args && args[j].kind == PR_ARG_VALUE && args[j].u.value)
			prefetch_node(args[j].u.value);
		j = i + ARGS_AHEAD / 2;
		if (j < n->n_args && args[j].kind == PR_ARG_VALUE && args[j].u.value) {
			const pr_node *v = args[j].u.value;
			if (args[j].use_index >= 0 && args[j].use_index < v->n_uses)
				__builtin_prefetch(&v->uses[args[j].use_index]);
		}
		bad += check_arg_values(c, n, &args[i], 1);
	}
	return bad;
}

static void check_node(vctx *c, pr_node *n)
{
	/* A node that reads an undefined value is reported once, for that: its
	 * other checks would only repeat it. The return is still counted. */
	int bad = n->n_args > 2 * ARGS_AHEAD ? check_many_values(c, n)
					      : check_arg_values(c, n, n->args, n->n_args);
	if (bad && n->kind != PR_NODE_RETURN)
		return;
	switch ((pr_node_kind)n->kind) {
	case PR_NODE_INPUT: check_input(c, n); break;
	case PR_NODE_OP: check_op(c, n); break;
	case PR_NODE_DELEGATE: check_delegate_call(c, n); break;
	case PR_NODE_GETITEM: check_getitem(c, n); break;
	case PR_NODE_RETURN: check_return(c, n); break;
	default:
		report(c, "E-STRUCTURE", n, "a node of unknown kind %d", (int)n->kind);
	}
}

/* ---- graphs ------------------------------------------------------------- */

/* How far (in nodes) the link walk runs ahead of the node checks, and the
 * farthest fetch_ahead reads ahead in c->nodes. */
#define LEAD 24
/* How far ahead of the node checked fetch_ahead asks for a node's arguments
 * and input name, for the values it reads (and hashes its input name), and
 * for their use entries: each stage when the one before has come in. */
#define AHEAD_ARGS 14
#define AHEAD_VALUES 8
#define AHEAD_USES 4

/* Room for n nodes in c->nodes. */
static void nodes_fit(vctx *c, int64_t n)
{
	size_t need = n > 0 ? (size_t)n : 1;
	if (need <= c->nodes_cap)
		return;
	free(c->nodes);
	c->nodes = pr_xmalloc(need * sizeof *c->nodes);
	pr_pages_fill(c->nodes, need * sizeof *c->nodes);   /* one per node */
	c->nodes_cap = need;
}

/* Links, owner and order of n, the count-th node, reached from prev: what
 * the rest relies on. False (reported) when the list cannot be walked
 * safely. Keeps n in c->nodes, for the checks that follow the walk. */
static bool link_node(vctx *c, pr_graph *g, pr_node *n, const pr_node *prev, int64_t count)
{
	if (count > g->n_nodes || n->prev != prev || n->graph != g) {
		report(c, "E-STRUCTURE", n, "the node list of @%s is broken at this node "
		       "(a wrong prev link, owner graph or node count); expected a "
		       "doubly linked list of %" PRId64 " nodes", g->name, g->n_nodes);
		return false;
	}
	if (prev && prev->order >= n->order) {
		report(c, "E-STRUCTURE", n, "graph order does not increase at this node in "
		       "@%s; expected increasing order numbers", g->name);
		return false;
	}
	c->nodes[count - 1] = n;
	c->uses += n->n_uses;
	c->uses_suspect |= n->n_uses < 0;
	const pr_schema *s = pr_node_schema(n);
	if (s && (s->h2d || s->d2h))
		c->has_copies = true;
	return true;
}

/* Does the list end where g says, after as many nodes as it says? */
static bool list_ends(vctx *c, pr_graph *g, const pr_node *last, int64_t count)
{
	if (last == g->last && count == g->n_nodes)
		return true;
	report(c, "E-STRUCTURE", NULL, "@%s lists %" PRId64 " nodes ending at %s but says "
	       "%" PRId64 "; expected the list, its last node and its count to agree",
	       g->name, count, last && last->name ? last->name : "?", g->n_nodes);
	return false;
}

/* The lines of the node that a list laid out in address order (as the
 * loaders' slabs lay it out) has far ahead of n: the link walk then finds its
 * next nodes in cache. A guess: where it is wrong (nodes a pass inserted), a
 * prefetch costs a line fetched for nothing, never a fault. */
static void prefetch_guess(const pr_node *n)
{
	pr_node_prefetch_lines((uintptr_t)n + 2 * LEAD * sizeof *n);
}

/* For a method's input nodes[j]: its name's hash for check_input, and
 * its slot's line fetched meanwhile (on a big method each slot is a cache
 * miss). Inline, in check_nodes' frame: a call per input cost a tenth of
 * what an input's checks cost. */
static inline void hash_ahead(vctx *c, int64_t j)
{
	const pr_node *n = c->nodes[j];
	if (c->body || n->kind != PR_NODE_INPUT || !n->of_kind.input->name)
		return;
	uint32_t h = name_hash(n->of_kind.input->name);
	c->ahead[j & 15] = h;
	if (c->inputs.cap)
		__builtin_prefetch(&c->inputs.slots[h & (c->inputs.cap - 1)]);
}

/* The values that node n reads directly (stage 0), or the use each of its
 * slots names there (stage 1): what check_value reads of them. */
static void prefetch_reads(const pr_node *n, int stage)
{
	for (int i = 0; i < n->n_args; i++) {
		const pr_arg *a = &n->args[i];
		const pr_node *v = a->kind == PR_ARG_VALUE ? a->u.value : NULL;
		if (!v)
			continue;
		if (stage == 0) {
			pr_node_prefetch_lines((uintptr_t)v);
		} else if (a->use_index >= 0 && a->use_index < v->n_uses) {
			__builtin_prefetch(&v->uses[a->use_index]);
		}
	}
}

/* What check_node reads of the nodes ahead, asked for in stages, each when
 * the lines it needs have come in: on a big method nearly every one of them
 * is a cache miss, and the walk would wait for each in turn. */
static void fetch_ahead(vctx *c, int64_t i)
{
	int64_t n = c->g->n_nodes;
	if (i + LEAD < n) {
		const pr_node *far = c->nodes[i + LEAD];   /* linked just now: in cache */
		prefetch_node(far);
		if (far->kind == PR_NODE_INPUT)
			__builtin_prefetch(far->of_kind.input);
	}
	if (i + AHEAD_ARGS < n) {
		const pr_node *ahead = c->nodes[i + AHEAD_ARGS];
		__builtin_prefetch(ahead->args);
		if (ahead->kind == PR_NODE_INPUT && ahead->of_kind.input->name)
			__builtin_prefetch(ahead->of_kind.input->name);
	}
	if (i + AHEAD_VALUES < n) {
		prefetch_reads(c->nodes[i + AHEAD_VALUES], 0);
		hash_ahead(c, i + AHEAD_VALUES);
	}
	if (i + AHEAD_USES < n)
		prefetch_reads(c->nodes[i + AHEAD_USES], 1);
}

/* Every use list of g against the argument slots that read its node, when
 * check_value found a slot away from its use_index or the counts differ:
 * each node's readers are counted in an array that its scratch points into
 * meanwhile (no hashing, and the pass's scratch is given back). */
static void check_all_uses(vctx *c, pr_graph *g)
{
	size_t nn = (size_t)g->n_nodes;
	int64_t *readers = pr_xcalloc(nn ? nn : 1, sizeof *readers);
	void **saved = pr_xmalloc((nn ? nn : 1) * sizeof *saved);
	size_t i = 0;
	pr_graph_for_each(g, n) {
		saved[i] = n->scratch;
		n->scratch = &readers[i++];
	}
	pr_graph_for_each(g, n)
		count_readers(g, n->args, n->n_args);
	i = 0;
	pr_graph_for_each(g, n) {
		check_uses(c, n, readers[i]);
		n->scratch = saved[i++];
	}
	free(readers);
	free(saved);
}

/* Checks c->nodes[i], fetching what the nodes after it will read (the
 * names of the first inputs are hashed by check_nodes). */
static void check_at(vctx *c, int64_t i)
{
	fetch_ahead(c, i);
	c->at = i;
	check_node(c, c->nodes[i]);
}

/* How many nodes walk_graph has checked in one call, which sets up its
 * frame once for them all: a call per node cost as much as a slot's
 * checks. */
#define CHECK_BATCH 8

/* check_at of c->nodes[from] to c->nodes[to - 1]. */
static __attribute__((noinline)) void check_nodes(vctx *c, int64_t from, int64_t to)
{
	if (from == 0)   /* fetch_ahead hashes AHEAD_VALUES nodes ahead */
		for (int64_t j = 0; j < AHEAD_VALUES && j < c->g->n_nodes; j++)
			hash_ahead(c, j);
	for (int64_t i = from; i < to; i++)
		check_at(c, i);
}

/* One walk over g: its links, and each node's checks LEAD to LEAD +
 * CHECK_BATCH nodes behind, CHECK_BATCH at a time, while its lines are
 * still in cache (a big method's nodes are far more
 * than the cache holds, and a walk of its links alone would fetch them all
 * once more). With lead at g's node count or more, the links are all
 * walked first. False when what was reported must be dropped and the graph
 * walked again with the links first: the links broke after some nodes were
 * checked (nothing but the break is reported then), or a check took "no
 * copies" for a fact that the rest of the graph belied. */
static bool walk_graph(vctx *c, pr_graph *g, int64_t lead)
{
	int64_t count = 0, checked = 0;
	const pr_node *prev = NULL;
	for (pr_node *n = g->first; n; prev = n, n = n->next) {
		prefetch_guess(n);
		if (!link_node(c, g, n, prev, ++count))
			return checked == 0;
		if (count - checked - CHECK_BATCH >= lead) {
			check_nodes(c, checked, checked + CHECK_BATCH);
			checked += CHECK_BATCH;
		}
	}
	if (!list_ends(c, g, prev, count))
		return checked == 0;
	check_nodes(c, checked, count);
	if (!c->n_returns)
		report(c, "E-RETURN", NULL, "@%s has no return; expected exactly one, as "
		       "its last node", g->name);
	/* Each slot found itself in its value's list, and there are as many
	 * slots as entries: every entry is one slot's, once. */
	if (c->uses_suspect || c->uses != c->slots)
		check_all_uses(c, g);
	return !(c->assumed_no_copies && c->has_copies);
}

/* The inputs that open g, counted no further than its node count (a
 * broken list is the walk's to report). */
static int64_t leading_inputs(const pr_graph *g)
{
	int64_t k = 0;
	for (const pr_node *n = g->first; n && k < g->n_nodes && n->graph == g && n->kind == PR_NODE_INPUT;
	     n = n->next) {
		const char *far = (const char *)((uintptr_t)n + 4 * LEAD * sizeof *n); /* kind, graph, next */
		__builtin_prefetch(far);
		__builtin_prefetch(far + 40);
		k++;
	}
	return k;
}

/* What one walk of g gathers, from nothing; a method's name map sized for
 * its opening inputs (doubling from 64 placed every name about once more). */
static void graph_reset(vctx *c)
{
	c->n_returns = 0;
	c->has_copies = c->assumed_no_copies = false;
	c->uses = c->slots = 0;
	c->uses_suspect = false;
	name_map_clear(&c->inputs);
	if (!c->body)
		name_map_fit(&c->inputs, (size_t)leading_inputs(c->g));
}

/* The diagnostics of from (flags included) added to to, in their order. */
static void pass_on(pr_diags *to, const pr_diags *from)
{
	for (int i = 0; i < from->n; i++) {
		const pr_diag *x = &from->items[i];
		pr_diags_add(to, x->severity, x->code, x->pass, x->method, x->node, x->bytes,
			     "%s", x->message ? x->message : "");
		if (x->flags)
			pr_diags_flag_last(to, x->flags);
	}
}

/* g's findings are held back until its walk is known to stand (walk_graph):
 * the diagnostics are those of a walk of its links first and of its nodes
 * after, in that order. */
static void check_graph(vctx *c, pr_graph *g, bool body)
{
	c->g = g;
	c->body = body;
	if (g->order_stale)
		pr_graph_renumber(g);
	PR_ASSERT(g->n_nodes < UINT32_MAX);   /* name_slot.at */
	nodes_fit(c, g->n_nodes);
	pr_diags *out = c->diags, held;
	int errors = c->errors;
	pr_diags_init(&held, NULL);
	c->diags = &held;
	graph_reset(c);
	if (!walk_graph(c, g, LEAD)) {
		pr_diags_free(&held);
		pr_diags_init(&held, NULL);
		c->errors = errors;
		graph_reset(c);
		walk_graph(c, g, INT64_MAX);
	}
	c->diags = out;
	pass_on(out, &held);
	pr_diags_free(&held);
	name_map_clear(&c->inputs);
}

/* ---- delegates ---------------------------------------------------------- */

static void build_dinfo(vctx *c, int i)
{
	dinfo *di = &c->dinfos[i];
	pr_delegate *d = c->p->delegates[i];
	di->d = d;
	pr_err *err = pr_delegate_device(d, &di->device);
	di->device_known = !err;
	di->host = !err && pr_device_is_host(di->device);
	di->device_id = di->host ? PR_DEVICE_ID_HOST : pr_device_intern(di->device);
	pr_err_free(err);
	if (!find_dinfo(c, d))
		ptr_map_put(&c->by_delegate, d, i);
	if (!d->body)
		return;
	/* Bounded by the node count: a broken list is check_links' to report. */
	int64_t n_in = 0, seen = 0;
	for (pr_node *n = d->body->first; n && seen++ < d->body->n_nodes; n = n->next) {
		n_in += n->kind == PR_NODE_INPUT;
		if (n->kind == PR_NODE_RETURN && !di->ret)
			di->ret = n;
	}
	di->inputs = n_in ? pr_xcalloc((size_t)n_in, sizeof *di->inputs) : NULL;
	for (pr_node *n = d->body->first; n && di->n_inputs < n_in; n = n->next)
		if (n->kind == PR_NODE_INPUT)
			di->inputs[di->n_inputs++] = n;
}

/* One call cycle among the delegates, if any (pr_delegates_callees_first's
 * walk has no recursion, so a deep chain of calls is fine). */
static void check_recursion(vctx *c)
{
	pr_delegate **order = pr_xmalloc(sizeof *order * (size_t)(c->p->n_delegates + 1));
	pr_node **cycle;
	int n = pr_delegates_callees_first(c->p, order, &cycle);
	free(order);
	if (!n)
		return;
	char path[SPEC_MAX];
	size_t len = 0;
	path[0] = 0;
	for (int i = 0; i < n && i < 8; i++)
		append(path, &len, "%s@%s calls @%s at line %u", i ? ", " : "",
		       cycle[i]->graph->name, cycle[i]->of_kind.delegate->name,
		       (unsigned)cycle[i]->line);
	if (n > 8)
		append(path, &len, ", ... (%d calls in all)", n);
	c->g = cycle[0]->graph;
	c->body = true;
	if (n == 1)
		report(c, "E-RECURSION", cycle[0], "delegate @%s calls itself at line %u; expected "
		       "no recursion among delegates (a program has no control flow, so the calls "
		       "would never end)", c->g->name, (unsigned)cycle[0]->line);
	else
		report(c, "E-RECURSION", cycle[0], "delegate @%s calls itself through %d other "
		       "delegate%s: %s; expected no recursion among delegates (a program has no "
		       "control flow, so the calls would never end)", c->g->name, n - 1,
		       n == 2 ? "" : "s", path);
	free(cycle);
}

int pr_verify(pr_program *p, pr_diags *diags, const char *pass_name)
{
	vctx c = {.p = p, .diags = diags, .pass = pass_name ? pass_name : "verifier"};
	c.dinfos = p->n_delegates ? pr_xcalloc((size_t)p->n_delegates, sizeof *c.dinfos) : NULL;
	for (int i = 0; i < p->n_delegates; i++)
		build_dinfo(&c, i);
	for (int i = 0; i < p->n_delegates; i++) {
		pr_delegate *d = p->delegates[i];
		if (d->body) {
			check_graph(&c, d->body, true);
			continue;
		}
		c.g = NULL;
		report(&c, "E-STRUCTURE", NULL, "delegate @%s has no body; expected a graph",
		       d->name);
	}
	check_recursion(&c);
	for (int i = 0; i < p->n_methods; i++)
		check_graph(&c, p->methods[i], false);
	ptr_map_free(&c.by_delegate);
	ptr_map_free(&c.by_schema);
	for (int i = 0; i < p->n_delegates; i++)
		free(c.dinfos[i].inputs);
	for (int i = 0; i < c.n_sinfos; i++)
		free(c.sinfos[i].args);
	free(c.sinfos);
	free(c.dinfos);
	free(c.sorted);
	free(c.nodes);
	return c.errors;
}
