/* diag.h: diagnostics, the user-facing findings of passes and the verifier.
 *
 * A diagnostic has a stable code (W-CONSTANT-COPY, E-PLACEMENT, ...), the pass
 * and method it came from, the node (tensor) it is about and its size in bytes.
 * Printed, one line each (docs/diagnostics.md):
 *   FILE: severity[CODE] pass 'NAME' method 'M': message
 * The list keeps the order they were reported in; --stats=json prints it too.
 * A list that does not keep messages (pr_diags_keep_messages) stores only the
 * notes and warnings it can print and counts the rest: items then leaves
 * those out, pr_diags_count and pr_diags_errors never do.
 * Its strings belong to the list (items may share them): read them, never
 * free or keep them past pr_diags_free. */
#ifndef PASSRUN_DIAG_H
#define PASSRUN_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pr_severity { PR_SEV_NOTE, PR_SEV_WARNING, PR_SEV_ERROR } pr_severity;

/* Bits of pr_diag.flags: what a diagnostic says beyond its code, so that a
 * reader (the --dot picture) knows it without knowing any plugin's codes. */
#define PR_DIAG_PER_CALL_COPY 0x1u  /* node is a tensor copied between the host and a
				       device on every call, or that copy itself */

typedef struct pr_diag {
	pr_severity severity;
	char *code;     /* "W-CONSTANT-COPY" */
	char *pass;     /* the pass (or "verifier") that reported it */
	char *method;   /* method or delegate name; may be NULL */
	char *node;     /* the tensor or node it is about; may be NULL */
	int64_t bytes;  /* the tensor's size; -1 when none */
	char *message;  /* never NULL */
	unsigned flags; /* PR_DIAG_* bits; 0 unless the reporter set some */
} pr_diag;

typedef struct pr_diag_tally pr_diag_tally;

typedef struct pr_diags {
	int n, cap;     /* n: the diagnostics stored, not those only counted
			   (pr_diags_keep_messages); pr_diags_count counts all */
	pr_diag *items;
	char *file;     /* the program file, for the printed prefix */
	bool werror;    /* warnings count as errors (--werror) */
	int print_limit;       /* pr_diags_print prints at most this many notes and
				  warnings of one code (errors always); 0: all */
	pr_diag_tally *tally;  /* private: what was printed and left out, per code */
	struct pr_diag_chunk *strings;  /* private: where the items' strings live */
} pr_diags;

void pr_diags_init(pr_diags *d, const char *file);
void pr_diags_free(pr_diags *d);
/* Whether every diagnostic is kept as an item (the default: --stats=json,
 * --dot, the Python API and tests read them all). When not, a note or
 * warning past print_limit of its code is only counted: its severity, bytes,
 * node and method go into the summary line (pr_diags_print_summary) and
 * pr_diags_count, and it is neither stored nor formatted: pr_diags_print
 * would not print it, and storing 300,000 of them costs more than the pass
 * that found them. */
void pr_diags_keep_messages(pr_diags *d, bool keep);
/* Whether a diagnostic of this severity and code added next is stored with
 * its message: callers that build a message in pieces ask first. */
bool pr_diags_wants_message(const pr_diags *d, pr_severity sev, const char *code);
void pr_diags_add(pr_diags *d, pr_severity sev, const char *code, const char *pass,
		  const char *method, const char *node, int64_t bytes,
		  const char *fmt, ...) __attribute__((format(printf, 8, 9)));
void pr_diags_addv(pr_diags *d, pr_severity sev, const char *code, const char *pass,
		   const char *method, const char *node, int64_t bytes,
		   const char *fmt, va_list ap) __attribute__((format(printf, 8, 0)));
/* Adds PR_DIAG_* flags to the diagnostic added last (there must be one);
 * nothing when that one was only counted. */
void pr_diags_flag_last(pr_diags *d, unsigned flags);
const char *pr_severity_name(pr_severity s);   /* "warning" */
/* Errors, plus warnings when werror is set; counted ones too. */
int pr_diags_errors(const pr_diags *d);
/* Every diagnostic of severity s added, stored or only counted. */
int pr_diags_count(const pr_diags *d, pr_severity s);
/* Prints items [from, n), one line each:
 *   FILE: severity[CODE] pass 'NAME' method 'M': message
 * past print_limit of a code, the rest of that code is counted, not printed
 * (as the ones only counted, which are no items, never are). */
void pr_diags_print(const pr_diags *d, int from, FILE *out);
/* One line per code that print_limit cut short: how many there are (stored
 * and only counted), how many bytes they name in all, the largest and where:
 *   FILE: note: 321419 warning[W-CONSTANT-COPY] in all, 10 printed; ...
 * Returns the number of lines. */
int pr_diags_print_summary(const pr_diags *d, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
