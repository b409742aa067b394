/* pipeline.c: pipelines as data (docs/pipeline-format.md).
 *
 * A pipeline is read in two steps. Reading (YAML with libyaml's document
 * loader, an inline --passes string, --set overrides) checks only the shape:
 * a mapping with name, description, options, passes and plugins; each pass a
 * plain name or a one-key map NAME: {options}; each option a scalar or a map
 * keyed by method. Every item keeps where it was written (libyaml's marks are
 * 0-based; we keep them 1-based), so that validation, which needs the
 * plugins loaded first (a pipeline can name its own), can point every error
 * at FILE:LINE:COL with the valid choices and the nearest one by edit
 * distance. Validation reports every error it finds, not only the first, and
 * normalizes values (a bool is "true" or "false") so that passes read them
 * with one strtoll or strcmp. */
#include "passrun/manager.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "passrun/fileio.h"
#include "passrun/strbuf.h"
#include "locate.h"
#include "pm_internal.h"
#include "pm_run.h"

/* ---- values -------------------------------------------------------------- */

const char *pr_option_type_name(pr_option_type t)
{
	switch (t) {
	case PR_OPT_BOOL: return "bool";
	case PR_OPT_INT: return "int";
	case PR_OPT_FLOAT: return "float";
	case PR_OPT_STRING: return "string";
	}
	return "?";
}

static bool ieq(const char *a, const char *b)
{
	return !strcasecmp(a, b);
}

const char *pm_value_check(pr_option_type t, const char *text, char **norm)
{
	char *end;
	const char *problem = NULL;
	char *canon = NULL;
	switch (t) {
	case PR_OPT_BOOL:
		if (ieq(text, "true") || ieq(text, "false"))
			canon = pr_xstrdup(ieq(text, "true") ? "true" : "false");
		else
			problem = "expected true or false";
		break;
	case PR_OPT_INT: {
		errno = 0;
		long long v = strtoll(text, &end, 10);
		if (!*text || *end || errno)
			problem = "expected an integer";
		else
			canon = pr_xasprintf("%lld", v);
		break;
	}
	case PR_OPT_FLOAT: {
		errno = 0;
		double v = strtod(text, &end);
		if (!*text || *end || errno || !isfinite(v))
			problem = "expected a number";
		else
			canon = pr_xstrdup(text);
		break;
	}
	case PR_OPT_STRING:
		canon = pr_xstrdup(text);
		break;
	}
	if (norm)
		*norm = canon;
	else
		free(canon);
	return problem;
}

const char *pm_optval_for(const pm_optval *v, const char *method)
{
	if (!v->is_map)
		return v->text;
	for (int i = 0; method && i < v->n_map; i++)
		if (!strcmp(v->map[i].method, method))
			return v->map[i].text;
	return NULL;
}

const pm_optval *pm_optlist_find(const pm_optlist *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->items[i].name, name))
			return &l->items[i];
	return NULL;
}

/* ---- suggestions --------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	size_t *row = pr_xmalloc((nb + 1) * sizeof *row);
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	size_t d = row[nb];
	free(row);
	return d;
}

const char *pr_nearest(const char *word, const char *const *choices, int n)
{
	const char *best = NULL;
	size_t best_d = 0;
	for (int i = 0; i < n; i++) {
		size_t d = edit_distance(word, choices[i]);
		if (!best || d < best_d) {
			best = choices[i];
			best_d = d;
		}
	}
	return best;
}

/* " did you mean 'X'? (valid WHAT: a, b, c)" */
static void suggest(pr_strbuf *b, const char *word, const char *const *choices, int n,
		    const char *what)
{
	const char *near = pr_nearest(word, choices, n);
	if (near)
		pr_strbuf_printf(b, "; did you mean '%s'?", near);
	pr_strbuf_printf(b, " (valid %s: ", what);
	for (int i = 0; i < n; i++)
		pr_strbuf_printf(b, "%s%s", i ? ", " : "", choices[i]);
	pr_strbuf_puts(b, n ? ")" : "none)");
}

/* ---- error collection ---------------------------------------------------- */

typedef struct errs {
	pr_strbuf buf;
	int n;
} errs;

static pr_strbuf *err_begin(errs *e, const pm_loc *loc)
{
	if (e->n++)
		pr_strbuf_putc(&e->buf, '\n');
	pr_strbuf_printf(&e->buf, "%s:%d:%d: ", loc->file, loc->line, loc->col);
	return &e->buf;
}

static void err_addv(errs *e, const pm_loc *loc, const char *fmt, va_list ap)
{
	pr_strbuf *b = err_begin(e, loc);
	pr_err *tmp = pr_err_newv(fmt, ap);
	pr_strbuf_puts(b, pr_err_message(tmp));
	pr_err_free(tmp);
}

static void err_add(errs *e, const pm_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void err_add(errs *e, const pm_loc *loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_addv(e, loc, fmt, ap);
	va_end(ap);
}

static pr_err *errs_take(errs *e)
{
	if (!e->n) {
		pr_strbuf_free(&e->buf);
		return NULL;
	}
	pr_err *err = pr_err_new("%s", e->buf.data);
	pr_strbuf_free(&e->buf);
	return err;
}

/* ---- building ------------------------------------------------------------ */

static pm_loc loc_make(const char *file, int line, int col)
{
	return (pm_loc){pr_xstrdup(file), line, col};
}

static void optval_free(pm_optval *v)
{
	free(v->name);
	free(v->loc.file);
	free(v->vloc.file);
	free(v->text);
	for (int i = 0; i < v->n_map; i++) {
		free(v->map[i].method);
		free(v->map[i].text);
		free(v->map[i].loc.file);
		free(v->map[i].key_loc.file);
	}
	free(v->map);
	memset(v, 0, sizeof *v);
}

static void optlist_free(pm_optlist *l)
{
	for (int i = 0; i < l->n; i++)
		optval_free(&l->items[i]);
	free(l->items);
	memset(l, 0, sizeof *l);
}

/* Adds v (taking its contents); a later value of the same name replaces the
 * earlier one, as --set does. */
static void optlist_put(pm_optlist *l, pm_optval *v)
{
	for (int i = 0; i < l->n; i++) {
		if (!strcmp(l->items[i].name, v->name)) {
			optval_free(&l->items[i]);
			l->items[i] = *v;
			return;
		}
	}
	PR_GROW(l->items, l->n, l->cap);
	l->items[l->n++] = *v;
}

static void optlist_copy(pm_optlist *dst, const pm_optval *v)
{
	pm_optval c = *v;
	c.name = pr_xstrdup(v->name);
	c.loc.file = pr_xstrdup(v->loc.file);
	c.vloc.file = pr_xstrdup(v->vloc.file);
	c.text = v->text ? pr_xstrdup(v->text) : NULL;
	c.map = v->n_map ? pr_xcalloc((size_t)v->n_map, sizeof *c.map) : NULL;
	for (int i = 0; i < v->n_map; i++) {
		c.map[i] = v->map[i];
		c.map[i].method = pr_xstrdup(v->map[i].method);
		c.map[i].text = pr_xstrdup(v->map[i].text);
		c.map[i].loc.file = pr_xstrdup(v->map[i].loc.file);
		c.map[i].key_loc.file = pr_xstrdup(v->map[i].key_loc.file);
	}
	optlist_put(dst, &c);
}

static pm_pass_entry *add_pass(pr_pipeline *pl, const char *name, size_t n, pm_loc loc)
{
	PR_GROW(pl->passes, pl->n_passes, pl->cap_passes);
	pm_pass_entry *e = &pl->passes[pl->n_passes++];
	memset(e, 0, sizeof *e);
	e->name = pr_xstrndup(name, n);
	e->loc = loc;
	return e;
}

static void add_plugin_ref(pr_pipeline *pl, char *path, pm_loc loc)
{
	PR_GROW(pl->plugins, pl->n_plugins, pl->cap_plugins);
	pl->plugins[pl->n_plugins++] = (pm_plugin_ref){path, loc};
}

static pr_pipeline *pipeline_new(const char *file)
{
	pr_pipeline *pl = pr_xcalloc(1, sizeof *pl);
	pl->file = pr_xstrdup(file);
	return pl;
}

pr_pipeline *pr_pipeline_new_empty(void)
{
	pr_pipeline *pl = pipeline_new("(no pipeline)");
	pl->name = pr_xstrdup("(none)");
	return pl;
}

void pr_pipeline_free(pr_pipeline *pl)
{
	if (!pl)
		return;
	for (int i = 0; i < pl->n_passes; i++) {
		free(pl->passes[i].name);
		free(pl->passes[i].loc.file);
		optlist_free(&pl->passes[i].opts);
	}
	free(pl->passes);
	for (int i = 0; i < pl->n_plugins; i++) {
		free(pl->plugins[i].path);
		free(pl->plugins[i].loc.file);
	}
	free(pl->plugins);
	optlist_free(&pl->opts);
	free(pl->file);
	free(pl->name);
	free(pl->description);
	free(pl);
}

const char *pr_pipeline_name(const pr_pipeline *pl)
{
	return pl->name;
}

const char *pr_pipeline_file(const pr_pipeline *pl)
{
	return pl->file;
}

int pr_pipeline_n_passes(const pr_pipeline *pl)
{
	return pl->n_passes;
}

const char *pr_pipeline_pass_name(const pr_pipeline *pl, int i)
{
	return pl->passes[i].name;
}

/* ---- YAML ---------------------------------------------------------------- */

typedef struct yctx {
	const char *file;
	yaml_document_t *doc;
	int col_offset;      /* --set values: where VALUE starts in NAME=VALUE */
	errs *e;
} yctx;

static pm_loc yloc(const yctx *c, const yaml_node_t *n)
{
	return loc_make(c->file, (int)n->start_mark.line + 1,
			(int)n->start_mark.column + 1 + c->col_offset);
}

static void yerr(const yctx *c, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void yerr(const yctx *c, const yaml_node_t *n, const char *fmt, ...)
{
	pm_loc l = yloc(c, n);
	va_list ap;
	va_start(ap, fmt);
	err_addv(c->e, &l, fmt, ap);
	va_end(ap);
	free(l.file);
}

static yaml_node_t *ynode(const yctx *c, int index)
{
	return yaml_document_get_node(c->doc, index);
}

static const char *yscalar(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static bool yquoted(const yaml_node_t *n)
{
	return n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
}

/* A plain empty scalar, ~ or null: YAML's ways of writing nothing. */
static bool ynull(const yaml_node_t *n)
{
	const char *s = yscalar(n);
	return s && !yquoted(n) && (!*s || !strcmp(s, "~") || !strcmp(s, "null"));
}

static const char *ynode_kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE: return "a scalar";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_MAPPING_NODE: return "a map";
	default: return "nothing";
	}
}

/* Keys of a mapping must be scalars and must not repeat. */
static bool check_key(const yctx *c, const yaml_node_t *map, const yaml_node_pair_t *pair)
{
	const yaml_node_t *k = ynode(c, pair->key);
	if (!yscalar(k)) {
		yerr(c, k, "expected a name as the key, found %s", ynode_kind(k));
		return false;
	}
	for (const yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
		const char *prev = yscalar(ynode(c, p->key));
		if (prev && !strcmp(prev, yscalar(k))) {
			pm_loc first = yloc(c, ynode(c, p->key));
			yerr(c, k, "'%s' appears twice in this map (first at line %d)", prev,
			     first.line);
			free(first.file);
			return false;
		}
	}
	return true;
}

/* Pass, option and method names are words: they print back as plain YAML
 * scalars and as --passes text, and fit YAML's 1024-character limit on a
 * key. The reason a name is not one, or NULL. */
static const char *bad_name(const char *s, size_t n)
{
	if (!n)
		return "it is empty";
	if (n > 200)
		return "it is longer than 200 characters";
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return "it must begin with a letter or '_'";
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return "only letters, digits, '_', '-' and '.' may follow";
	return NULL;
}

/* A key that names a pass, an option or a method (what), checked as a word. */
static bool check_name(const yctx *c, const yaml_node_t *k, const char *what)
{
	const char *s = yscalar(k), *why = bad_name(s, strlen(s));
	if (why)
		yerr(c, k, "'%.40s%s' is not a valid %s name: %s", s, strlen(s) > 40 ? "..." : "",
		     what, why);
	return !why;
}

static void read_method_map(const yctx *c, const yaml_node_t *n, pm_optval *v)
{
	v->is_map = true;
	int cap = (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	v->map = pr_xcalloc((size_t)cap + 1, sizeof *v->map);
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		if (!check_key(c, n, p) || !check_name(c, ynode(c, p->key), "method"))
			continue;
		const yaml_node_t *k = ynode(c, p->key), *val = ynode(c, p->value);
		if (!yscalar(val)) {
			yerr(c, val, "option '%s': the value for method '%s' must be a scalar, "
			     "found %s", v->name, yscalar(k), ynode_kind(val));
			continue;
		}
		pm_method_value *m = &v->map[v->n_map++];
		m->method = pr_xstrdup(yscalar(k));
		m->text = pr_xstrdup(yscalar(val));
		m->quoted = yquoted(val);
		m->loc = yloc(c, val);
		m->key_loc = yloc(c, k);
	}
}

/* An option's value node: a scalar, or a map keyed by method. */
static bool read_value(const yctx *c, const yaml_node_t *n, pm_optval *v)
{
	v->vloc = yloc(c, n);
	if (n->type == YAML_SCALAR_NODE) {
		v->text = pr_xstrdup(yscalar(n));
		v->quoted = yquoted(n);
		return true;
	}
	if (n->type == YAML_MAPPING_NODE) {
		read_method_map(c, n, v);
		return true;
	}
	yerr(c, n, "option '%s': expected a value or a map {method: value}, found %s", v->name,
	     ynode_kind(n));
	return false;
}

static void read_options(const yctx *c, const yaml_node_t *n, pm_optlist *out)
{
	if (ynull(n))
		return;
	if (n->type != YAML_MAPPING_NODE) {
		yerr(c, n, "expected a map of options (NAME: VALUE), found %s", ynode_kind(n));
		return;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		if (!check_key(c, n, p) || !check_name(c, ynode(c, p->key), "option"))
			continue;
		const yaml_node_t *k = ynode(c, p->key);
		pm_optval v = {0};
		v.name = pr_xstrdup(yscalar(k));
		v.loc = yloc(c, k);
		if (read_value(c, ynode(c, p->value), &v))
			optlist_put(out, &v);
		else
			optval_free(&v);
	}
}

static void read_pass(const yctx *c, pr_pipeline *pl, const yaml_node_t *n)
{
	if (n->type == YAML_SCALAR_NODE && !ynull(n)) {
		const char *s = yscalar(n);
		if (check_name(c, n, "pass"))
			add_pass(pl, s, strlen(s), yloc(c, n));
		return;
	}
	if (n->type == YAML_MAPPING_NODE &&
	    n->data.mapping.pairs.top - n->data.mapping.pairs.start == 1) {
		const yaml_node_pair_t *p = n->data.mapping.pairs.start;
		const yaml_node_t *k = ynode(c, p->key);
		if (yscalar(k) && *yscalar(k)) {
			const char *s = yscalar(k);
			if (!check_name(c, k, "pass"))
				return;
			pm_pass_entry *e = add_pass(pl, s, strlen(s), yloc(c, k));
			read_options(c, ynode(c, p->value), &e->opts);
			return;
		}
	}
	yerr(c, n, "expected a pass: a name, or a one-key map NAME: {option: value}");
}

/* Is n a list to read? A null is an empty one (false, nothing said); any
 * other kind is reported as must_be ("'passes' must be a list"). */
static bool ylist(const yctx *c, const yaml_node_t *n, const char *must_be)
{
	if (ynull(n))
		return false;
	if (n->type != YAML_SEQUENCE_NODE) {
		yerr(c, n, "%s, found %s", must_be, ynode_kind(n));
		return false;
	}
	return true;
}

static void read_passes(const yctx *c, pr_pipeline *pl, const yaml_node_t *n)
{
	if (!ylist(c, n, "'passes' must be a list"))
		return;
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++)
		read_pass(c, pl, ynode(c, *i));
}

static void read_plugins(const yctx *c, pr_pipeline *pl, const yaml_node_t *n)
{
	if (!ylist(c, n, "'plugins' must be a list of .so paths"))
		return;
	char *dir = pr_path_dir(c->file);
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		const yaml_node_t *item = ynode(c, *i);
		const char *s = yscalar(item);
		if (!s || !*s) {
			yerr(c, item, "expected a plugin path, found %s", ynode_kind(item));
			continue;
		}
		char *path = s[0] == '/' ? pr_xstrdup(s) : pr_xasprintf("%s/%s", dir, s);
		add_plugin_ref(pl, path, yloc(c, item));
	}
	free(dir);
}

static char *read_text(const yctx *c, const yaml_node_t *n, const char *key)
{
	if (!yscalar(n)) {
		yerr(c, n, "'%s' must be text, found %s", key, ynode_kind(n));
		return NULL;
	}
	return pr_xstrdup(yscalar(n));
}

static const char *const top_keys[] = {"name", "description", "options", "passes", "plugins"};

static void read_top(const yctx *c, pr_pipeline *pl, const yaml_node_t *root)
{
	bool has_passes = false;
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		if (!check_key(c, root, p))
			continue;
		const yaml_node_t *k = ynode(c, p->key), *v = ynode(c, p->value);
		const char *key = yscalar(k);
		if (!strcmp(key, "name")) {
			free(pl->name);
			pl->name = read_text(c, v, key);
		} else if (!strcmp(key, "description")) {
			free(pl->description);
			pl->description = read_text(c, v, key);
		} else if (!strcmp(key, "options")) {
			read_options(c, v, &pl->opts);
		} else if (!strcmp(key, "passes")) {
			read_passes(c, pl, v);
			has_passes = true;
		} else if (!strcmp(key, "plugins")) {
			read_plugins(c, pl, v);
		} else {
			pm_loc l = yloc(c, k);
			pr_strbuf *b = err_begin(c->e, &l);
			free(l.file);
			pr_strbuf_printf(b, "unknown key '%s'", key);
			suggest(b, key, top_keys, 5, "keys");
		}
	}
	if (!has_passes && !c->e->n) {
		pm_loc l = yloc(c, root);
		err_add(c->e, &l, "a pipeline needs a 'passes:' list");
		free(l.file);
	}
}

static void parser_error(const char *file, const yaml_parser_t *y, int col_offset, errs *e)
{
	const yaml_mark_t *m = &y->problem_mark;
	pm_loc l = {(char *)file, (int)m->line + 1, (int)m->column + 1 + col_offset};
	pr_strbuf *b = err_begin(e, &l);
	pr_strbuf_printf(b, "malformed YAML: %s", y->problem ? y->problem : "syntax error");
	if (y->context)
		pr_strbuf_printf(b, " (%s, line %d)", y->context, (int)y->context_mark.line + 1);
}

/* Resource limits on what is handed to libyaml, whose scanner is quadratic
 * in flow nesting (128 KB of '[' took 28 s): far above what any pipeline
 * needs (the shipped ones are a few hundred bytes, nested 3 deep). */
#define PIPELINE_MAX_BYTES (1 << 20)
#define PIPELINE_MAX_DEPTH 64

/* A first pass over the events, which stops at the first collection nested
 * deeper than the limit before the scanner goes any further; a syntax error
 * is left to the loader, which stops at the same place. */
static bool depth_ok(const char *file, const char *text, size_t len, int col_offset, errs *e)
{
	yaml_parser_t y;
	yaml_parser_initialize(&y);
	yaml_parser_set_input_string(&y, (const unsigned char *)text, len);
	int depth = 0;
	bool ok = true, done = false;
	while (ok && !done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&y, &ev))
			break;
		done = ev.type == YAML_STREAM_END_EVENT;
		if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)
			depth++;
		else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT)
			depth--;
		if (depth > PIPELINE_MAX_DEPTH) {
			pm_loc l = {(char *)file, (int)ev.start_mark.line + 1,
				    (int)ev.start_mark.column + 1 + col_offset};
			err_add(e, &l, "lists and maps nested more than %d deep", PIPELINE_MAX_DEPTH);
			ok = false;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&y);
	return ok;
}

static bool size_ok(const char *file, size_t len, errs *e)
{
	if (len <= PIPELINE_MAX_BYTES)
		return true;
	pm_loc l = {(char *)file, 1, 1};
	err_add(e, &l, "more than %d bytes of YAML, the limit for a pipeline", PIPELINE_MAX_BYTES);
	return false;
}

/* Loads the one document of text; false (with an error) when it is not YAML. */
static bool yaml_load(const char *file, const char *text, size_t len, int col_offset,
		      yaml_document_t *doc, errs *e)
{
	if (!size_ok(file, len, e) || !depth_ok(file, text, len, col_offset, e))
		return false;
	yaml_parser_t y;
	yaml_parser_initialize(&y);
	yaml_parser_set_input_string(&y, (const unsigned char *)text, len);
	bool ok = yaml_parser_load(&y, doc);
	if (!ok) {
		parser_error(file, &y, col_offset, e);
	} else if (yaml_document_get_root_node(doc)) {
		yaml_document_t next;
		if (!yaml_parser_load(&y, &next)) {
			parser_error(file, &y, col_offset, e);
			ok = false;
		} else {
			if (yaml_document_get_root_node(&next)) {
				pm_loc l = {(char *)file, (int)next.start_mark.line + 1, 1};
				err_add(e, &l, "a pipeline file holds one YAML document; found a second");
				ok = false;
			}
			yaml_document_delete(&next);
		}
		if (!ok)
			yaml_document_delete(doc);
	}
	yaml_parser_delete(&y);
	return ok;
}

static char *base_name(const char *file)
{
	const char *b = strrchr(file, '/');
	b = b ? b + 1 : file;
	const char *dot = strrchr(b, '.');
	return pr_xstrndup(b, dot && dot != b ? (size_t)(dot - b) : strlen(b));
}

pr_err *pr_pipeline_parse_yaml(const char *filename, const char *text, size_t len,
			       pr_pipeline **out)
{
	*out = NULL;
	errs e = {0};
	yaml_document_t doc;
	if (!yaml_load(filename, text, len, 0, &doc, &e))
		return errs_take(&e);
	pr_pipeline *pl = pipeline_new(filename);
	yctx c = {filename, &doc, 0, &e};
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		pm_loc l = {(char *)filename, 1, 1};
		err_add(&e, &l, "empty pipeline: expected a map with 'passes:'");
	} else if (root->type != YAML_MAPPING_NODE) {
		yerr(&c, root, "expected a pipeline (a map with 'passes:'), found %s",
		     ynode_kind(root));
	} else {
		read_top(&c, pl, root);
	}
	yaml_document_delete(&doc);
	if (!pl->name)
		pl->name = base_name(filename);
	pr_err *err = errs_take(&e);
	if (err)
		pr_pipeline_free(pl);
	else
		*out = pl;
	return err;
}

pr_err *pr_pipeline_load_file(const char *path, pr_pipeline **out)
{
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return pr_err_new("%s: cannot read pipeline: %s", path, strerror(errno));
	pr_strbuf b;
	pr_strbuf_init(&b);
	char chunk[65536];
	size_t got;
	while (b.len <= PIPELINE_MAX_BYTES && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
		pr_strbuf_add(&b, chunk, got);   /* a limit on reading too: /dev/zero ends */
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		pr_strbuf_free(&b);
		return pr_err_new("%s: cannot read pipeline", path);
	}
	pr_err *e = pr_pipeline_parse_yaml(path, b.data ? b.data : "", b.len, out);
	pr_strbuf_free(&b);
	return e;
}

/* ---- --passes 'a,b{opt=1},c' --------------------------------------------- */

typedef struct inl {
	const char *s;
	size_t i;
	errs *e;
} inl;

static void inl_err(inl *x, size_t at, const char *what)
{
	pm_loc l = {"--passes", 1, (int)at + 1};
	err_add(x->e, &l, "%s", what);
}

static void inl_space(inl *x)
{
	while (x->s[x->i] == ' ' || x->s[x->i] == '\t')
		x->i++;
}

/* Text up to one of stop (or the end), without surrounding blanks. */
static size_t inl_word(inl *x, const char *stop, size_t *start)
{
	inl_space(x);
	*start = x->i;
	while (x->s[x->i] && !strchr(stop, x->s[x->i]))
		x->i++;
	size_t end = x->i;
	while (end > *start && (x->s[end - 1] == ' ' || x->s[end - 1] == '\t'))
		end--;
	return end - *start;
}

static bool inl_name_ok(inl *x, size_t at, size_t n, const char *what)
{
	const char *why = bad_name(x->s + at, n);
	if (why) {
		pm_loc l = {"--passes", 1, (int)at + 1};
		err_add(x->e, &l, "'%.*s' is not a valid %s name: %s", (int)(n > 40 ? 40 : n),
			x->s + at, what, why);
	}
	return !why;
}

static bool inl_option(inl *x, pm_pass_entry *p)
{
	size_t ks, kn = inl_word(x, "=,}", &ks);
	if (!kn || x->s[x->i] != '=') {
		inl_err(x, ks, "expected NAME=VALUE inside { }");
		return false;
	}
	if (!inl_name_ok(x, ks, kn, "option"))
		return false;
	x->i++;
	size_t vs, vn = inl_word(x, ",}", &vs);
	pm_optval v = {0};
	v.name = pr_xstrndup(x->s + ks, kn);
	v.loc = loc_make("--passes", 1, (int)ks + 1);
	v.vloc = loc_make("--passes", 1, (int)vs + 1);
	v.text = pr_xstrndup(x->s + vs, vn);
	optlist_put(&p->opts, &v);
	return true;
}

static bool inl_options(inl *x, pm_pass_entry *p)
{
	size_t open = x->i++;
	inl_space(x);
	if (x->s[x->i] == '}') {
		x->i++;
		return true;
	}
	for (;;) {
		if (!inl_option(x, p))
			return false;
		if (x->s[x->i] == ',') {
			x->i++;
			continue;
		}
		if (x->s[x->i] == '}') {
			x->i++;
			return true;
		}
		inl_err(x, open, "this '{' has no matching '}'");
		return false;
	}
}

static bool inl_pass(inl *x, pr_pipeline *pl)
{
	size_t start, n = inl_word(x, ",{}", &start);
	if (!n) {
		inl_err(x, start, "expected a pass name");
		return false;
	}
	if (!inl_name_ok(x, start, n, "pass"))
		return false;
	pm_pass_entry *p = add_pass(pl, x->s + start, n, loc_make("--passes", 1, (int)start + 1));
	if (x->s[x->i] == '{' && !inl_options(x, p))
		return false;
	inl_space(x);
	if (x->s[x->i] && x->s[x->i] != ',') {
		inl_err(x, x->i, "expected ',' between passes");
		return false;
	}
	return true;
}

pr_err *pr_pipeline_parse_inline(const char *text, pr_pipeline **out)
{
	errs e = {0};
	inl x = {text, 0, &e};
	pr_pipeline *pl = pipeline_new("--passes");
	pl->name = pr_xstrdup("inline");
	do {
		if (x.s[x.i] == ',')
			x.i++;
		if (!inl_pass(&x, pl))
			break;
	} while (x.s[x.i]);
	pr_err *err = errs_take(&e);
	if (err) {
		pr_pipeline_free(pl);
		pl = NULL;
	}
	*out = pl;
	return err;
}

/* ---- --set NAME=VALUE ----------------------------------------------------- */

/* VALUE is read as YAML so that a per-method map can be given too:
 * --set 'skip_d2h_for_method_outputs={forward: true}'. */
static pr_err *parse_set_value(const char *value, int col_offset, pm_optval *v)
{
	errs e = {0};
	yaml_document_t doc;
	if (!yaml_load("--set", value, strlen(value), col_offset, &doc, &e))
		return errs_take(&e);
	yctx c = {"--set", &doc, col_offset, &e};
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		v->text = pr_xstrdup("");
		v->vloc = loc_make("--set", 1, col_offset + 1);
	} else {
		read_value(&c, root, v);
	}
	yaml_document_delete(&doc);
	return errs_take(&e);
}

bool pr_pipeline_has_pass(const pr_pipeline *pl, const char *pass)
{
	for (int i = 0; i < pl->n_passes; i++)
		if (!strcmp(pl->passes[i].name, pass))
			return true;
	return false;
}

static pr_err *set_on_passes(pr_pipeline *pl, const char *pass, const pm_optval *v)
{
	int hits = 0;
	for (int i = 0; i < pl->n_passes; i++) {
		if (strcmp(pl->passes[i].name, pass))
			continue;
		optlist_copy(&pl->passes[i].opts, v);
		hits++;
	}
	if (hits)
		return NULL;
	const char **names = pr_xcalloc((size_t)pl->n_passes + 1, sizeof *names);
	for (int i = 0; i < pl->n_passes; i++)
		names[i] = pl->passes[i].name;
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_printf(&b, "--set:1:1: pass '%s' is not in the pipeline", pass);
	suggest(&b, pass, names, pl->n_passes, "passes of this pipeline");
	free(names);
	pr_err *e = pr_err_new("%s", b.data);
	pr_strbuf_free(&b);
	return e;
}

/* A pipeline changed by --set is no longer the one its file names: its name
 * says so, "cuda+skip_h2d_for_constants=true", and a printed copy of it,
 * reloaded, keeps that name. */
static void rename_for_override(pr_pipeline *pl, const char *assignment)
{
	char *name = pr_xasprintf("%s+%s", pl->name ? pl->name : "", assignment);
	free(pl->name);
	pl->name = name;
}

pr_err *pr_pipeline_set(pr_pipeline *pl, const char *assignment)
{
	const char *eq = strchr(assignment, '=');
	if (!eq || eq == assignment)
		return pr_err_new("--set:1:1: expected NAME=VALUE or PASS.NAME=VALUE, got '%s'",
				  assignment);
	const char *dot = memchr(assignment, '.', (size_t)(eq - assignment));
	const char *name = dot ? dot + 1 : assignment;
	if (name == eq)
		return pr_err_new("--set:1:%d: expected an option name after '.'",
				  (int)(name - assignment) + 1);
	pm_optval v = {0};
	v.name = pr_xstrndup(name, (size_t)(eq - name));
	v.loc = loc_make("--set", 1, (int)(name - assignment) + 1);
	pr_err *e = parse_set_value(eq + 1, (int)(eq + 1 - assignment), &v);
	if (!e && dot) {
		char *pass = pr_xstrndup(assignment, (size_t)(dot - assignment));
		e = set_on_passes(pl, pass, &v);
		free(pass);
		optval_free(&v);
	} else if (!e) {
		optlist_put(&pl->opts, &v);
	} else {
		optval_free(&v);
	}
	if (!e)
		rename_for_override(pl, assignment);
	pl->validated = false;
	return e;
}

/* ---- plugins: ------------------------------------------------------------- */

pr_err *pr_pipeline_load_plugins(pr_pipeline *pl, pr_registry *r)
{
	for (int i = 0; i < pl->n_plugins; i++) {
		pm_plugin_ref *p = &pl->plugins[i];
		pr_err *e = pr_registry_load_plugin(r, p->path);
		if (e)
			return pr_err_wrap(e, "%s:%d:%d", p->loc.file, p->loc.line, p->loc.col);
	}
	return NULL;
}

/* ---- validation ----------------------------------------------------------- */

const char *pm_type_article(pr_option_type t)
{
	return t == PR_OPT_INT ? "an int" : t == PR_OPT_BOOL ? "a bool"
		: t == PR_OPT_FLOAT ? "a float" : "a string";
}

static void check_scalar(errs *e, const pm_loc *loc, const char *what, const pr_option_decl *d,
			 char **text, bool quoted)
{
	if (quoted && d->type != PR_OPT_STRING) {
		err_add(e, loc, "%s expects %s, got the quoted string \"%s\"", what,
			pm_type_article(d->type), *text);
		return;
	}
	char *norm = NULL;
	const char *problem = pm_value_check(d->type, *text, &norm);
	if (problem) {
		err_add(e, loc, "%s expects %s (%s), got '%s'", what, pm_type_article(d->type),
			problem, *text);
		return;
	}
	free(*text);
	*text = norm;
}

static void check_value(errs *e, pm_optval *v, const pr_option_decl *d, const char *what)
{
	if (!v->is_map) {
		check_scalar(e, &v->vloc, what, d, &v->text, v->quoted);
		return;
	}
	if (!d->per_method) {
		err_add(e, &v->vloc, "%s is not per-method: expected %s, not a map", what,
			pm_type_article(d->type));
		return;
	}
	for (int i = 0; i < v->n_map; i++)
		check_scalar(e, &v->map[i].loc, what, d, &v->map[i].text, v->map[i].quoted);
}

static const pr_option_decl *find_decl(const pr_pass_info *p, const char *name)
{
	for (size_t i = 0; i < p->n_options; i++)
		if (!strcmp(p->options[i].name, name))
			return &p->options[i];
	return NULL;
}

static void check_pass_options(errs *e, pm_pass_entry *pe)
{
	const pr_pass_info *p = pe->info;
	for (int i = 0; i < pe->opts.n; i++) {
		pm_optval *v = &pe->opts.items[i];
		const pr_option_decl *d = find_decl(p, v->name);
		if (!d) {
			pr_strbuf *b = err_begin(e, &v->loc);
			pr_strbuf_printf(b, "pass '%s' has no option '%s'", p->name, v->name);
			const char **names = pr_xcalloc(p->n_options + 1, sizeof *names);
			for (size_t j = 0; j < p->n_options; j++)
				names[j] = p->options[j].name;
			suggest(b, v->name, names, (int)p->n_options, "options");
			free(names);
			continue;
		}
		char *what = pr_xasprintf("option '%s' of pass '%s'", v->name, p->name);
		check_value(e, v, d, what);
		free(what);
	}
}

static void check_analyses(errs *e, const pm_pass_entry *pe, const pr_registry *r,
			   const char *const *names, const char *verb)
{
	for (const char *const *a = names; a && *a; a++)
		if (!pr_registry_find_analysis(r, *a))
			err_add(e, &pe->loc, "pass '%s' %s analysis '%s', which no loaded "
				"plugin provides", pe->name, verb, *a);
}

static void check_requires(errs *e, const pm_pass_entry *pe, const pr_registry *r)
{
	check_analyses(e, pe, r, pe->info->requires, "requires");
	check_analyses(e, pe, r, pe->info->uses, "uses");
}

static void check_passes(errs *e, pr_pipeline *pl, const pr_registry *r)
{
	const char **names;
	int n = pm_registry_pass_names(r, &names);
	for (int i = 0; i < pl->n_passes; i++) {
		pm_pass_entry *pe = &pl->passes[i];
		pe->info = pr_registry_find_pass(r, pe->name);
		if (!pe->info) {
			pr_strbuf *b = err_begin(e, &pe->loc);
			pr_strbuf_printf(b, "unknown pass '%s'", pe->name);
			suggest(b, pe->name, names, n, "passes");
			continue;
		}
		check_pass_options(e, pe);
		check_requires(e, pe, r);
	}
	free(names);
}

static void check_pipeline_options(errs *e, pr_pipeline *pl, const pr_registry *r)
{
	const char **names;
	int n = pm_registry_pipeline_option_names(r, &names);
	for (int i = 0; i < pl->opts.n; i++) {
		pm_optval *v = &pl->opts.items[i];
		const pr_option_decl *d = pr_registry_find_pipeline_option(r, v->name);
		if (!d) {
			pr_strbuf *b = err_begin(e, &v->loc);
			pr_strbuf_printf(b, "unknown pipeline option '%s'", v->name);
			suggest(b, v->name, names, n, "pipeline options");
			continue;
		}
		char *what = pr_xasprintf("pipeline option '%s'", v->name);
		check_value(e, v, d, what);
		free(what);
	}
	free(names);
}

pr_err *pr_pipeline_validate(pr_pipeline *pl, const pr_registry *r)
{
	errs e = {0};
	check_passes(&e, pl, r);
	check_pipeline_options(&e, pl, r);
	pl->validated = !e.n;
	return errs_take(&e);
}

static int check_map_methods(const pm_optlist *l, const pr_program *p, const char **names,
			     pr_diags *diags)
{
	int n = 0;
	for (int i = 0; i < l->n; i++) {
		const pm_optval *v = &l->items[i];
		for (int j = 0; j < v->n_map; j++) {
			const pm_method_value *m = &v->map[j];
			if (pr_program_find_method(p, m->method))
				continue;
			const char *near = pr_nearest(m->method, names, p->n_methods);
			pr_diags_add(diags, PR_SEV_WARNING, "W-UNKNOWN-METHOD", "pipeline", NULL, NULL, -1,
				     "%s:%d:%d: option '%s' names method '%s', which the program does "
				     "not have%s%s%s", m->key_loc.file, m->key_loc.line, m->key_loc.col, v->name,
				     m->method, near ? "; did you mean '" : "", near ? near : "",
				     near ? "'?" : "");
			n++;
		}
	}
	return n;
}

int pr_pipeline_check_methods(const pr_pipeline *pl, const pr_program *p, pr_diags *diags)
{
	const char **names = pr_xcalloc((size_t)p->n_methods + 1, sizeof *names);
	for (int i = 0; i < p->n_methods; i++)
		names[i] = p->methods[i]->name;
	int n = check_map_methods(&pl->opts, p, names, diags);
	for (int i = 0; i < pl->n_passes; i++)
		n += check_map_methods(&pl->passes[i].opts, p, names, diags);
	free(names);
	return n;
}

/* ---- finding shipped pipelines ------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

pr_err *pr_pipeline_find(const char *arg, char **path)
{
	*path = NULL;
	if (ends_with(arg, ".yaml") || ends_with(arg, ".yml")) {
		*path = pr_xstrdup(arg);
		return NULL;
	}
	const char *dir = pr_locate_pipeline_dir();
	if (dir) {
		char *p = pr_xasprintf("%s/%s.yaml", dir, arg);
		if (is_file(p)) {
			*path = p;
			return NULL;
		}
		free(p);
	}
	pr_strbuf b;
	pr_strbuf_init(&b);
	char **names;
	int n = pr_pipeline_list_shipped(&names);
	for (int i = 0; i < n; i++)
		pr_strbuf_printf(&b, "%s%s", i ? ", " : "", names[i]);
	pr_names_free(names, n);
	pr_err *e = pr_err_new("--pipeline %s: unknown pipeline (give a .yaml path, or one of the "
			       "shipped pipelines: %s)", arg, n ? b.data : "none found");
	pr_strbuf_free(&b);
	return e;
}

pr_err *pr_pipeline_load_named(const char *arg, pr_pipeline **out)
{
	char *path;
	*out = NULL;
	pr_err *e = pr_pipeline_find(arg, &path);
	if (!e)
		e = pr_pipeline_load_file(path, out);
	free(path);
	return e;
}

/* ---- canonical YAML ------------------------------------------------------- */

static bool plain_ok(const char *s)
{
	if (!*s || strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]))
		return false;
	for (const char *p = s; *p; p++)
		if (strchr(":#,[]{}\"'\n\t", *p) && !(*p == ':' && p[1] && p[1] != ' '))
			return false;
	return s[strlen(s) - 1] != ' ';
}

static void put_scalar(pr_strbuf *b, const char *s, bool quoted)
{
	if (!quoted && plain_ok(s))
		pr_strbuf_puts(b, s);
	else
		pr_strbuf_json_string(b, s);   /* a JSON string is a YAML double-quoted scalar */
}

static void put_value(pr_strbuf *b, const pm_optval *v)
{
	if (!v->is_map) {
		put_scalar(b, v->text, v->quoted);
		return;
	}
	pr_strbuf_putc(b, '{');
	for (int i = 0; i < v->n_map; i++) {
		pr_strbuf_puts(b, i ? ", " : "");
		put_scalar(b, v->map[i].method, false);
		pr_strbuf_puts(b, ": ");
		put_scalar(b, v->map[i].text, v->map[i].quoted);
	}
	pr_strbuf_putc(b, '}');
}

static void put_pass(pr_strbuf *b, const pm_pass_entry *p)
{
	pr_strbuf_puts(b, "  - ");
	put_scalar(b, p->name, false);
	if (!p->opts.n) {
		pr_strbuf_putc(b, '\n');
		return;
	}
	pr_strbuf_puts(b, ": {");
	for (int i = 0; i < p->opts.n; i++) {
		pr_strbuf_puts(b, i ? ", " : "");
		put_scalar(b, p->opts.items[i].name, false);
		pr_strbuf_puts(b, ": ");
		put_value(b, &p->opts.items[i]);
	}
	pr_strbuf_puts(b, "}\n");
}

char *pr_pipeline_to_yaml(const pr_pipeline *pl)
{
	const char **files = pr_xcalloc((size_t)pl->n_plugins + 1, sizeof *files);
	for (int i = 0; i < pl->n_plugins; i++)
		files[i] = pl->plugins[i].path;
	char *yaml = pm_pipeline_yaml_with_plugins(pl, files, pl->n_plugins);
	free(files);
	return yaml;
}

char *pm_pipeline_yaml_with_plugins(const pr_pipeline *pl, const char *const *plugins, int n)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "name: ");
	put_scalar(&b, pl->name ? pl->name : "", false);
	pr_strbuf_putc(&b, '\n');
	if (pl->description) {
		pr_strbuf_puts(&b, "description: ");
		put_scalar(&b, pl->description, false);
		pr_strbuf_putc(&b, '\n');
	}
	if (n)
		pr_strbuf_puts(&b, "plugins:\n");
	for (int i = 0; i < n; i++) {
		pr_strbuf_puts(&b, "  - ");
		put_scalar(&b, plugins[i], false);
		pr_strbuf_putc(&b, '\n');
	}
	if (pl->opts.n) {
		pr_strbuf_puts(&b, "options:\n");
		for (int i = 0; i < pl->opts.n; i++) {
			pr_strbuf_puts(&b, "  ");
			put_scalar(&b, pl->opts.items[i].name, false);
			pr_strbuf_puts(&b, ": ");
			put_value(&b, &pl->opts.items[i]);
			pr_strbuf_putc(&b, '\n');
		}
	}
	pr_strbuf_puts(&b, pl->n_passes ? "passes:\n" : "passes: []\n");
	for (int i = 0; i < pl->n_passes; i++)
		put_pass(&b, &pl->passes[i]);
	return pr_strbuf_take(&b);
}
