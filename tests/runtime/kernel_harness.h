/* kernel_harness.h: one host kernel called the way the executor calls it
 * (looked up by op name; a prt_kctx holding the resolved arguments and the
 * result slot), and the argument makers and checks the kernel tests share.
 * Functions are static inline: each test file includes the header. */
#ifndef PASSRUN_TESTS_KERNEL_HARNESS_H
#define PASSRUN_TESTS_KERNEL_HARNESS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static inline prt_karg T(prt_rv *v) { return (prt_karg){.kind = PR_ARG_VALUE, .v = v}; }
static inline prt_karg I(int64_t i) { return (prt_karg){.kind = PR_ARG_INT, .i = i, .f = (double)i}; }
static inline prt_karg F(double f) { return (prt_karg){.kind = PR_ARG_FLOAT, .f = f}; }
static inline prt_karg B(bool b) { return (prt_karg){.kind = PR_ARG_BOOL, .b = b}; }
static inline prt_karg S(const char *s) { return (prt_karg){.kind = PR_ARG_STRING, .s = s}; }
static inline prt_karg NONE(void) { return (prt_karg){.kind = PR_ARG_NONE}; }
static inline prt_karg L(int n, prt_karg *items) { return (prt_karg){.kind = PR_ARG_LIST, .n = n, .items = items}; }
static inline prt_rv V(prt_tensor t) { return (prt_rv){.kind = PRT_RV_TENSOR, .t = t}; }

/* Calls op. alias >= 0 makes the result alias that argument first (views
 * and in-place ops), as the executor does; own (may be NULL) is storage of
 * the result's own for an aliasing result that may need a copy. */
static inline pr_err *call_kernel(const char *op, prt_karg *args, int n, prt_rv *out, int alias,
				  prt_tensor *own)
{
	const prt_kernel *k = prt_kernel_find(op);
	cr_assert_not_null(k, "no kernel for %s", op);
	if (alias >= 0)
		out->t = args[alias].v->t;
	prt_kctx c = {.n_args = n, .args = args, .out = out, .out_alias = alias >= 0, .own = own};
	return k->host(&c);
}

/* The call succeeds; call_ok_as with the result aliasing argument alias. */
static inline void call_ok_as(const char *op, prt_karg *args, int n, prt_rv *out, int alias)
{
	pr_err *e = call_kernel(op, args, n, out, alias, NULL);
	cr_assert_null(e, "%s: %s", op, e ? pr_err_message(e) : "");
}

static inline void call_ok(const char *op, prt_karg *args, int n, prt_rv *out)
{
	call_ok_as(op, args, n, out, -1);
}

/* The kernel refuses with a message containing `want`. */
static inline void call_refused(const char *op, prt_karg *args, int n, prt_rv *out, const char *want)
{
	pr_err *e = call_kernel(op, args, n, out, -1, NULL);
	cr_assert_not_null(e, "%s accepted arguments it must refuse (%s)", op, want);
	cr_expect(strstr(pr_err_message(e), want), "%s: \"%s\" does not say \"%s\"", op,
		  pr_err_message(e), want);
	pr_err_free(e);
}

/* t's logical values are want's, within 1e-5 (a NaN expects NaN). */
static inline void expect_vals(const prt_tensor *t, const double *want, int n)
{
	cr_assert_eq(prt_tensor_numel(t), n, "numel %lld, expected %d", (long long)prt_tensor_numel(t), n);
	double *v = prt_tensor_gather(t);
	for (int i = 0; i < n; i++)
		cr_expect(isnan(want[i]) ? isnan(v[i]) : fabs(v[i] - want[i]) < 1e-5,
			  "element %d: %.9g, expected %.9g", i, v[i], want[i]);
	free(v);
}

#endif
