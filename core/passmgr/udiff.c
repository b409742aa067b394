/* udiff.c: a unified diff of two texts, line by line (--print-changed=diff).
 *
 * Myers' O(ND) algorithm (greedy forward search, keeping each round's
 * furthest-reaching paths to walk the edit script back): a pass that edits a
 * few lines of a large program costs time and memory in proportion to the
 * edits, not to the product of the lengths. Hunks carry 3 lines of context,
 * as diff -u. */
#include <stdlib.h>
#include <string.h>

#include "passrun/strbuf.h"
#include "pm_run.h"

typedef struct lines {
	int n;
	const char **start;
	int *len;
} lines;

static lines split(const char *text)
{
	lines l = {0, NULL, NULL};
	int cap = 0;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		if (l.n == cap) {
			cap = cap ? 2 * cap : 64;
			l.start = pr_xrealloc(l.start, (size_t)cap * sizeof *l.start);
			l.len = pr_xrealloc(l.len, (size_t)cap * sizeof *l.len);
		}
		l.start[l.n] = p;
		l.len[l.n++] = len;
		p += len + (nl ? 1 : 0);
	}
	return l;
}

static bool same(const lines *a, int i, const lines *b, int j)
{
	return a->len[i] == b->len[j] && !memcmp(a->start[i], b->start[j], (size_t)a->len[i]);
}

/* op[k] for the edit script: ' ' keep, '-' delete from a, '+' insert from b. */
typedef struct script {
	int n;
	char *op;
} script;

/* Past this many edits the search would keep O(D^2) ints: the diff is then
 * every line of a removed and every line of b added, one hunk. */
#define MAX_EDITS 4096

static script replace_all(int n, int m)
{
	script s = {n + m, pr_xcalloc((size_t)(n + m) + 1, 1)};
	memset(s.op, '-', (size_t)n);
	memset(s.op + n, '+', (size_t)m);
	return s;
}

/* v after round d, diagonals -d..d, is kept in trace[d][k + d]. */
static int at(int *const *trace, int d, int k)
{
	return trace[d][k + d];
}

static script myers(const lines *a, const lines *b)
{
	int n = a->n, m = b->n, max = n + m, off = max + 1;
	int *v = pr_xcalloc((size_t)(2 * max + 3), sizeof *v);
	int limit = max < MAX_EDITS ? max : MAX_EDITS;
	int **trace = pr_xcalloc((size_t)limit + 2, sizeof *trace);
	int d_end = -1;
	for (int d = 0; d <= limit && d_end < 0; d++) {
		for (int k = -d; k <= d && d_end < 0; k += 2) {
			bool down = k == -d || (k != d && v[off + k - 1] < v[off + k + 1]);
			int x = down ? v[off + k + 1] : v[off + k - 1] + 1;
			int y = x - k;
			while (x < n && y < m && same(a, x, b, y))
				x++, y++;
			v[off + k] = x;
			if (x >= n && y >= m)
				d_end = d;
		}
		trace[d] = pr_xcalloc((size_t)(2 * d + 1), sizeof *v);
		memcpy(trace[d], v + off - d, (size_t)(2 * d + 1) * sizeof *v);
	}
	script s = d_end < 0 ? replace_all(n, m) : (script){0, pr_xcalloc((size_t)max + 1, 1)};
	/* Walk back from (n, m), writing the script from its end. */
	char *rev = pr_xcalloc((size_t)max + 1, 1);
	int x = n, y = m, r = 0;
	for (int d = d_end; d > 0; d--) {
		int k = x - y;
		bool down = k == -d || (k != d && at(trace, d - 1, k - 1) < at(trace, d - 1, k + 1));
		int pk = down ? k + 1 : k - 1;
		int px = at(trace, d - 1, pk), py = px - pk;
		while (x > px && y > py)
			rev[r++] = ' ', x--, y--;
		rev[r++] = down ? '+' : '-';
		x = px, y = py;
	}
	while (d_end >= 0 && x > 0 && y > 0)
		rev[r++] = ' ', x--, y--;
	for (int i = 0; d_end >= 0 && i < r; i++)
		s.op[i] = rev[r - 1 - i];
	s.n = d_end >= 0 ? r : s.n;
	free(rev);
	for (int d = 0; d <= limit + 1; d++)
		free(trace[d]);
	free(trace);
	free(v);
	return s;
}

#define CONTEXT 3

static void put_line(pr_strbuf *b, char mark, const lines *l, int i)
{
	pr_strbuf_printf(b, "%c%.*s\n", mark, l->len[i], l->start[i]);
}

/* One hunk: script ops [from, to), starting at lines ai of a and bi of b. */
static void put_hunk(pr_strbuf *b, const script *s, int from, int to, int ai, int bi,
		     const lines *la, const lines *lb)
{
	int na = 0, nb = 0;
	for (int i = from; i < to; i++) {
		na += s->op[i] != '+';
		nb += s->op[i] != '-';
	}
	pr_strbuf_printf(b, "@@ -%d,%d +%d,%d @@\n", na ? ai + 1 : ai, na, nb ? bi + 1 : bi, nb);
	for (int i = from; i < to; i++) {
		char op = s->op[i];
		put_line(b, op, op == '+' ? lb : la, op == '+' ? bi : ai);
		ai += op != '+';
		bi += op != '-';
	}
}

char *pm_unified_diff(const char *a, const char *b, const char *label_a, const char *label_b)
{
	lines la = split(a), lb = split(b);
	script s = myers(&la, &lb);
	pr_strbuf out;
	pr_strbuf_init(&out);
	int ai = 0, bi = 0;   /* lines of a and b before op i */
	for (int i = 0; i < s.n;) {
		if (s.op[i] == ' ') {
			ai++, bi++, i++;
			continue;
		}
		/* A hunk: back up CONTEXT kept lines, run to CONTEXT*2 kept lines
		 * in a row (or the end). */
		int from = i, back = 0;
		while (from > 0 && back < CONTEXT && s.op[from - 1] == ' ')
			from--, back++;
		int to = i, kept = 0;
		while (to < s.n && kept <= 2 * CONTEXT) {
			kept = s.op[to] == ' ' ? kept + 1 : 0;
			to++;
		}
		if (kept > CONTEXT)
			to -= kept - CONTEXT;
		if (!out.len)
			pr_strbuf_printf(&out, "--- %s\n+++ %s\n", label_a, label_b);
		put_hunk(&out, &s, from, to, ai - back, bi - back, &la, &lb);
		for (int k = i; k < to; k++) {
			ai += s.op[k] != '+';
			bi += s.op[k] != '-';
		}
		i = to;
	}
	free(s.op);
	free(la.start);
	free(la.len);
	free(lb.start);
	free(lb.len);
	return out.data ? pr_strbuf_take(&out) : pr_xstrdup("");
}
