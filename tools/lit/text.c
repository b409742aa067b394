/* text.c: strings, lines, messages and the nearest match of a failed search.
 *
 * The nearest match is FileCheck's "possible intended match": the line of
 * the searched range that needs the fewest single-character edits to contain
 * the expected text (approximate substring matching, Sellers' algorithm:
 * the match may start anywhere in the line, so the row starts at zero). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lit.h"

void lit_fail(lit_case *c, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s:%d: error: ", c->path, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	c->failures++;
}

void lit_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("  ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

char *lit_strndup(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d)
		abort();
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

char *lit_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (size_t got; buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
		len += got;
		if (cap - len < 2)
			buf = realloc(buf, cap *= 2);
	}
	if (!buf)
		abort();
	buf[len] = 0;
	fclose(f);
	return buf;
}

int lit_count(const char *hay, const char *needle)
{
	int n = 0;
	size_t len = strlen(needle);
	for (const char *p = hay; len && (p = strstr(p, needle)); p += len)
		n++;
	return n;
}

int lit_line_of(const char *text, const char *p)
{
	int line = 1;
	for (const char *s = text; s < p; s++)
		line += *s == '\n';
	return line;
}

char *lit_line_at(const char *text, const char *p)
{
	const char *a = p, *b = p;
	while (a > text && a[-1] != '\n')
		a--;
	while (*b && *b != '\n')
		b++;
	return lit_strndup(a, (size_t)(b - a));
}

/* Runs the edit-distance table of a[0, m) against b[0, n) down to its last
 * row, in row (n + 1 entries), which holds the first row on entry: 0..n to
 * match all of b, all 0 to match a anywhere in b. */
static void edit_rows(const char *a, size_t m, const char *b, size_t n, size_t *row)
{
	for (size_t i = 1; i <= m; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= n; j++) {
			size_t up = row[j], v = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			diag = up;
			row[j] = v;
		}
	}
}

/* Fewest edits that make some substring of line[0, n) equal needle. */
static size_t substring_distance(const char *needle, const char *line, size_t n)
{
	size_t *row = calloc(n + 1, sizeof *row), best;
	if (!row)
		abort();
	edit_rows(needle, strlen(needle), line, n, row);
	best = row[0];
	for (size_t j = 1; j <= n; j++)
		if (row[j] < best)
			best = row[j];
	free(row);
	return best;
}

const char *lit_nearest_line(const char *from, const char *to, const char *needle)
{
	const char *best = NULL;
	size_t best_d = strlen(needle) / 2 + 1;
	for (const char *s = from; s < to;) {
		const char *e = memchr(s, '\n', (size_t)(to - s));
		if (!e)
			e = to;
		size_t d = substring_distance(needle, s, (size_t)(e - s));
		if (d < best_d) {
			best_d = d;
			best = s;
		}
		s = e + 1;
	}
	return best;
}

size_t lit_edit_distance(const char *a, const char *b)
{
	size_t n = strlen(b), *row = malloc((n + 1) * sizeof *row), d;
	if (!row)
		abort();
	for (size_t j = 0; j <= n; j++)
		row[j] = j;
	edit_rows(a, strlen(a), b, n, row);
	d = row[n];
	free(row);
	return d;
}

char *lit_strip_mem(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	if (!out)
		abort();
	while (*s) {
		if (!strncmp(s, "{mem=", 5)) {
			while (*s && *s != '}')
				s++;
			if (*s)
				s++;
		} else if (!strncmp(s, ", mem=", 6)) {
			while (*s && *s != '}')
				s++;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
	return out;
}

/* Prints text indented, at most max lines (the rest counted). */
static void show_text(const char *what, const char *text, int max)
{
	if (!*text) {
		lit_note("%s: (empty)", what);
		return;
	}
	lit_note("%s:", what);
	int n = 0;
	for (const char *s = text; *s; n++) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (n < max)
			fprintf(stderr, "  %4d | %.*s\n", n + 1, (int)len, s);
		s += len + (e != NULL);
	}
	if (n > max)
		lit_note("... %d more lines", n - max);
}

void lit_show_run(lit_run *r, bool out, bool err)
{
	lit_note("run %s: %s (exit %d)", r->label, r->command, r->status);
	if (out && !r->shown_out)
		show_text("printed program", r->out, 200);
	if (err && !r->shown_err)
		show_text("stderr", r->err, 60);
	r->shown_out |= out;
	r->shown_err |= err;
}
