/* match.c: the printed program against CHECK, CHECK-NEXT, CHECK-NOT,
 * CHECK-DAG and COUNT, FileCheck's rules (texts and {{regex}} patterns,
 * pattern.c):
 *
 *   - CHECK finds its text after the end of the previous match (possibly on
 *     the same line);
 *   - CHECK-NEXT finds it the same way, and it must be on the line right
 *     after the line the previous match ended on;
 *   - CHECK-NOT: its text is not between the previous match and the next
 *     one (the end of the output if none follows);
 *   - consecutive CHECK-DAGs match in any order, without overlapping, after
 *     the previous match; the next match is looked for after the furthest;
 *   - COUNT N text: exactly N non-overlapping times in the whole output.
 *
 * Each run has its own position; a run's directives match in file order.
 * After a failed CHECK the run's later CHECKs are not tried (they would only
 * repeat the failure); its COUNTs and other expectations still are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lit.h"

typedef struct scan {
	lit_case *c;
	lit_run *r;
	const char *pos;       /* where the next search starts */
	int *nots, n_nots;     /* CHECK-NOTs waiting for the next match */
	bool stopped;          /* a positive match failed */
} scan;

static const lit_directive *dir(const scan *s, int i)
{
	return &s->c->dirs[i];
}

/* The first match of d from s->pos on; its end in *end. */
static const char *find(const scan *s, const lit_directive *d, const char *from, const char **end)
{
	return lit_pattern_find(&d->pat, s->r->out, from, end);
}

static void not_found(scan *s, const lit_directive *d)
{
	const char *end = s->r->out + strlen(s->r->out);
	lit_fail(s->c, d->line, "%s %s: expected text not found in the printed program",
		 lit_kind_name(d->kind), s->r->label);
	lit_note("expected: %s", d->text);
	char *at = lit_line_at(s->r->out, s->pos);
	lit_note("scanning from output line %d: %s", lit_line_of(s->r->out, s->pos), at);
	free(at);
	const char *near = lit_nearest_line(s->pos, end, d->text);
	if (near) {
		char *line = lit_line_at(s->r->out, near);
		lit_note("nearest match, output line %d: %s", lit_line_of(s->r->out, near), line);
		free(line);
	}
	lit_show_run(s->r, true, s->r->status != 0);
	s->stopped = true;
}

/* The waiting CHECK-NOTs, over [s->pos, to). */
static void check_nots(scan *s, const char *to)
{
	for (int i = 0; i < s->n_nots; i++) {
		const lit_directive *d = dir(s, s->nots[i]);
		const char *end, *at = find(s, d, s->pos, &end);
		if (!at || end > to)
			continue;
		char *line = lit_line_at(s->r->out, at);
		lit_fail(s->c, d->line, "CHECK-NOT %s: text found where it must not be", s->r->label);
		lit_note("not expected: %s", d->text);
		lit_note("found on output line %d: %s", lit_line_of(s->r->out, at), line);
		free(line);
		lit_show_run(s->r, true, false);
	}
	s->n_nots = 0;
}

static void matched(scan *s, const char *at, const char *end)
{
	check_nots(s, at);
	s->pos = end;
}

static int newlines(const char *a, const char *b)
{
	int n = 0;
	for (; a < b; a++)
		n += *a == '\n';
	return n;
}

static void check_one(scan *s, const lit_directive *d)
{
	const char *end, *at = find(s, d, s->pos, &end);
	if (!at) {
		not_found(s, d);
		return;
	}
	int gap = d->kind == LIT_CHECK_NEXT ? newlines(s->pos, at) : 1;
	if (gap != 1) {
		char *line = lit_line_at(s->r->out, at);
		lit_fail(s->c, d->line, "CHECK-NEXT %s: %s", s->r->label,
			 gap ? "the text is not on the line after the previous match"
			     : "the text is on the same line as the previous match");
		lit_note("expected on output line %d: %s", lit_line_of(s->r->out, s->pos) + 1, d->text);
		lit_note("found on output line %d: %s", lit_line_of(s->r->out, at), line);
		free(line);
		lit_show_run(s->r, true, false);
		s->stopped = true;
		return;
	}
	matched(s, at, end);
}

/* True when [a, e) overlaps one of the group's matches (an empty match
 * overlaps the one it is inside of or at the start of). */
static bool overlaps(const char **starts, const char **ends, int k, const char *a, const char *e)
{
	for (int i = 0; i < k; i++)
		if (a < ends[i] && (e > starts[i] || a >= starts[i]))
			return true;
	return false;
}

/* The CHECK-DAGs idx[0..n): each at its first free place after s->pos. */
static void check_dag_group(scan *s, const int *idx, int n)
{
	const char **starts = calloc((size_t)n, sizeof *starts), **ends = calloc((size_t)n, sizeof *ends);
	const char *first = NULL, *far = s->pos;
	int k = 0;
	for (int i = 0; i < n && !s->stopped; i++) {
		const lit_directive *d = dir(s, idx[i]);
		const char *end, *at = find(s, d, s->pos, &end);
		while (at && *at && overlaps(starts, ends, k, at, end))
			at = find(s, d, at + 1, &end);
		if (!at || overlaps(starts, ends, k, at, end)) {
			not_found(s, d);
			break;
		}
		starts[k] = at;
		ends[k++] = end;
		if (!first || at < first)
			first = at;
		if (end > far)
			far = end;
	}
	if (!s->stopped) {
		check_nots(s, first);
		s->pos = far;
	}
	free(starts);
	free(ends);
}

static void check_count(lit_case *c, lit_run *r, const lit_directive *d)
{
	int got = lit_pattern_count(&d->pat, r->out);
	if (got == d->n)
		return;
	lit_fail(c, d->line, "COUNT %s: '%s' is in the printed program %d time%s, expected %ld",
		 r->label, d->pattern, got, got == 1 ? "" : "s", d->n);
	lit_show_run(r, true, false);
}

void lit_check_output(lit_case *c, int run)
{
	scan s = {.c = c, .r = &c->runs[run], .pos = c->runs[run].out};
	s.nots = calloc((size_t)c->n_dirs + 1, sizeof *s.nots);
	int *group = calloc((size_t)c->n_dirs + 1, sizeof *group), n_group = 0;
	for (int i = 0; i <= c->n_dirs; i++) {
		const lit_directive *d = i < c->n_dirs ? &c->dirs[i] : NULL;
		if (d && d->run != run)
			continue;
		if (n_group && (!d || d->kind != LIT_CHECK_DAG) && !s.stopped) {
			check_dag_group(&s, group, n_group);
			n_group = 0;
		}
		if (!d)
			break;
		if (d->kind == LIT_COUNT)
			check_count(c, s.r, d);
		else if (s.stopped)
			continue;
		else if (d->kind == LIT_CHECK || d->kind == LIT_CHECK_NEXT)
			check_one(&s, d);
		else if (d->kind == LIT_CHECK_NOT)
			s.nots[s.n_nots++] = i;
		else if (d->kind == LIT_CHECK_DAG)
			group[n_group++] = i;
	}
	if (!s.stopped)
		check_nots(&s, s.r->out + strlen(s.r->out));
	free(s.nots);
	free(group);
}
