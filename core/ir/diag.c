/* diag.c: the list of diagnostics and its printed form (docs/diagnostics.md).
 *
 * Printing keeps a tally per code, so that a program with 300,000 copies of
 * one warning prints print_limit of them and then one summary line, not
 * 300,000 lines nobody reads. The tally also holds what that line says (how
 * many, bytes in all, the largest and where), gathered as they are added: a
 * list that does not keep messages stores only the first print_limit notes
 * and warnings of each code (and every error), the only ones pr_diags_print
 * can print, since it prints in the order added, and counts the rest in the
 * tally alone. A list that keeps messages (--stats=json, --dot, the Python
 * API) stores every one. */
#include "passrun/diag.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"

/* Per code: its notes and warnings, what the summary line says of them, and
 * how many pr_diags_print printed and left out. */
typedef struct tally_entry {
	char *code;
	int added;            /* every one, stored or only counted */
	int counted;          /* added but not stored: past print_limit, not kept */
	int printed, omitted; /* by pr_diags_print, of the stored ones */
	pr_severity first;    /* the severity of the first, for the summary */
	int64_t bytes;        /* the positive sizes added up, INT64_MAX past it */
	int64_t largest;      /* the largest size; 0 when none was positive */
	char *largest_node, *largest_method;  /* where (owned; may be NULL) */
} tally_entry;

struct pr_diag_tally {
	int n, cap;
	tally_entry *items;
	bool drop_unprinted;  /* !pr_diags_keep_messages */
	bool last_counted;    /* the diagnostic added last was only counted */
	int last;             /* the entry found last: one code comes in runs */
	int counted[PR_SEV_ERROR];  /* notes and warnings only counted, by severity */
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

static tally_entry *tally_of(pr_diag_tally *t, const char *code, pr_severity sev)
{
	tally_entry *e = tally_find(t, code);
	if (e)
		return e;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 8;
		t->items = pr_xrealloc(t->items, (size_t)t->cap * sizeof *t->items);
	}
	t->items[t->n] = (tally_entry){.code = pr_xstrdup(code), .first = sev};
	t->last = t->n;
	return &t->items[t->n++];
}

static char *text_dup(const char *s)
{
	return s ? pr_xstrdup(s) : NULL;
}

/* A note or warning of e's code with this size, where: the summary's sum and
 * largest (the first of the largest, as the line names one). */
static void tally_bytes(tally_entry *e, int64_t bytes, const char *node, const char *method)
{
	if (bytes <= 0)
		return;
	if (__builtin_add_overflow(e->bytes, bytes, &e->bytes))
		e->bytes = INT64_MAX;
	if (bytes <= e->largest)
		return;
	e->largest = bytes;
	free(e->largest_node);
	e->largest_node = text_dup(node);
	if (!method || !e->largest_method || strcmp(method, e->largest_method)) {
		free(e->largest_method);
		e->largest_method = text_dup(method);
	}
}

static void tally_free(pr_diag_tally *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++) {
		free(t->items[i].code);
		free(t->items[i].largest_node);
		free(t->items[i].largest_method);
	}
	free(t->items);
	free(t);
}

/* The items' strings, messages included, written into chunks that are freed
 * together: a pass reporting 300,000 warnings makes no malloc per string. */
struct pr_diag_chunk {
	struct pr_diag_chunk *next;
	size_t used, cap;
	char data[];
};

#define DIAG_CHUNK 65536

/* A chunk with room for n bytes, made the current one if need be. */
static struct pr_diag_chunk *strings_room(pr_diags *d, size_t n)
{
	struct pr_diag_chunk *c = d->strings;
	if (c && c->cap - c->used >= n)
		return c;
	size_t cap = n > DIAG_CHUNK ? n : DIAG_CHUNK;
	c = pr_xmalloc(sizeof *c + cap);
	*c = (struct pr_diag_chunk){.next = d->strings, .cap = cap};
	d->strings = c;
	return c;
}

static char *strings_copy(pr_diags *d, const char *s)
{
	size_t n = strlen(s) + 1;
	struct pr_diag_chunk *c = strings_room(d, n);
	char *out = c->data + c->used;
	memcpy(out, s, n);
	c->used += n;
	return out;
}

/* fmt formatted in place at the end of the current chunk; only a message
 * that does not fit is formatted again, into a new one. */
static char *strings_format(pr_diags *d, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	struct pr_diag_chunk *c = d->strings;
	size_t room = c ? c->cap - c->used : 0;
	int len = vsnprintf(c ? c->data + c->used : NULL, room, fmt, ap);
	PR_ASSERT(len >= 0);
	size_t n = (size_t)len + 1;
	if (n > room) {
		c = strings_room(d, n);
		vsnprintf(c->data + c->used, n, fmt, again);
	}
	va_end(again);
	char *out = c->data + c->used;
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

/* Notes and warnings go by print_limit; errors (and a severity of no name,
 * from a broken reporter) are always stored and printed. */
static bool limited(pr_severity sev)
{
	return (unsigned)sev < PR_SEV_ERROR;
}

/* Whether the next diagnostic of a code with added before it is stored. */
static bool stored(const pr_diags *d, pr_severity sev, int added)
{
	return !d->tally || !d->tally->drop_unprinted || d->print_limit <= 0 || !limited(sev) ||
	       added < d->print_limit;
}

bool pr_diags_wants_message(const pr_diags *d, pr_severity sev, const char *code)
{
	if (!d->tally || !d->tally->drop_unprinted)
		return true;
	const tally_entry *t = tally_find(d->tally, code ? code : "");
	return stored(d, sev, t ? t->added : 0);
}

/* A note or warning past print_limit that nobody reads: the tally alone. */
static void count_only(pr_diags *d, tally_entry *t, pr_severity sev)
{
	t->counted++;
	d->tally->counted[sev]++;
	d->tally->last_counted = true;
}

static void store(pr_diags *d, pr_severity sev, const char *code, const char *pass,
		  const char *method, const char *node, int64_t bytes, const char *fmt,
		  va_list ap)
{
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
	x->message = strings_format(d, fmt, ap);
	d->n++;
	if (d->tally)
		d->tally->last_counted = false;
}

void pr_diags_addv(pr_diags *d, pr_severity sev, const char *code, const char *pass,
		   const char *method, const char *node, int64_t bytes, const char *fmt,
		   va_list ap)
{
	code = code ? code : "";
	tally_entry *t = limited(sev) && d->tally ? tally_of(d->tally, code, sev) : NULL;
	if (t && !stored(d, sev, t->added))
		count_only(d, t, sev);
	else
		store(d, sev, code, pass, method, node, bytes, fmt, ap);
	if (!t)
		return;
	t->added++;
	tally_bytes(t, bytes, node, method);
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
	if (d->tally && d->tally->last_counted)
		return;
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
	int n = limited(s) && d->tally ? d->tally->counted[s] : 0;
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

/* Whether print_limit leaves x out (and count it either way). */
static bool left_out(const pr_diags *d, const pr_diag *x)
{
	if (d->print_limit <= 0 || !limited(x->severity) || !d->tally)
		return false;
	tally_entry *t = tally_of(d->tally, x->code, x->severity);
	if (t->printed < d->print_limit) {
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
	fprintf(out, "%s: note: %d %s[%s] in all, %d printed (--all-diagnostics prints every one)",
		d->file, t->added, pr_severity_name(t->first), t->code, t->printed);
	if (t->largest)
		fprintf(out, "; %lld bytes in all, the largest %lld (%%%s, method '%s')",
			(long long)t->bytes, (long long)t->largest,
			t->largest_node ? t->largest_node : "?",
			t->largest_method ? t->largest_method : "");
	fputc('\n', out);
}

int pr_diags_print_summary(const pr_diags *d, FILE *out)
{
	int lines = 0;
	for (int i = 0; d->tally && i < d->tally->n; i++) {
		const tally_entry *t = &d->tally->items[i];
		if (t->omitted || t->counted) {
			print_code_summary(d, t, out);
			lines++;
		}
	}
	return lines;
}
