/* diag.c: the list of diagnostics and its §5 printed form. */
#include "passrun/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"

void pr_diags_init(pr_diags *d, const char *file)
{
	memset(d, 0, sizeof *d);
	d->file = pr_xstrdup(file ? file : "passrun");
}

void pr_diags_free(pr_diags *d)
{
	for (int i = 0; i < d->n; i++) {
		pr_diag *x = &d->items[i];
		free(x->code);
		free(x->pass);
		free(x->method);
		free(x->node);
		free(x->message);
	}
	free(d->items);
	free(d->file);
	memset(d, 0, sizeof *d);
}

static char *dup_or_null(const char *s)
{
	return s ? pr_xstrdup(s) : NULL;
}

void pr_diags_add(pr_diags *d, pr_severity sev, const char *code, const char *pass,
		  const char *method, const char *node, int64_t bytes, const char *fmt, ...)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 8;
		d->items = pr_xrealloc(d->items, (size_t)d->cap * sizeof *d->items);
	}
	pr_diag *x = &d->items[d->n++];
	x->severity = sev;
	x->code = pr_xstrdup(code ? code : "");
	x->pass = pr_xstrdup(pass ? pass : "");
	x->method = dup_or_null(method);
	x->node = dup_or_null(node);
	x->bytes = bytes;
	va_list ap;
	va_start(ap, fmt);
	pr_err *tmp = pr_err_newv(fmt, ap);
	va_end(ap);
	x->message = pr_xstrdup(pr_err_message(tmp));
	pr_err_free(tmp);
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

void pr_diags_print(const pr_diags *d, int from, FILE *out)
{
	for (int i = from; i < d->n; i++) {
		const pr_diag *x = &d->items[i];
		fprintf(out, "%s: %s[%s] pass '%s' method '%s': %s\n", d->file,
			pr_severity_name(x->severity), x->code, x->pass,
			x->method ? x->method : "", x->message);
	}
}
