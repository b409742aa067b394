/* expect.c: a run's exit status, diagnostics, standard error and
 * --stats=json against EXIT, DIAG, STDERR and STATS.
 *
 * A run with no EXIT line must exit 0, as lit wants: a test that expects a
 * failure says so, and a crash never passes unnoticed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lit.h"

static void check_exit(lit_case *c, lit_run *r, int line, long want)
{
	if (r->status == want)
		return;
	lit_fail(c, line, "EXIT %s: passrun exited with %d, expected %ld%s", r->label, r->status,
		 want, r->status > 128 ? " (killed by a signal: status 128 + signal)" : "");
	lit_show_run(r, false, true);
}

/* The stderr line nearest to text, as a note. */
static void note_nearest(const lit_run *r, const char *text)
{
	const char *near = lit_nearest_line(r->err, r->err + strlen(r->err), text);
	if (!near)
		return;
	char *line = lit_line_at(r->err, near);
	lit_note("nearest line of stderr: %s", line);
	free(line);
}

static void check_diag_count(lit_case *c, lit_run *r, const lit_directive *d)
{
	char needle[128];
	snprintf(needle, sizeof needle, "[%s]", d->pattern);
	int got = lit_count(r->err, needle);
	if (got == d->n)
		return;
	lit_fail(c, d->line, "DIAG %s: %d diagnostic%s %s, expected %ld", r->label, got,
		 got == 1 ? "" : "s", needle, d->n);
	lit_show_run(r, false, true);
}

/* "severity[CODE] text": a line of stderr with head (severity[CODE]) and,
 * after it, tail. */
static bool has_diag_line(const char *err, const char *head, const char *tail)
{
	bool ok = false;
	for (const char *s = err; *s && !ok;) {
		const char *e = strchr(s, '\n');
		char *line = lit_strndup(s, e ? (size_t)(e - s) : strlen(s));
		for (const char *p = line; !ok && (p = strstr(p, head)); p++)
			ok = strstr(p + strlen(head), tail) != NULL;
		free(line);
		s = e ? e + 1 : s + strlen(s);
	}
	return ok;
}

static void check_diag_message(lit_case *c, lit_run *r, const lit_directive *d)
{
	const char *close = strchr(d->text, ']') + 1, *tail = close;
	while (*tail == ' ')
		tail++;
	char *head = lit_strndup(d->text, (size_t)(close - d->text));
	bool ok = has_diag_line(r->err, head, tail);
	free(head);
	if (ok)
		return;
	lit_fail(c, d->line, "DIAG %s: no such diagnostic on stderr", r->label);
	lit_note("expected: %s", d->text);
	note_nearest(r, d->text);
	lit_show_run(r, false, true);
}

static void check_stderr(lit_case *c, lit_run *r, const lit_directive *d)
{
	const char *end;
	if (lit_pattern_find(&d->pat, r->err, r->err, &end))
		return;
	lit_fail(c, d->line, "STDERR %s: expected text not found on stderr", r->label);
	lit_note("expected: %s", d->text);
	note_nearest(r, d->text);
	lit_show_run(r, false, true);
}

/* Compares the JSON value [v, end) with the expected text by op. */
static bool compare_value(const char *v, const char *end, const char *op, const char *want,
			  const char **why)
{
	char *vend, *wend;
	double a = strtod(v, &vend), b = strtod(want, &wend);
	bool numbers = vend == end && vend != v && !*wend && wend != want;
	*why = NULL;
	if (numbers) {
		int cmp = (a > b) - (a < b);
		return !strcmp(op, "=") ? cmp == 0 : !strcmp(op, "!=") ? cmp != 0 : !strcmp(op, "<") ? cmp < 0
		       : !strcmp(op, "<=") ? cmp <= 0 : !strcmp(op, ">") ? cmp > 0 : cmp >= 0;
	}
	if (strcmp(op, "=") && strcmp(op, "!=")) {
		*why = "is not a number";
		return false;
	}
	size_t wlen = strlen(want);
	if (*v == '"' && end - v >= 2) {   /* a string: compared without its quotes */
		v++, end--;
		if (*want == '"' && wlen >= 2)
			want++, wlen -= 2;
	}
	bool eq = (size_t)(end - v) == wlen && !strncmp(v, want, wlen);
	return !strcmp(op, "=") ? eq : !eq;
}

static void check_stats(lit_case *c, lit_run *r, const lit_directive *d)
{
	char why[512];
	const char *end, *v = r->stats ? lit_json_find(r->stats, d->pattern, &end, why, sizeof why) : NULL;
	if (!r->stats) {
		lit_fail(c, d->line, "STATS %s: the run printed no --stats=json object", r->label);
		lit_show_run(r, false, true);
		return;
	}
	if (!v) {
		lit_fail(c, d->line, "STATS %s: %s", r->label, why);
		return;
	}
	const char *bad;
	if (compare_value(v, end, d->op, d->text, &bad))
		return;
	lit_fail(c, d->line, "STATS %s: %s is %.*s%s%s, expected %s %s", r->label, d->pattern,
		 (int)(end - v), v, bad ? ", which " : "", bad ? bad : "", d->op, d->text);
}

void lit_check_expectations(lit_case *c, int run)
{
	lit_run *r = &c->runs[run];
	if (!r->has_exit)
		check_exit(c, r, r->line, 0);
	for (int i = 0; i < c->n_dirs; i++) {
		const lit_directive *d = &c->dirs[i];
		if (d->run != run)
			continue;
		if (d->kind == LIT_EXIT)
			check_exit(c, r, d->line, d->n);
		else if (d->kind == LIT_DIAG && d->pattern)
			check_diag_count(c, r, d);
		else if (d->kind == LIT_DIAG)
			check_diag_message(c, r, d);
		else if (d->kind == LIT_STDERR)
			check_stderr(c, r, d);
		else if (d->kind == LIT_STATS)
			check_stats(c, r, d);
	}
}
