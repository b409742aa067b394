/* error.h: errors as values.
 *
 * A function that can fail on bad input returns a pr_err * (NULL on success).
 * The error owns a message that already says what went wrong and where
 * (FILE:LINE:COL, a byte offset, a node's name), so callers only add context
 * and print it. A library function never exits. Broken invariants of our own
 * are assertions (PR_ASSERT), not errors. */
#ifndef PASSRUN_ERROR_H
#define PASSRUN_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pr_err pr_err;

pr_err *pr_err_new(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
pr_err *pr_err_newv(const char *fmt, va_list ap);
/* Returns err with "PREFIX: " in front of its message (err may be NULL). */
pr_err *pr_err_wrap(pr_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *pr_err_message(const pr_err *err);
void pr_err_free(pr_err *err);

/* Like assert(), but always on, naming the file and line. */
#define PR_ASSERT(cond) \
	((cond) ? (void)0 : pr_assert_fail(#cond, __FILE__, __LINE__))
_Noreturn void pr_assert_fail(const char *cond, const char *file, int line);

/* malloc and friends that abort (as an invariant failure) on out-of-memory. */
void *pr_xmalloc(size_t n);
void *pr_xcalloc(size_t n, size_t size);
void *pr_xrealloc(void *p, size_t n);
/* Faults in, writable, every page that bytes [p, p + n) touch (they must be
 * mapped: a heap block's are), in one call, for memory the caller is about
 * to write: a fault per page on first write costs 3-4 us on a virtual
 * machine, and a big program's arrays (one entry per node, a hash table
 * probed all over) are tens of thousands of pages. Pages faulted in already
 * cost next to nothing; pages never written stay resident for nothing, so
 * only for memory that will be written (nearly) whole. A hint: a kernel
 * without MADV_POPULATE_WRITE (before Linux 5.14) faults them on first
 * touch, as before. */
void pr_pages_fill(void *p, size_t n);
char *pr_xstrdup(const char *s);
char *pr_xstrndup(const char *s, size_t n);
char *pr_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *pr_xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Makes room for one more element at arr[n]: when n has reached cap, cap
 * doubles (from 8) and arr is reallocated. The growth code of every array
 * that grows by appending; arr, n and cap are lvalues evaluated more than
 * once. */
#define PR_GROW(arr, n, cap)                                                       \
	do {                                                                       \
		if ((n) >= (cap)) {                                                \
			(cap) = (cap) ? 2 * (cap) : 8;                             \
			(arr) = pr_xrealloc((arr), (size_t)(cap) * sizeof *(arr)); \
		}                                                                  \
	} while (0)

#ifdef __cplusplus
}
#endif
#endif
