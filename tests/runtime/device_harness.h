/* device_harness.h: runs one op's host kernel and its device kernel on the
 * same arguments and compares what they wrote, the way ggml's
 * test-backend-ops checks every backend against the CPU (style.md).
 *
 * A case is an op schema, its arguments (tensors on the host, numbers,
 * lists) and its result tensors (one, or several for a tuple result). The
 * harness runs the host kernel on host copies, then copies every tensor to
 * the device slot (same strides and storage offset, so a transposed or
 * sliced input stays one) and runs the device kernel there (or prt_k_staged
 * when h->staged), and compares each result and argument 0 element by
 * element. Functions are static inline: each test file includes the header
 * and uses what it needs. */
#ifndef PASSRUN_TESTS_DEVICE_HARNESS_H
#define PASSRUN_TESTS_DEVICE_HARNESS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "rt.h"

static inline prt_tensor dh_mk(pr_dtype dt, void *d, int rank, int64_t s0, int64_t s1, int64_t s2)
{
	int64_t shape[3] = {s0, s1, s2};
	return prt_tensor_make(dt, rank, shape, d);
}

/* t seen with shape and strides (rank n) over the same data. */
static inline prt_tensor dh_view(prt_tensor t, int n, const int64_t *shape, const int64_t *strides)
{
	t.rank = n;
	memcpy(t.shape, shape, sizeof(int64_t) * (size_t)n);
	memcpy(t.strides, strides, sizeof(int64_t) * (size_t)n);
	return t;
}

static inline prt_karg dh_T(prt_rv *v) { return (prt_karg){.kind = PR_ARG_VALUE, .v = v}; }
static inline prt_karg dh_I(int64_t i) { return (prt_karg){.kind = PR_ARG_INT, .i = i, .f = (double)i}; }
static inline prt_karg dh_F(double f) { return (prt_karg){.kind = PR_ARG_FLOAT, .f = f}; }
static inline prt_karg dh_B(bool b) { return (prt_karg){.kind = PR_ARG_BOOL, .b = b}; }
static inline prt_karg dh_NONE(void) { return (prt_karg){.kind = PR_ARG_NONE}; }
static inline prt_karg dh_L(int n, prt_karg *items) { return (prt_karg){.kind = PR_ARG_LIST, .n = n, .items = items}; }
static inline prt_rv dh_V(prt_tensor t) { return (prt_rv){.kind = PRT_RV_TENSOR, .t = t}; }

enum { DH_MAX_ALLOCS = 64, DH_MAX_OUTS = 4 };

typedef struct dh_harness {
	prt_devset devs;
	int slot;
	bool staged;      /* run prt_k_staged instead of the op's CUDA kernel */
	int n_allocs;
	struct { int slot; void *p; } allocs[DH_MAX_ALLOCS];
	prt_karg *lists[16];
	int n_lists;
} dh_harness;

static inline void dh_release(dh_harness *h)
{
	for (int i = 0; i < h->n_allocs; i++)
		prt_mem_free(&h->devs, h->allocs[i].slot, h->allocs[i].p, 1);
	for (int i = 0; i < h->n_lists; i++)
		free(h->lists[i]);
	h->n_allocs = h->n_lists = 0;
}

/* A copy of t's storage span on slot (host: malloc). */
static inline prt_tensor dh_clone_to(dh_harness *h, const prt_tensor *t, int slot)
{
	int64_t off = t->data - t->storage, bytes = off + prt_tensor_span_bytes(t);
	void *p;
	cr_assert_null(prt_mem_alloc(&h->devs, slot, bytes > 0 ? bytes : 1, &p));
	cr_assert(h->n_allocs < DH_MAX_ALLOCS);
	h->allocs[h->n_allocs].slot = slot;
	h->allocs[h->n_allocs++].p = p;
	if (bytes > 0)
		cr_assert_null(prt_mem_copy(&h->devs, slot, p, t->dev, t->storage, bytes, false));
	prt_tensor c = *t;
	c.storage = p;
	c.data = (uint8_t *)p + off;
	c.dev = slot;
	return c;
}

static inline double *dh_values(dh_harness *h, const prt_tensor *t)
{
	prt_tensor host = dh_clone_to(h, t, 0);
	return prt_tensor_gather(&host);
}

/* Copies every tensor argument (lists included) to slot. */
static inline void dh_place_args(dh_harness *h, prt_karg *a, int n, prt_rv *store, int *used, int slot)
{
	for (int i = 0; i < n; i++) {
		if (a[i].kind == PR_ARG_LIST) {
			prt_karg *items = pr_xmalloc(sizeof *items * (size_t)(a[i].n ? a[i].n : 1));
			memcpy(items, a[i].items, sizeof *items * (size_t)a[i].n);
			cr_assert(h->n_lists < 16);
			h->lists[h->n_lists++] = items;
			a[i].items = items;
			dh_place_args(h, items, a[i].n, store, used, slot);
		} else if (a[i].kind == PR_ARG_VALUE && a[i].v->kind == PRT_RV_TENSOR) {
			store[*used] = dh_V(dh_clone_to(h, &a[i].v->t, slot));
			a[i].v = &store[(*used)++];
		}
	}
}

/* What one run left: each result's values and argument 0's. */
typedef struct dh_run {
	int n_out;
	double *out[DH_MAX_OUTS];
	int64_t numel[DH_MAX_OUTS];
	double *arg0;
	int64_t numel0;
} dh_run;

static inline void dh_run_free(dh_run *r)
{
	for (int i = 0; i < r->n_out; i++)
		free(r->out[i]);
	free(r->arg0);
}

/* Runs the op on slot with n_out results (0: none, 1: a tensor, more: a
 * tuple); returns its error (the results' values only without one), and
 * argument 0's values after it either way. */
static inline pr_err *dh_run_on(dh_harness *h, const char *schema_text, prt_karg *args0, int n,
				const prt_tensor *outs, int n_out, int slot, dh_run *res)
{
	pr_schema *s;
	size_t col;
	cr_assert_null(pr_schema_parse(schema_text, strlen(schema_text), &s, &col), "%s", schema_text);
	pr_node node;
	memset(&node, 0, sizeof node);
	node.kind = PR_NODE_OP;
	node.name = (char *)"t";
	node.of_kind.schema = s;
	prt_karg args[12];
	cr_assert(n <= 12);
	memcpy(args, args0, sizeof *args * (size_t)n);
	prt_rv store[24], elems[DH_MAX_OUTS];
	int used = 0;
	dh_place_args(h, args, n, store, &used, slot);
	int alias = s->n_returns ? pr_schema_return_alias(s, 0) : -1;
	prt_rv out = {.kind = n_out == 0 ? PRT_RV_NONE : n_out == 1 ? PRT_RV_TENSOR : PRT_RV_TUPLE};
	prt_tensor own;
	bool has_own = false;
	cr_assert(n_out <= DH_MAX_OUTS);
	for (int i = 0; i < n_out && n_out > 1; i++)
		elems[i] = dh_V(dh_clone_to(h, &outs[i], slot));
	if (n_out > 1)
		out.n = n_out, out.elems = elems;
	if (n_out == 1 && alias < 0)
		out.t = dh_clone_to(h, &outs[0], slot);
	if (n_out == 1 && alias >= 0) {
		own = dh_clone_to(h, &outs[0], slot);
		has_own = true;
		out.t = args[alias].v->t;
	}
	prt_kctx k = {.node = &node, .n_args = n, .args = args, .out = &out, .out_alias = alias >= 0,
		     .own = has_own ? &own : NULL, .devs = &h->devs, .dev = slot};
	const prt_kernel *kern = prt_kernel_find(s->full_name);
	cr_assert_not_null(kern, "%s has no kernel", s->full_name);
	prt_kernel_fn fn = slot == 0 ? kern->host : h->staged ? prt_k_staged : kern->cuda;
	cr_assert_not_null(fn, "%s has no device kernel", s->full_name);
	pr_err *err = fn(&k);
	cr_assert_null(prt_mem_sync(&h->devs, slot));
	memset(res, 0, sizeof *res);
	res->n_out = err ? 0 : n_out;
	for (int i = 0; i < res->n_out; i++) {
		const prt_tensor *t = n_out == 1 ? &out.t : &elems[i].t;
		res->out[i] = dh_values(h, t);
		res->numel[i] = prt_tensor_numel(t);
	}
	bool t0 = n > 0 && args[0].kind == PR_ARG_VALUE && args[0].v->kind == PRT_RV_TENSOR;
	res->arg0 = t0 ? dh_values(h, &args[0].v->t) : NULL;
	res->numel0 = t0 ? prt_tensor_numel(&args[0].v->t) : 0;
	pr_schema_free(s);
	return err;
}

static inline void dh_no_error(pr_err *err, const char *schema, int slot)
{
	cr_assert_null(err, "%s on slot %d: %s", schema, slot, err ? pr_err_message(err) : "");
}

/* Both agree to 1e-4 relative; NaN only where the other has NaN. */
static inline void dh_expect_close(const char *schema, const char *what, int64_t i, double a, double b)
{
	bool ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= 1e-4 * (1 + fabs(a));
	cr_expect(ok, "%s: %s element %lld: host %g, device %g", schema, what, (long long)i, a, b);
}

/* The op's host and device kernels on the same arguments write the same
 * results (n_out of them) and leave argument 0 the same. */
static inline void dh_check_n(dh_harness *h, const char *schema, prt_karg *args, int n,
			      const prt_tensor *outs, int n_out)
{
	dh_run host, dev;
	dh_no_error(dh_run_on(h, schema, args, n, outs, n_out, 0, &host), schema, 0);
	dh_no_error(dh_run_on(h, schema, args, n, outs, n_out, h->slot, &dev), schema, h->slot);
	cr_assert_eq(host.numel0, dev.numel0);
	for (int j = 0; j < n_out; j++) {
		cr_assert_eq(host.numel[j], dev.numel[j]);
		for (int64_t i = 0; i < host.numel[j]; i++)
			dh_expect_close(schema, j ? "result (later)" : "result", i, host.out[j][i], dev.out[j][i]);
	}
	for (int64_t i = 0; i < host.numel0 && host.arg0 && dev.arg0; i++)
		dh_expect_close(schema, "argument 0", i, host.arg0[i], dev.arg0[i]);
	dh_run_free(&host);
	dh_run_free(&dev);
	dh_release(h);
}

static inline void dh_check(dh_harness *h, const char *schema, prt_karg *args, int n, const prt_tensor *out)
{
	dh_check_n(h, schema, args, n, out, out ? 1 : 0);
}

/* The device run fails with an error saying `want` (the host kernel's
 * message), and argument 0 is as it was. */
static inline void dh_check_error(dh_harness *h, const char *schema, prt_karg *args, int n,
				  const prt_tensor *out, const char *want)
{
	dh_run dev;
	double *before = prt_tensor_gather(&args[0].v->t);
	pr_err *err = dh_run_on(h, schema, args, n, out, out ? 1 : 0, h->slot, &dev);
	cr_assert_not_null(err, "%s: no error on the device", schema);
	cr_expect_not_null(strstr(pr_err_message(err), want), "%s: '%s' does not say '%s'", schema,
			   pr_err_message(err), want);
	for (int64_t i = 0; i < dev.numel0; i++)
		cr_expect_eq(dev.arg0[i], before[i], "%s: argument 0 element %lld changed to %g", schema,
			     (long long)i, dev.arg0[i]);
	pr_err_free(err);
	dh_run_free(&dev);
	free(before);
	dh_release(h);
}

/* A harness over device cuda:0 of kind ("sim" or "cuda"). */
static inline void dh_open(dh_harness *h, const char *kind, bool staged)
{
	memset(h, 0, sizeof *h);
	h->staged = staged;
	cr_assert_null(prt_devset_init(&h->devs, kind));
	pr_device d = {"cuda", 0};
	cr_assert_null(prt_devset_slot(&h->devs, d, &h->slot));
}

static inline void dh_close(dh_harness *h) { prt_devset_free(&h->devs); }

#endif
