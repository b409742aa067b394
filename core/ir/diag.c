/* diag.c: the list of diagnostics and its printed form (docs/diagnostics.md).
 *
 * Printing keeps a tally per code, so that a program with 300,000 copies of
 * one warning prints print_limit of them and then one summary line, not
 * 300,000 lines nobody reads; the list itself keeps every one (--stats=json
 * prints them all). Adding counts per code too: a list that does not keep
 * messages formats only those of the first print_limit notes and warnings of
 * each code (and of every error), the only ones pr_diags_print can print,
 * since it prints in the order added. */
#include "passrun/diag.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"

/* Per code: how many notes and warnings were added, how many
 * pr_diags_print printed and how many it left out. */
typedef struct tally_entry {
	char *code;
	int added, printed, omitted;
} tally_entry;

struct pr_diag_tally {
	int n, cap;
	tally_entry *items;
	bool drop_unprinted;  /* !pr_diags_keep_messages */
	int last;             /* the entry found last: one code comes in runs */
};

void pr_diags_init(pr_diags *d, const char *file)
{
	memset(d, 0, sizeof *d);
	d->file = pr_xstrdup(file ? file : "passrun");
	d->tally = pr_xcalloc(1, sizeof *d->tally);
}

static tally_entry *tally_find(pr_diag_tally *t, const char *code)
{
	if (t->last < t->n && !strcmp(t->items[t->last].code, code))
		return &t->items[t->last];
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->items[i].code, code)) {
			t->last = i;
			return &t->items[i];
		}
	return NULL;
}

static tally_entry *tally_of(pr_diag_tally *t, const char *code)
{
	tally_entry *e = tally_find(t, code);
	if (e)
		return e;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 8;
		t->items = pr_xrealloc(t->items, (size_t)t->cap * sizeof *t->items);
	}
	t->items[t->n] = (tally_entry){pr_xstrdup(code), 0, 0, 0};
	t->last = t->n;
	return &t->items[t->n++];
}

static void tally_free(pr_diag_tally *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		free(t->items[i].code);
	free(t->items);
	free(t);
}

/* The items' code, pass, method and node strings, copied into chunks that
 * are freed together: a pass reporting 300,000 warnings makes no malloc per
 * string. */
struct pr_diag_chunk {
	struct pr_diag_chunk *next;
	size_t used, cap;
	char data[];
};

#define DIAG_CHUNK 16384

static char *strings_copy(pr_diags *d, const char *s)
{
	size_t n = strlen(s) + 1;
	struct pr_diag_chunk *c = d->strings;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > DIAG_CHUNK ? n : DIAG_CHUNK;
		c = pr_xmalloc(sizeof *c + cap);
		*c = (struct pr_diag_chunk){.next = d->strings, .cap = cap};
		d->strings = c;
	}
	char *out = c->data + c->used;
	memcpy(out, s, n);
	c->used += n;
	return out;
}

/* s's copy, or prev's when they are equal: one pass reports runs of one
 * code, pass and method. */
static char *string_like(pr_diags *d, const char *s, char *prev)
{
	if (!s)
		return NULL;
	return prev && (prev == s || !strcmp(prev, s)) ? prev : strings_copy(d, s);
}

static void strings_free(pr_diags *d)
{
	while (d->strings) {
		struct pr_diag_chunk *next = d->strings->next;
		free(d->strings);
		d->strings = next;
	}
}

void pr_diags_free(pr_diags *d)
{
	for (int i = 0; i < d->n; i++)
		free(d->items[i].message);
	free(d->items);
	free(d->file);
	tally_free(d->tally);
	strings_free(d);
	memset(d, 0, sizeof *d);
}

void pr_diags_keep_messages(pr_diags *d, bool keep)
{
	if (d->tally)
		d->tally->drop_unprinted = !keep;
}

/* Would the next diagnostic of code be within print_limit (added counts
 * the ones before it)? */
static bool within_limit(const pr_diags *d, pr_severity sev, int added)
{
	return d->print_limit <= 0 || sev == PR_SEV_ERROR || added < d->print_limit;
}

bool pr_diags_wants_message(const pr_diags *d, pr_severity sev, const char *code)
{
	if (!d->tally || !d->tally->drop_unprinted)
		return true;
	const tally_entry *t = tally_find(d->tally, code ? code : "");
	return within_limit(d, sev, t ? t->added : 0);
}

void pr_diags_addv(pr_diags *d, pr_severity sev, const char *code, const char *pass,
		   const char *method, const char *node, int64_t bytes, const char *fmt,
		   va_list ap)
{
	code = code ? code : "";
	tally_entry *t = sev != PR_SEV_ERROR && d->tally ? tally_of(d->tally, code) : NULL;
	bool wanted = !d->tally || !d->tally->drop_unprinted ||
		      within_limit(d, sev, t ? t->added : 0);
	if (t)
		t->added++;
	PR_GROW(d->items, d->n, d->cap);
	const pr_diag *prev = d->n ? &d->items[d->n - 1] : NULL;
	pr_diag *x = &d->items[d->n];
	x->severity = sev;
	x->code = string_like(d, code, prev ? prev->code : NULL);
	x->pass = string_like(d, pass ? pass : "", prev ? prev->pass : NULL);
	x->method = string_like(d, method, prev ? prev->method : NULL);
	x->node = string_like(d, node, NULL);
	x->bytes = bytes;
	x->flags = 0;
	x->message = wanted ? pr_xvasprintf(fmt, ap) : NULL;
	d->n++;
}

void pr_diags_add(pr_diags *d, pr_severity sev, const char *code, const char *pass,
		  const char *method, const char *node, int64_t bytes, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pr_diags_addv(d, sev, code, pass, method, node, bytes, fmt, ap);
	va_end(ap);
}

void pr_diags_flag_last(pr_diags *d, unsigned flags)
{
	PR_ASSERT(d->n > 0);
	d->items[d->n - 1].flags |= flags;
}

const char *pr_severity_name(pr_severity s)
{
	switch (s) {
	case PR_SEV_NOTE: return "note";
	case PR_SEV_WARNING: return "warning";
	case PR_SEV_ERROR: return "error";
	}
	return "?";
}

int pr_diags_count(const pr_diags *d, pr_severity s)
{
	int n = 0;
	for (int i = 0; i < d->n; i++)
		n += d->items[i].severity == s;
	return n;
}

int pr_diags_errors(const pr_diags *d)
{
	int n = pr_diags_count(d, PR_SEV_ERROR);
	if (d->werror)
		n += pr_diags_count(d, PR_SEV_WARNING);
	return n;
}

/* Whether print_limit leaves x out (and count it either way). A message
 * that was not kept is past the limit by construction. */
static bool left_out(const pr_diags *d, const pr_diag *x)
{
	if (d->print_limit <= 0 || x->severity == PR_SEV_ERROR || !d->tally)
		return false;
	tally_entry *t = tally_of(d->tally, x->code);
	if (t->printed < d->print_limit && x->message) {
		t->printed++;
		return false;
	}
	t->omitted++;
	return true;
}

void pr_diags_print(const pr_diags *d, int from, FILE *out)
{
	for (int i = from; i < d->n; i++) {
		const pr_diag *x = &d->items[i];
		if (left_out(d, x))
			continue;
		fprintf(out, "%s: %s[%s] pass '%s' method '%s': %s\n", d->file,
			pr_severity_name(x->severity), x->code, x->pass,
			x->method ? x->method : "", x->message);
	}
}

static void print_code_summary(const pr_diags *d, const tally_entry *t, FILE *out)
{
	int count = 0;
	int64_t bytes = 0;
	const pr_diag *largest = NULL, *first = NULL;
	for (int i = 0; i < d->n; i++) {
		const pr_diag *x = &d->items[i];
		if (strcmp(x->code, t->code) || x->severity == PR_SEV_ERROR)
			continue;
		count++;
		first = first ? first : x;
		if (x->bytes > 0 && __builtin_add_overflow(bytes, x->bytes, &bytes))
			bytes = INT64_MAX;
		if (x->bytes > 0 && (!largest || x->bytes > largest->bytes))
			largest = x;
	}
	fprintf(out, "%s: note: %d %s[%s] in all, %d printed (--all-diagnostics prints every one)",
		d->file, count, pr_severity_name(first ? first->severity : PR_SEV_WARNING), t->code,
		t->printed);
	if (largest)
		fprintf(out, "; %lld bytes in all, the largest %lld (%%%s, method '%s')",
			(long long)bytes, (long long)largest->bytes, largest->node ? largest->node : "?",
			largest->method ? largest->method : "");
	fputc('\n', out);
}

int pr_diags_print_summary(const pr_diags *d, FILE *out)
{
	int lines = 0;
	for (int i = 0; d->tally && i < d->tally->n; i++)
		if (d->tally->items[i].omitted) {
			print_code_summary(d, &d->tally->items[i], out);
			lines++;
		}
	return lines;
}
