/* Device kernels against the host kernels, the way ggml's test-backend-ops
 * checks every backend against the CPU (style.md): each case runs an op's
 * host kernel on host tensors and its device kernel on device copies of the
 * same tensors (same strides, so transposed inputs stay transposed), and the
 * results must agree.
 *   - staged: the host-staging fallback (pr_k_staged) on the sim device,
 *     always run;
 *   - cuda: the CUDA kernels, run only where a GPU is present
 *     (tests/gpu/run.sh); skipped elsewhere. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "rt.h"

static pr_tensor mk(pr_dtype dt, void *d, int rank, int64_t s0, int64_t s1, int64_t s2)
{
	int64_t shape[3] = {s0, s1, s2};
	return pr_tensor_make(dt, rank, shape, d);
}

static float tbytes[6] = {1, -4, 2, 5, -3, 6};
static pr_tensor transposed23(void)   /* logical [[1,2,-3],[-4,5,6]] */
{
	pr_tensor t = mk(PR_F32, tbytes, 2, 2, 3, 0);
	t.strides[0] = 1, t.strides[1] = 2;
	return t;
}

static pr_karg T(pr_rv *v) { return (pr_karg){.kind = PR_ARG_VALUE, .v = v}; }
static pr_karg I(int64_t i) { return (pr_karg){.kind = PR_ARG_INT, .i = i, .f = (double)i}; }
static pr_karg F(double f) { return (pr_karg){.kind = PR_ARG_FLOAT, .f = f}; }
static pr_karg L(int n, pr_karg *items) { return (pr_karg){.kind = PR_ARG_LIST, .n = n, .items = items}; }
static pr_rv V(pr_tensor t) { return (pr_rv){.kind = PR_RV_TENSOR, .t = t}; }

typedef struct harness {
	pr_devset devs;
	int slot;
	bool staged;      /* run pr_k_staged instead of the op's CUDA kernel */
	int n_allocs;
	struct { int slot; void *p; } allocs[64];
	pr_karg *lists[16];
	int n_lists;
} harness;

static void release(harness *h)
{
	for (int i = 0; i < h->n_allocs; i++)
		pr_mem_free(&h->devs, h->allocs[i].slot, h->allocs[i].p, 1);
	for (int i = 0; i < h->n_lists; i++)
		free(h->lists[i]);
	h->n_allocs = h->n_lists = 0;
}

/* A copy of t's storage span on slot (host: malloc). */
static pr_tensor clone_to(harness *h, const pr_tensor *t, int slot)
{
	int64_t off = t->data - t->storage, bytes = off + pr_tensor_span_bytes(t);
	void *p;
	cr_assert_null(pr_mem_alloc(&h->devs, slot, bytes, &p));
	cr_assert(h->n_allocs < 64);
	h->allocs[h->n_allocs].slot = slot;
	h->allocs[h->n_allocs++].p = p;
	cr_assert_null(pr_mem_copy(&h->devs, slot, p, t->dev, t->storage, bytes, false));
	pr_tensor c = *t;
	c.storage = p;
	c.data = (uint8_t *)p + off;
	c.dev = slot;
	return c;
}

static double *values(harness *h, const pr_tensor *t)
{
	pr_tensor host = clone_to(h, t, 0);
	return pr_tensor_gather(&host);
}

/* Copies every tensor argument (lists included) to slot. */
static void place_args(harness *h, pr_karg *a, int n, pr_rv *store, int *used, int slot)
{
	for (int i = 0; i < n; i++) {
		if (a[i].kind == PR_ARG_LIST) {
			pr_karg *items = pr_xmalloc(sizeof *items * (size_t)a[i].n);
			memcpy(items, a[i].items, sizeof *items * (size_t)a[i].n);
			h->lists[h->n_lists++] = items;
			a[i].items = items;
			place_args(h, items, a[i].n, store, used, slot);
		} else if (a[i].kind == PR_ARG_VALUE && a[i].v->kind == PR_RV_TENSOR) {
			store[*used] = V(clone_to(h, &a[i].v->t, slot));
			a[i].v = &store[(*used)++];
		}
	}
}

static void run_on(harness *h, const char *schema_text, pr_karg *args0, int n, const pr_tensor *out0,
		   int slot, double **out_vals, double **arg0_vals, int64_t *numel, int64_t *numel0)
{
	pr_schema *s;
	size_t col;
	cr_assert_null(pr_schema_parse(schema_text, strlen(schema_text), &s, &col));
	pr_node node;
	memset(&node, 0, sizeof node);
	node.name = (char *)"t";
	node.schema = s;
	pr_karg args[8];
	memcpy(args, args0, sizeof *args * (size_t)n);
	pr_rv store[16];
	int used = 0;
	place_args(h, args, n, store, &used, slot);
	int alias = s->n_returns ? pr_schema_return_alias(s, 0) : -1;
	pr_rv out = {.kind = out0 ? PR_RV_TENSOR : PR_RV_NONE};
	pr_tensor own;
	bool has_own = false;
	if (out0 && alias < 0)
		out.t = clone_to(h, out0, slot);
	if (out0 && alias >= 0) {
		own = clone_to(h, out0, slot);
		has_own = true;
		out.t = args[alias].v->t;
	}
	pr_kctx k = {.node = &node, .n_args = n, .args = args, .out = &out, .out_alias = alias >= 0,
		     .own = has_own ? &own : NULL, .devs = &h->devs, .dev = slot};
	const pr_kernel *kern = pr_kernel_find(s->full_name);
	cr_assert_not_null(kern);
	pr_kernel_fn fn = slot == 0 ? kern->host : h->staged ? pr_k_staged : kern->cuda;
	cr_assert_not_null(fn, "%s has no device kernel", s->full_name);
	pr_err *err = fn(&k);
	cr_assert_null(err, "%s on slot %d: %s", s->full_name, slot, err ? pr_err_message(err) : "");
	cr_assert_null(pr_mem_sync(&h->devs, slot));
	*out_vals = out0 ? values(h, &out.t) : NULL;
	*numel = out0 ? pr_tensor_numel(&out.t) : 0;
	bool t0 = args[0].kind == PR_ARG_VALUE && args[0].v->kind == PR_RV_TENSOR;
	*arg0_vals = t0 ? values(h, &args[0].v->t) : NULL;
	*numel0 = t0 ? pr_tensor_numel(&args[0].v->t) : 0;
	pr_schema_free(s);
}

static void check(harness *h, const char *schema, pr_karg *args, int n, const pr_tensor *out)
{
	double *ho, *ha, *dout, *da;
	int64_t hn, dn, hn0, dn0;
	run_on(h, schema, args, n, out, 0, &ho, &ha, &hn, &hn0);
	run_on(h, schema, args, n, out, h->slot, &dout, &da, &dn, &dn0);
	cr_assert_eq(hn0, dn0);
	cr_assert_eq(hn, dn);
	for (int64_t i = 0; i < hn; i++)
		cr_expect(fabs(ho[i] - dout[i]) <= 1e-4 * (1 + fabs(ho[i])), "%s: result %lld: host %g, device %g",
			  schema, (long long)i, ho[i], dout[i]);
	for (int64_t i = 0; i < hn0 && ha && da; i++)
		cr_expect(fabs(ha[i] - da[i]) <= 1e-4 * (1 + fabs(ha[i])), "%s: argument 0 element %lld: host %g, device %g",
			  schema, (long long)i, ha[i], da[i]);
	free(ho), free(ha), free(dout), free(da);
	release(h);
}

static void cases(harness *h)
{
	float o6[6], o4[4], o9[9], row[3] = {10, 20, 30};
	float b32[6] = {1, 0, 0, 1, 1, 1}, bias2[2] = {1, 2}, w23[6] = {1, 0, 2, 0, 1, 1};
	pr_rv A = V(transposed23()), R = V(mk(PR_F32, row, 1, 3, 0, 0));
	pr_tensor O23 = mk(PR_F32, o6, 2, 2, 3, 0), O22 = mk(PR_F32, o4, 2, 2, 2, 0);
	pr_karg add[3] = {T(&A), T(&R), I(2)};
	check(h, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", add, 3, &O23);
	pr_karg muls[2] = {T(&A), F(-1.5)};
	check(h, "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor", muls, 2, &O23);
	pr_karg un[1] = {T(&A)};
	check(h, "aten::sin(Tensor self) -> Tensor", un, 1, &O23);
	check(h, "aten::exp(Tensor self) -> Tensor", un, 1, &O23);
	check(h, "aten::gelu(Tensor self, *, str approximate='none') -> Tensor", un, 1, &O23);
	check(h, "aten::sigmoid(Tensor self) -> Tensor", un, 1, &O23);
	check(h, "aten::relu_(Tensor(a!) self) -> Tensor(a!)", un, 1, &O23);
	check(h, "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", un, 1, &O23);
	pr_rv B = V(mk(PR_F32, b32, 2, 3, 2, 0)), Bi = V(mk(PR_F32, bias2, 1, 2, 0, 0)),
	      W = V(mk(PR_F32, w23, 2, 2, 3, 0));
	pr_karg mm[2] = {T(&A), T(&B)};
	check(h, "aten::mm(Tensor self, Tensor mat2) -> Tensor", mm, 2, &O22);
	pr_karg addmm[5] = {T(&Bi), T(&A), T(&B), F(0.5), F(2)};
	check(h, "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
	      addmm, 5, &O22);
	pr_karg lin[3] = {T(&A), T(&W), T(&Bi)};
	check(h, "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", lin, 3, &O22);
	pr_karg items[2] = {T(&A), T(&R)};
	pr_rv R13 = V(mk(PR_F32, row, 2, 1, 3, 0));
	items[1] = T(&R13);
	pr_karg cat[2] = {L(2, items), I(0)};
	pr_tensor O33 = mk(PR_F32, o9, 2, 3, 3, 0);
	check(h, "aten::cat(Tensor[] tensors, int dim=0) -> Tensor", cat, 2, &O33);
	pr_karg sm[3] = {T(&A), I(1), I(0)};
	check(h, "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", sm, 3, &O23);
	pr_karg ns[1] = {I(3)};
	pr_karg ln[5] = {T(&A), L(1, ns), T(&R), T(&R), F(1e-5)};
	check(h, "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
	      ln, 5, &O23);
	float cache[6] = {0};
	pr_rv C = V(mk(PR_F32, cache, 2, 2, 3, 0));
	pr_karg kv[3] = {T(&C), T(&A), I(1)};
	check(h, "custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ()", kv, 3, NULL);
	pr_karg acc[2] = {T(&C), T(&R)};
	check(h, "custom::accumulate(Tensor(a!) x, Tensor y) -> ()", acc, 2, NULL);
	int64_t ix[2] = {1, 0};
	pr_rv X = V(mk(PR_I64, ix, 1, 2, 0, 0));
	pr_karg idx[1] = {T(&X)};
	float vals[6] = {1, 2, 3, 4, 5, 6};
	pr_rv Vv = V(mk(PR_F32, vals, 2, 2, 3, 0));
	pr_karg ip[4] = {T(&C), L(1, idx), T(&Vv), (pr_karg){.kind = PR_ARG_BOOL, .b = true}};
	check(h, "aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
	      ip, 4, &O23);
}

Test(staged, host_fallback_on_sim_matches_the_host_kernels)
{
	harness h = {.staged = true};
	cr_assert_null(pr_devset_init(&h.devs, "sim"));
	pr_device d = {"cuda", 0};
	cr_assert_null(pr_devset_slot(&h.devs, d, &h.slot));
	cases(&h);
	pr_devset_free(&h.devs);
}

Test(cuda, kernels_match_the_host_kernels)
{
	if (!pr_cuda_available())
		cr_skip_test("no CUDA device here (tests/gpu/run.sh runs this on a GPU)");
	harness h = {.staged = false};
	cr_assert_null(pr_devset_init(&h.devs, "cuda"));
	pr_device d = {"cuda", 0};
	cr_assert_null(pr_devset_slot(&h.devs, d, &h.slot));
	cases(&h);
	pr_devset_free(&h.devs);
}
