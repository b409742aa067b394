/* parse.c: the directives of a test file.
 *
 * A directive is a comment line "# KEY LABEL: TEXT" (the program parser
 * ignores it); LABEL names the RUN it is about, so that one file holds
 * several runs and each expectation says which. "# IGNORE: mem" (no label)
 * holds for the whole file. The file is read in two passes: the RUN lines
 * first, so that an expectation may come before or after its run, then the
 * expectations in file order, which is the order CHECKs match in.
 *
 * A file that cannot mean what it says is refused, each problem at its
 * line: an unknown KEY before a known label (a typo would otherwise check
 * nothing), a label with no RUN, a CHECK-NEXT with no match before it, a
 * number that is not one, a file that checks nothing. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lit.h"

static const char *const kind_names[LIT_KIND_COUNT] = {
	[LIT_RUN] = "RUN",          [LIT_CHECK] = "CHECK",     [LIT_CHECK_NEXT] = "CHECK-NEXT",
	[LIT_CHECK_NOT] = "CHECK-NOT", [LIT_CHECK_DAG] = "CHECK-DAG", [LIT_COUNT] = "COUNT",
	[LIT_EXIT] = "EXIT",        [LIT_DIAG] = "DIAG",       [LIT_STDERR] = "STDERR",
	[LIT_STATS] = "STATS",
};

const char *lit_kind_name(lit_kind k)
{
	return kind_names[k];
}

/* "# KEY LABEL: TEXT", split in place; false for any other line. */
typedef struct raw {
	char *key, *label, *text;
} raw;

static bool split_directive(char *line, raw *d)
{
	if (line[0] != '#')
		return false;
	char *s = line + 1;
	while (*s == ' ')
		s++;
	d->key = s;
	while (isupper((unsigned char)*s) || *s == '-')
		s++;
	if (s == d->key || (*s != ' ' && *s != ':'))
		return false;
	char *key_end = s;
	while (*s == ' ')
		s++;
	d->label = s;
	while (isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.')
		s++;
	if (*s != ':')
		return false;
	*s++ = 0;
	*key_end = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	d->text = s;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = 0;
	return true;
}

static int kind_of(const char *key)
{
	for (int k = 0; k < LIT_KIND_COUNT; k++)
		if (!strcmp(key, kind_names[k]))
			return k;
	return -1;
}

static const char *nearest_kind(const char *key)
{
	const char *best = kind_names[0];
	for (int k = 1; k < LIT_KIND_COUNT; k++)
		if (lit_edit_distance(key, kind_names[k]) < lit_edit_distance(key, best))
			best = kind_names[k];
	return best;
}

static int find_run(const lit_case *c, const char *label)
{
	for (int i = 0; i < c->n_runs; i++)
		if (!strcmp(c->runs[i].label, label))
			return i;
	return -1;
}

static void add_run(lit_case *c, int line, const raw *d)
{
	if (find_run(c, d->label) >= 0) {
		lit_fail(c, line, "a second RUN named '%s'", d->label);
		return;
	}
	const char *why;
	char **argv = lit_split_args(d->text, &why);
	if (!argv) {
		lit_fail(c, line, "RUN %s: %s", d->label, why);
		return;
	}
	for (int i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
	c->runs = realloc(c->runs, (size_t)(c->n_runs + 1) * sizeof *c->runs);
	if (!c->runs)
		abort();
	lit_run *r = &c->runs[c->n_runs++];
	memset(r, 0, sizeof *r);
	r->label = strdup(d->label);
	r->args = strdup(d->text);
	r->line = line;
}

static bool parse_long(const char *s, long *n, char **rest)
{
	char *end;
	*n = strtol(s, &end, 10);
	if (end == s || (*end && *end != ' '))
		return false;
	while (*end == ' ')
		end++;
	*rest = end;
	return true;
}

/* "CODE N" (a count) or "severity[CODE] text" (a message). */
static bool parse_diag(lit_directive *x)
{
	const char *t = x->text, *br = strchr(t, '[');
	if (br && br > t && islower((unsigned char)*t) && strchr(br, ']'))
		return true;   /* a message: matched as written */
	char code[96], *rest;
	int w = 0;
	if (sscanf(t, "%95[A-Z0-9-]%n", code, &w) != 1 || t[w] != ' ')
		return false;
	if (!parse_long(t + w + 1, &x->n, &rest) || *rest)
		return false;
	x->pattern = strdup(code);
	return true;
}

/* "PATH OP VALUE" */
static bool parse_stats(lit_directive *x)
{
	static const char *const ops[] = {"!=", "<=", ">=", "=", "<", ">"};
	const char *t = x->text, *sp = strchr(t, ' ');
	if (!sp)
		return false;
	const char *o = sp;
	while (*o == ' ')
		o++;
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
		size_t n = strlen(ops[i]);
		if (!strncmp(o, ops[i], n) && o[n] == ' ') {
			memcpy(x->op, ops[i], n + 1);
			x->pattern = lit_strndup(t, (size_t)(sp - t));
			const char *v = o + n;
			while (*v == ' ')
				v++;
			memmove(x->text, v, strlen(v) + 1);
			return *x->text != 0;
		}
	}
	return false;
}

static const char *const usage_of[LIT_KIND_COUNT] = {
	[LIT_COUNT] = "COUNT LABEL: N TEXT",
	[LIT_EXIT] = "EXIT LABEL: N",
	[LIT_DIAG] = "DIAG LABEL: CODE N, or DIAG LABEL: severity[CODE] text",
	[LIT_STATS] = "STATS LABEL: PATH OP VALUE, OP one of = != < <= > >=",
};

/* Reads the TEXT of an expectation by its kind; false when it is malformed. */
static bool parse_text(lit_directive *x)
{
	char *rest;
	switch (x->kind) {
	case LIT_COUNT:
		if (!parse_long(x->text, &x->n, &rest) || !*rest)
			return false;
		x->pattern = strdup(rest);
		return true;
	case LIT_EXIT:
		return parse_long(x->text, &x->n, &rest) && !*rest;
	case LIT_DIAG:
		return parse_diag(x);
	case LIT_STATS:
		return parse_stats(x);
	default:
		return *x->text != 0;
	}
}

/* CHECKs, COUNT and STDERR look for a text that may hold {{regex}}. */
static bool compile_pattern(lit_case *c, const raw *d, lit_directive *x)
{
	char why[300];
	const char *src = x->kind == LIT_COUNT ? x->pattern : x->text;
	bool wants = x->kind == LIT_COUNT || x->kind == LIT_STDERR ||
		     (x->kind >= LIT_CHECK && x->kind <= LIT_CHECK_DAG);
	if (!wants || lit_pattern_compile(&x->pat, src, why, sizeof why))
		return true;
	lit_fail(c, x->line, "%s %s: %s", kind_names[x->kind], d->label, why);
	return false;
}

static void add_expectation(lit_case *c, int line, lit_kind k, int run, const raw *d)
{
	lit_directive x = {.kind = k, .line = line, .run = run, .text = strdup(d->text)};
	bool ok = parse_text(&x);
	if (!ok)
		lit_fail(c, line, "%s %s: cannot read '%s'; the form is %s", kind_names[k], d->label,
			 d->text, usage_of[k] ? usage_of[k] : "KEY LABEL: TEXT (not empty)");
	if (!ok || !compile_pattern(c, d, &x)) {
		free(x.text);
		free(x.pattern);
		return;
	}
	c->dirs = realloc(c->dirs, (size_t)(c->n_dirs + 1) * sizeof *c->dirs);
	if (!c->dirs)
		abort();
	c->dirs[c->n_dirs++] = x;
	c->runs[run].has_exit |= k == LIT_EXIT;
	c->runs[run].wants_stats |= k == LIT_STATS;
}

/* A CHECK-NEXT needs a positive match before it in its run. */
static bool has_match_before(const lit_case *c, int run)
{
	for (int i = 0; i < c->n_dirs; i++) {
		lit_kind k = c->dirs[i].kind;
		if (c->dirs[i].run == run && (k == LIT_CHECK || k == LIT_CHECK_NEXT || k == LIT_CHECK_DAG))
			return true;
	}
	return false;
}

static void file_option(lit_case *c, int line, const raw *d)
{
	if (!strcmp(d->text, "mem"))
		c->ignore_mem = true;
	else
		lit_fail(c, line, "IGNORE: '%s' is not something to ignore; the only one is 'mem'",
			 d->text);
}

static void parse_line(lit_case *c, int line, const raw *d)
{
	int k = kind_of(d->key), run = find_run(c, d->label);
	if (k == LIT_RUN)
		return;
	if (!strcmp(d->key, "IGNORE") && !*d->label) {
		file_option(c, line, d);
	} else if (k < 0) {
		if (run >= 0)
			lit_fail(c, line, "unknown directive '%s' (did you mean %s?)", d->key,
				 nearest_kind(d->key));
	} else if (!*d->label) {
		lit_fail(c, line, "%s needs the label of its run: '# %s LABEL: ...'", d->key, d->key);
	} else if (run < 0) {
		lit_fail(c, line, "%s %s: no RUN line is labelled '%s'", d->key, d->label, d->label);
	} else if (k == LIT_CHECK_NEXT && !has_match_before(c, run)) {
		lit_fail(c, line, "CHECK-NEXT %s: no CHECK before it in run '%s'", d->label, d->label);
	} else {
		add_expectation(c, line, (lit_kind)k, run, d);
	}
}

/* Gives each run its argv: passrun --print [--stats=json] [--plugin P]...
 * ARGS, with the file at "%s" or else at the end. */
static void build_argv(lit_case *c, lit_run *r, const lit_options *o)
{
	const char *why;
	char **args = lit_split_args(r->args, &why);
	int n = 0, cap = 8 + 2 * o->n_plugins;
	for (; args[n]; n++)
		cap++;
	char **v = calloc((size_t)cap, sizeof *v);
	int k = 0;
	bool has_stats = false, has_file = false;
	for (int i = 0; i < n; i++)
		has_stats |= !strcmp(args[i], "--stats=json");
	v[k++] = strdup(o->passrun);
	v[k++] = strdup("--print");
	if (r->wants_stats && !has_stats)
		v[k++] = strdup("--stats=json");
	for (int i = 0; i < o->n_plugins; i++) {
		v[k++] = strdup("--plugin");
		v[k++] = strdup(o->plugins[i]);
	}
	for (int i = 0; i < n; i++) {
		has_file |= !strcmp(args[i], "%s");
		v[k++] = strcmp(args[i], "%s") ? args[i] : (free(args[i]), strdup(c->path));
	}
	if (!has_file)
		v[k++] = strdup(c->path);
	free(args);
	r->argv = v;
}

static char **split_lines(char *text, int *n)
{
	int cap = 64;
	char **lines = malloc((size_t)cap * sizeof *lines);
	*n = 0;
	for (char *s = text; s && *s;) {
		char *e = strchr(s, '\n');
		if (e)
			*e++ = 0;
		if (*n == cap)
			lines = realloc(lines, (size_t)(cap *= 2) * sizeof *lines);
		lines[(*n)++] = s;
		s = e;
	}
	return lines;
}

static void parse_pass(lit_case *c, char *text, bool runs)
{
	int n;
	char **lines = split_lines(text, &n);
	for (int i = 0; i < n; i++) {
		raw d;
		if (!split_directive(lines[i], &d))
			continue;
		if (runs && !strcmp(d.key, "RUN"))
			add_run(c, i + 1, &d);
		else if (!runs)
			parse_line(c, i + 1, &d);
	}
	free(lines);
}

bool lit_case_parse(lit_case *c, const char *path, const lit_options *o)
{
	memset(c, 0, sizeof *c);
	c->path = path;
	char *text = lit_read_file(path);
	if (!text) {
		fprintf(stderr, "%s: error: cannot read it\n", path);
		c->failures++;
		return false;
	}
	char *copy = strdup(text);
	parse_pass(c, text, true);
	parse_pass(c, copy, false);
	free(text);
	free(copy);
	if (!c->n_runs)
		lit_fail(c, 1, "no RUN line: write '# RUN LABEL: PASSRUN-ARGUMENTS'");
	else if (!c->n_dirs)
		lit_fail(c, c->runs[0].line, "nothing is checked: add CHECK, EXIT, DIAG, STDERR or STATS lines");
	for (int i = 0; i < c->n_runs; i++)
		build_argv(c, &c->runs[i], o);
	return c->failures == 0;
}

void lit_case_free(lit_case *c)
{
	for (int i = 0; i < c->n_runs; i++) {
		lit_run *r = &c->runs[i];
		for (int j = 0; r->argv && r->argv[j]; j++)
			free(r->argv[j]);
		free(r->argv);
		free(r->label);
		free(r->args);
		free(r->out);
		free(r->err);
		free(r->stats);
		free(r->command);
	}
	for (int i = 0; i < c->n_dirs; i++) {
		lit_pattern_free(&c->dirs[i].pat);
		free(c->dirs[i].text);
		free(c->dirs[i].pattern);
	}
	free(c->runs);
	free(c->dirs);
}
