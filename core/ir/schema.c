/* schema.c: op schemas in PyTorch's function-schema syntax.
 *
 *   ns::name[.overload](ARG, ..., *, ARG, ...) -> RETURNS [{trait, ...}]
 *   ARG     = TYPE NAME ['=' DEFAULT]
 *   TYPE    = BASE [ALIAS] { '[' [INT] ']' | '?' }
 *   ALIAS   = '(' SETS ['!'] ['->' SETS] ')'      SETS = SET {'|' SET}, SET = IDENT | '*'
 *   RETURNS = TYPE [NAME] | '(' [TYPE [NAME] {',' TYPE [NAME]}] ')'
 *
 * A recursive-descent parser over one string. It fills pr_schema and, as it
 * goes, writes the canonical text (single spaces, ", " between items, " -> "
 * in annotations) so that printing a parsed schema and parsing it again gives
 * the same text. The alias annotation is reduced to what the core needs (the
 * first set's name and the write flag) but kept whole in the text. Unknown
 * traits are kept as written; shape_only, h2d and d2h also set their flags.
 * Errors say what was expected and where (a 0-based column). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/program.h"
#include "passrun/strbuf.h"

/* The base types we accept: PyTorch's schema types. A typo ("Tesnor") is an
 * error here rather than a surprise in a pass. */
static const char *const known_types[] = {
	"Tensor", "int", "SymInt", "float", "SymFloat", "bool", "SymBool", "str",
	"Scalar", "ScalarType", "Layout", "Device", "MemoryFormat", "Generator",
	"Dimname", "Storage", "Stream", "QScheme", "Any", "complex", "number",
	"DeviceIndex", "t", NULL,
};

typedef struct sp {
	const char *s;
	size_t n, pos;
	pr_err *err;
	size_t err_col;
	pr_strbuf text;      /* the canonical text, built while parsing */
} sp;

static bool sp_ident_start(int c) { return isalpha(c) || c == '_'; }
static bool sp_ident_char(int c) { return isalnum(c) || c == '_'; }

static int sp_peek(const sp *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }

static void sp_skip(sp *p)
{
	while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
		p->pos++;
}

/* Describes what is at pos, for "found X". */
static void sp_found(const sp *p, char *buf, size_t cap)
{
	if (p->pos >= p->n) {
		snprintf(buf, cap, "end of schema");
		return;
	}
	size_t e = p->pos;
	while (e < p->n && e - p->pos < 24 && sp_ident_char((unsigned char)p->s[e]))
		e++;
	if (e == p->pos)
		e++;
	snprintf(buf, cap, "'%.*s'", (int)(e - p->pos), p->s + p->pos);
}

static bool sp_fail(sp *p, const char *expected)
{
	if (p->err)
		return false;
	char found[64];
	sp_found(p, found, sizeof found);
	p->err = pr_err_new("expected %s, found %s", expected, found);
	p->err_col = p->pos;
	return false;
}

static bool sp_accept(sp *p, const char *tok)
{
	sp_skip(p);
	size_t k = strlen(tok);
	if (p->n - p->pos >= k && memcmp(p->s + p->pos, tok, k) == 0) {
		p->pos += k;
		return true;
	}
	return false;
}

static bool sp_expect(sp *p, const char *tok)
{
	if (sp_accept(p, tok))
		return true;
	char what[32];
	snprintf(what, sizeof what, "'%s'", tok);
	return sp_fail(p, what);
}

/* An identifier; returns its length (0 and an error when there is none). */
static size_t sp_ident(sp *p, const char *what, const char **start)
{
	sp_skip(p);
	*start = p->s + p->pos;
	if (sp_peek(p) < 0 || !sp_ident_start(sp_peek(p))) {
		sp_fail(p, what);
		return 0;
	}
	size_t b = p->pos;
	while (p->pos < p->n && sp_ident_char((unsigned char)p->s[p->pos]))
		p->pos++;
	return p->pos - b;
}

/* ns::name[.overload] */
static bool sp_name(sp *p, pr_schema *s)
{
	const char *ns, *nm, *ov = "";
	size_t nns = sp_ident(p, "an op name (namespace::name)", &ns);
	if (!nns)
		return false;
	if (p->n - p->pos < 2 || memcmp(p->s + p->pos, "::", 2) != 0)
		return sp_fail(p, "'::' after the namespace");
	p->pos += 2;
	if (sp_peek(p) < 0 || !sp_ident_start(sp_peek(p)))
		return sp_fail(p, "an op name after '::'");
	size_t nnm = sp_ident(p, "an op name after '::'", &nm);
	size_t nov = 0;
	if (sp_peek(p) == '.') {
		p->pos++;
		ov = p->s + p->pos;
		while (p->pos < p->n && sp_ident_char((unsigned char)p->s[p->pos]))
			p->pos++;
		nov = (size_t)(p->s + p->pos - ov);
		if (!nov)
			return sp_fail(p, "an overload name after '.'");
	}
	s->name = pr_xasprintf("%.*s::%.*s", (int)nns, ns, (int)nnm, nm);
	s->overload = pr_xstrndup(ov, nov);
	s->full_name = nov ? pr_xasprintf("%s.%s", s->name, s->overload) : pr_xstrdup(s->name);
	pr_strbuf_puts(&p->text, s->full_name);
	return true;
}

/* One alias set name, or '*'. Appends it to out. */
static bool sp_alias_set(sp *p, pr_strbuf *out)
{
	sp_skip(p);
	if (sp_peek(p) == '*') {
		p->pos++;
		pr_strbuf_putc(out, '*');
		return true;
	}
	const char *id;
	size_t k = sp_ident(p, "an alias set name (like 'a') or '*'", &id);
	if (!k)
		return false;
	pr_strbuf_add(out, id, k);
	return true;
}

static bool sp_alias_sets(sp *p, pr_strbuf *out)
{
	if (!sp_alias_set(p, out))
		return false;
	while (sp_accept(p, "|")) {
		pr_strbuf_putc(out, '|');
		if (!sp_alias_set(p, out))
			return false;
	}
	return true;
}

/* '(' SETS ['!'] ['->' SETS] ')' ; the '(' is already consumed. */
static bool sp_alias(sp *p, pr_alias *a, pr_strbuf *out)
{
	size_t first = out->len + 1;
	pr_strbuf_putc(out, '(');
	if (!sp_alias_sets(p, out))
		return false;
	size_t set_len = strcspn(out->data + first, "|");
	if (set_len >= sizeof a->set) {
		p->pos = p->pos > set_len ? p->pos - set_len : 0;
		return sp_fail(p, "an alias set name of at most 15 characters");
	}
	memcpy(a->set, out->data + first, set_len);
	a->set[set_len] = 0;
	if (sp_accept(p, "!")) {
		a->write = true;
		pr_strbuf_putc(out, '!');
	}
	if (sp_accept(p, "->")) {
		pr_strbuf_puts(out, " -> ");
		if (!sp_alias_sets(p, out))
			return false;
	}
	if (!sp_expect(p, ")"))
		return false;
	pr_strbuf_putc(out, ')');
	return true;
}

static bool sp_known_type(const char *id, size_t k)
{
	for (int i = 0; known_types[i]; i++)
		if (strlen(known_types[i]) == k && memcmp(known_types[i], id, k) == 0)
			return true;
	return false;
}

/* TYPE: fills a->type (without the annotation), a->alias, a->is_tensor, and
 * appends the canonical type (with the annotation) to out. */
static bool sp_type(sp *p, pr_schema_arg *a, pr_strbuf *out)
{
	const char *id;
	size_t save = p->pos;
	size_t k = sp_ident(p, "a type (Tensor, int, float, bool, ...)", &id);
	if (!k)
		return false;
	if (!sp_known_type(id, k)) {
		p->pos = save;
		sp_skip(p);
		return sp_fail(p, "a type (Tensor, Tensor?, Tensor[], int, int[], SymInt, float, bool, "
				  "str, Scalar, ScalarType, Layout, Device, MemoryFormat, Generator, ...)");
	}
	pr_strbuf plain;
	pr_strbuf_init(&plain);
	pr_strbuf_add(&plain, id, k);
	pr_strbuf_add(out, id, k);
	bool ok = true;
	if (sp_peek(p) == '(') {
		p->pos++;
		ok = sp_alias(p, &a->alias, out);
	}
	while (ok) {
		if (sp_peek(p) == '?') {
			p->pos++;
			pr_strbuf_putc(&plain, '?');
			pr_strbuf_putc(out, '?');
		} else if (sp_peek(p) == '[') {
			p->pos++;
			size_t b = p->pos;
			while (p->pos < p->n && isdigit((unsigned char)p->s[p->pos]))
				p->pos++;
			if (sp_peek(p) != ']') {
				ok = sp_fail(p, "a list size or ']'");
				break;
			}
			pr_strbuf_printf(&plain, "[%.*s]", (int)(p->pos - b), p->s + b);
			pr_strbuf_printf(out, "[%.*s]", (int)(p->pos - b), p->s + b);
			p->pos++;
		} else {
			break;
		}
	}
	a->type = pr_strbuf_take(&plain);
	pr_strbuf_free(&plain);
	a->is_tensor = strcmp(a->type, "Tensor") == 0 || strcmp(a->type, "Tensor?") == 0;
	return ok;
}

/* The text after '=' up to the next ',' or ')' outside brackets and quotes. */
static bool sp_default(sp *p, pr_schema_arg *a)
{
	sp_skip(p);
	size_t b = p->pos;
	int depth = 0;
	char quote = 0;
	for (; p->pos < p->n; p->pos++) {
		char c = p->s[p->pos];
		/* A schema is one line of the text format, where '#' starts a comment. */
		if ((unsigned char)c < 0x20 || (c == '#' && !quote))
			return sp_fail(p, "a default value without control characters or an "
				       "unquoted '#' (a schema is one line of text)");
		if (quote) {
			if (c == '\\' && p->pos + 1 < p->n)
				p->pos++;
			else if (c == quote)
				quote = 0;
		} else if (c == '"' || c == '\'') {
			quote = c;
		} else if (c == '[' || c == '(') {
			depth++;
		} else if ((c == ']' || c == ')') && depth > 0) {
			depth--;
		} else if ((c == ',' || c == ')') && depth == 0) {
			break;
		}
	}
	if (quote)
		return sp_fail(p, "a closing quote in the default value");
	size_t e = p->pos;
	while (e > b && (p->s[e - 1] == ' ' || p->s[e - 1] == '\t'))
		e--;
	if (e == b) {
		p->pos = b;
		return sp_fail(p, "a default value after '='");
	}
	a->default_value = pr_xstrndup(p->s + b, e - b);
	return true;
}

static void sp_grow(pr_schema_arg **v, int n, int *cap)
{
	PR_GROW(*v, n, *cap);
}

/* ARG: TYPE NAME ['=' DEFAULT] */
static bool sp_arg(sp *p, pr_schema_arg *a)
{
	if (!sp_type(p, a, &p->text))
		return false;
	const char *id;
	size_t k = sp_ident(p, "an argument name", &id);
	if (!k)
		return false;
	a->name = pr_xstrndup(id, k);
	pr_strbuf_putc(&p->text, ' ');
	pr_strbuf_add(&p->text, id, k);
	if (sp_accept(p, "=")) {
		if (!sp_default(p, a))
			return false;
		pr_strbuf_putc(&p->text, '=');
		pr_strbuf_puts(&p->text, a->default_value);
	}
	return true;
}

static bool sp_args(sp *p, pr_schema *s)
{
	int cap = 0;
	bool kwarg = false;
	if (!sp_expect(p, "("))
		return false;
	pr_strbuf_putc(&p->text, '(');
	if (sp_accept(p, ")")) {
		pr_strbuf_putc(&p->text, ')');
		return true;
	}
	for (;;) {
		if (s->n_args || kwarg)
			pr_strbuf_puts(&p->text, ", ");
		sp_skip(p);
		if (sp_peek(p) == '*') {
			if (kwarg)
				return sp_fail(p, "an argument (a second '*' is not allowed)");
			p->pos++;
			kwarg = true;
			pr_strbuf_putc(&p->text, '*');
		} else {
			sp_grow(&s->args, s->n_args, &cap);
			pr_schema_arg *a = &s->args[s->n_args++];
			memset(a, 0, sizeof *a);
			a->kwarg_only = kwarg;
			if (!sp_arg(p, a))
				return false;
		}
		if (sp_accept(p, ")"))
			break;
		if (!sp_accept(p, ","))
			return sp_fail(p, "',' or ')' after an argument");
	}
	pr_strbuf_putc(&p->text, ')');
	return true;
}

/* One return: TYPE [NAME]. */
static bool sp_return(sp *p, pr_schema_arg *r)
{
	if (!sp_type(p, r, &p->text))
		return false;
	sp_skip(p);
	if (sp_peek(p) >= 0 && sp_ident_start(sp_peek(p))) {
		const char *id;
		size_t k = sp_ident(p, "a return name", &id);
		r->name = pr_xstrndup(id, k);
		pr_strbuf_putc(&p->text, ' ');
		pr_strbuf_add(&p->text, id, k);
	}
	return true;
}

static bool sp_returns(sp *p, pr_schema *s)
{
	int cap = 0;
	if (!sp_expect(p, "->"))
		return false;
	pr_strbuf_puts(&p->text, " -> ");
	if (!sp_accept(p, "(")) {
		sp_grow(&s->returns, 0, &cap);
		memset(&s->returns[0], 0, sizeof s->returns[0]);
		s->n_returns = 1;
		return sp_return(p, &s->returns[0]);
	}
	s->returns_tuple = true;
	pr_strbuf_putc(&p->text, '(');
	if (!sp_accept(p, ")")) {
		for (;;) {
			if (s->n_returns)
				pr_strbuf_puts(&p->text, ", ");
			sp_grow(&s->returns, s->n_returns, &cap);
			pr_schema_arg *r = &s->returns[s->n_returns++];
			memset(r, 0, sizeof *r);
			if (!sp_return(p, r))
				return false;
			if (sp_accept(p, ")"))
				break;
			if (!sp_accept(p, ","))
				return sp_fail(p, "',' or ')' in the returns");
		}
	}
	pr_strbuf_putc(&p->text, ')');
	return true;
}

static void sp_add_trait(pr_schema *s, const char *t, size_t k)
{
	s->traits = pr_xrealloc(s->traits, (size_t)(s->n_traits + 1) * sizeof *s->traits);
	s->traits[s->n_traits++] = pr_xstrndup(t, k);
	if (k == 10 && memcmp(t, "shape_only", k) == 0)
		s->shape_only = true;
	else if (k == 3 && memcmp(t, "h2d", k) == 0)
		s->h2d = true;
	else if (k == 3 && memcmp(t, "d2h", k) == 0)
		s->d2h = true;
}

/* ['{' TRAIT {',' TRAIT} '}'] then the end. */
static bool sp_traits(sp *p, pr_schema *s)
{
	sp_skip(p);
	if (p->pos == p->n)
		return true;
	if (!sp_accept(p, "{"))
		return sp_fail(p, "'{' (traits) or the end of the schema");
	pr_strbuf_puts(&p->text, " {");
	do {
		const char *id;
		size_t k = sp_ident(p, "a trait name (shape_only, h2d, d2h, ...)", &id);
		if (!k)
			return false;
		if (s->n_traits)
			pr_strbuf_puts(&p->text, ", ");
		pr_strbuf_add(&p->text, id, k);
		sp_add_trait(s, id, k);
	} while (sp_accept(p, ","));
	if (!sp_expect(p, "}"))
		return false;
	pr_strbuf_putc(&p->text, '}');
	sp_skip(p);
	if (p->pos != p->n)
		return sp_fail(p, "the end of the schema after '}'");
	return true;
}

pr_err *pr_schema_parse(const char *text, size_t n, pr_schema **out, size_t *err_col)
{
	sp p = { .s = text, .n = n };
	pr_strbuf_init(&p.text);
	pr_schema *s = pr_xcalloc(1, sizeof *s);
	bool ok = sp_name(&p, s) && sp_args(&p, s) && sp_returns(&p, s) && sp_traits(&p, s);
	*out = NULL;
	if (!ok) {
		if (!p.err)
			sp_fail(&p, "a schema");
		if (err_col)
			*err_col = p.err_col;
		pr_strbuf_free(&p.text);
		pr_schema_free(s);
		return p.err;
	}
	s->text = pr_strbuf_take(&p.text);
	pr_strbuf_free(&p.text);
	*out = s;
	return NULL;
}

static void schema_args_free(pr_schema_arg *v, int n)
{
	for (int i = 0; i < n; i++) {
		free(v[i].type);
		free(v[i].name);
		free(v[i].default_value);
	}
	free(v);
}

void pr_schema_free(pr_schema *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->overload);
	free(s->full_name);
	schema_args_free(s->args, s->n_args);
	schema_args_free(s->returns, s->n_returns);
	for (int i = 0; i < s->n_traits; i++)
		free(s->traits[i]);
	free(s->traits);
	free(s->text);
	free(s);
}

bool pr_schema_arg_writes(const pr_schema *s, int i)
{
	return s && i >= 0 && i < s->n_args && s->args[i].alias.write;
}

int pr_schema_elem_return(const pr_schema *s, int elem)
{
	if (!s || elem < 0)
		return -1;
	if (s->n_returns == 1 && !s->returns_tuple && strstr(s->returns[0].type, "[]"))
		return 0;   /* Tensor(a)[]: every element comes from the one list return */
	return elem < s->n_returns ? elem : -1;
}

int pr_schema_return_alias(const pr_schema *s, int r)
{
	if (!s || r < 0 || r >= s->n_returns || !s->returns[r].alias.set[0])
		return -1;
	const char *set = s->returns[r].alias.set;
	if (strcmp(set, "*") == 0)
		return -1;
	for (int i = 0; i < s->n_args; i++)
		if (strcmp(s->args[i].alias.set, set) == 0)
			return i;
	return -1;
}
