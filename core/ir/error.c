/* error.c: errors as values, and allocation that treats out-of-memory as a
 * broken invariant (there is nothing useful a pass can do about it). */
#include "passrun/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct pr_err {
	char *message;
};

char *pr_xvasprintf(const char *fmt, va_list ap)
{
	va_list copy;
	va_copy(copy, ap);
	int n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	PR_ASSERT(n >= 0);
	char *s = pr_xmalloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

pr_err *pr_err_newv(const char *fmt, va_list ap)
{
	pr_err *e = pr_xmalloc(sizeof *e);
	e->message = pr_xvasprintf(fmt, ap);
	return e;
}

pr_err *pr_err_new(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	pr_err *e = pr_err_newv(fmt, ap);
	va_end(ap);
	return e;
}

pr_err *pr_err_wrap(pr_err *err, const char *fmt, ...)
{
	if (!err)
		return NULL;
	va_list ap;
	va_start(ap, fmt);
	char *prefix = pr_xvasprintf(fmt, ap);
	va_end(ap);
	char *msg = pr_xasprintf("%s: %s", prefix, err->message);
	free(prefix);
	free(err->message);
	err->message = msg;
	return err;
}

const char *pr_err_message(const pr_err *err)
{
	return err ? err->message : "";
}

void pr_err_free(pr_err *err)
{
	if (!err)
		return;
	free(err->message);
	free(err);
}

_Noreturn void pr_assert_fail(const char *cond, const char *file, int line)
{
	fprintf(stderr, "passrun: internal error: %s:%d: assertion failed: %s\n", file, line, cond);
	abort();
}

void *pr_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		pr_assert_fail("out of memory", __FILE__, __LINE__);
	return p;
}

void pr_pages_fill(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
	if (!n)
		return;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p & ~(page - 1);
	uintptr_t hi = ((uintptr_t)p + n + page - 1) & ~(page - 1);
	(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
	(void)p;
	(void)n;
#endif
}

void *pr_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		pr_assert_fail("out of memory", __FILE__, __LINE__);
	return p;
}

void *pr_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		pr_assert_fail("out of memory", __FILE__, __LINE__);
	return q;
}

char *pr_xstrdup(const char *s)
{
	return pr_xstrndup(s, strlen(s));
}

char *pr_xstrndup(const char *s, size_t n)
{
	char *d = pr_xmalloc(n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

char *pr_xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = pr_xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}
