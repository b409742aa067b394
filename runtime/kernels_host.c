/* kernels_host.c: host kernels for arithmetic, reductions, matrix products
 * and normalizations, plus the argument helpers every kernel uses.
 *
 * Elementwise ops share one strided loop (ew_impl): the output's shape drives
 * an odometer, each input is seen through broadcast strides (stride 0 on a
 * broadcast dim), and the in-place variants are the same kernel with the
 * output aliasing the first argument (the executor arranges that). f32
 * tensors take a float path; other dtypes go through pr_elem_load/store.
 * The heavier kernels (matrix products, softmax, norms, reductions) gather
 * their inputs into row-major doubles, compute there, and scatter into the
 * output's strides: one code path for every layout, accumulation in double. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "passrun/data.h"

/* ---- arguments ------------------------------------------------------------ */

static prt_karg *karg(prt_kctx *k, int i)
{
	return i < k->n_args && k->args[i].kind != PR_ARG_NONE ? &k->args[i] : NULL;
}

prt_tensor *prt_karg_tensor(prt_kctx *k, int i)
{
	prt_karg *a = karg(k, i);
	return a && a->kind == PR_ARG_VALUE && a->v->kind == PRT_RV_TENSOR ? &a->v->t : NULL;
}

bool prt_karg_is_none(prt_kctx *k, int i) { return karg(k, i) == NULL; }

static bool karg_num(const prt_karg *a, double *f)
{
	switch (a->kind) {
	case PR_ARG_INT: *f = (double)a->i; return true;
	case PR_ARG_FLOAT: *f = a->f; return true;
	case PR_ARG_BOOL: *f = a->b; return true;
	case PR_ARG_VALUE:
		if (a->v->kind == PRT_RV_INT) {
			*f = (double)a->v->i;
			return true;
		}
		if (a->v->kind == PRT_RV_TENSOR && prt_tensor_numel(&a->v->t) == 1) {
			*f = pr_elem_load(a->v->t.dtype, a->v->t.data);
			return true;
		}
		return false;
	default: return false;
	}
}

int64_t prt_karg_int(prt_kctx *k, int i, int64_t dflt)
{
	prt_karg *a = karg(k, i);
	double f;
	if (!a)
		return dflt;
	if (a->kind == PR_ARG_INT)
		return a->i;
	if (a->kind == PR_ARG_VALUE && a->v->kind == PRT_RV_INT)
		return a->v->i;
	return karg_num(a, &f) ? (int64_t)f : dflt;
}

double prt_karg_float(prt_kctx *k, int i, double dflt)
{
	prt_karg *a = karg(k, i);
	double f;
	return a && karg_num(a, &f) ? f : dflt;
}

int prt_karg_ints(prt_kctx *k, int i, int64_t *out, int max)
{
	prt_karg *a = karg(k, i);
	if (!a)
		return -1;
	if (a->kind == PR_ARG_INT || (a->kind == PR_ARG_VALUE && a->v->kind == PRT_RV_INT)) {
		out[0] = a->kind == PR_ARG_INT ? a->i : a->v->i;   /* int[1] written as an int */
		return 1;
	}
	if (a->kind != PR_ARG_LIST || a->n > max)
		return -1;
	for (int j = 0; j < a->n; j++) {
		prt_karg *it = &a->items[j];
		if (it->kind == PR_ARG_INT)
			out[j] = it->i;
		else if (it->kind == PR_ARG_VALUE && it->v->kind == PRT_RV_INT)
			out[j] = it->v->i;
		else
			return -1;
	}
	return a->n;
}

const char *prt_karg_str(prt_kctx *k, int i, const char *dflt)
{
	prt_karg *a = karg(k, i);
	return a && a->kind == PR_ARG_STRING ? a->s : dflt;
}

pr_err *prt_kernel_error(prt_kctx *k, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const pr_schema *s = k->node ? pr_node_schema(k->node) : NULL;
	const char *op = s ? s->full_name : "?";
	const char *name = k->node && k->node->name ? k->node->name : "(no result)";
	return pr_err_new("node '%s' (%s): %s", name, op, msg);
}

int prt_dim(int64_t d, int rank)
{
	int64_t r = rank ? rank : 1;
	if (d < 0)
		d += r;
	return d < 0 || d >= r ? -1 : (int)d;
}

static prt_tensor *need_tensor(prt_kctx *k, int i, pr_err **err)
{
	prt_tensor *t = prt_karg_tensor(k, i);
	if (!t && !*err)
		*err = prt_kernel_error(k, "argument %d must be a tensor", i);
	return t;
}

/* ---- elementwise ------------------------------------------------------------ */


static inline double ew_apply(prt_ew_op op, double a, double b)
{
	switch (op) {
	case PRT_EW_ADD: return a + b;
	case PRT_EW_SUB: return a - b;
	case PRT_EW_MUL: return a * b;
	case PRT_EW_DIV: return a / b;
	case PRT_EW_NEG: return -a;
	case PRT_EW_RELU: return a > 0 ? a : 0;
	case PRT_EW_SIN: return sin(a);
	case PRT_EW_COS: return cos(a);
	case PRT_EW_EXP: return exp(a);
	case PRT_EW_TANH: return tanh(a);
	case PRT_EW_GELU: return 0.5 * a * (1 + erf(a * M_SQRT1_2));
	case PRT_EW_GELU_TANH:
		return 0.5 * a * (1 + tanh(sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
	case PRT_EW_SIGMOID: return 1 / (1 + exp(-a));
	case PRT_EW_COPY: return a;
	}
	return 0;
}

static inline float ew_apply_f(prt_ew_op op, float a, float b)
{
	switch (op) {
	case PRT_EW_ADD: return a + b;
	case PRT_EW_SUB: return a - b;
	case PRT_EW_MUL: return a * b;
	case PRT_EW_DIV: return a / b;
	case PRT_EW_NEG: return -a;
	case PRT_EW_RELU: return a > 0 ? a : 0;
	default: return (float)ew_apply(op, a, b);
	}
}

typedef struct ew_args {
	prt_ew_op op;
	prt_tensor *o;
	const prt_tensor *a, *b;    /* b NULL: scalar operand */
	int64_t as[PR_MAX_RANK], bs[PR_MAX_RANK];
	double scalar;             /* b's value when b is NULL */
	double alpha;              /* b is scaled by alpha (add/sub) */
} ew_args;

static void ew_loop_f32(ew_args *w)
{
	prt_tensor *o = w->o;
	float *po = (float *)o->data;
	const float *pa = (const float *)w->a->data;
	const float *pb = w->b ? (const float *)w->b->data : NULL;
	float sc = (float)w->scalar, alpha = (float)w->alpha;
	int64_t idx[PR_MAX_RANK] = {0}, n = prt_tensor_numel(o);
	int64_t oo = 0, ao = 0, bo = 0;
	for (int64_t i = 0; i < n; i++) {
		float bv = pb ? pb[bo] : sc;
		po[oo] = ew_apply_f(w->op, pa[ao], alpha == 1 ? bv : alpha * bv);
		for (int d = o->rank - 1; d >= 0; d--) {
			oo += o->strides[d], ao += w->as[d], bo += w->bs[d];
			if (++idx[d] < o->shape[d])
				break;
			oo -= o->strides[d] * o->shape[d];
			ao -= w->as[d] * o->shape[d];
			bo -= w->bs[d] * o->shape[d];
			idx[d] = 0;
		}
	}
}

static void ew_loop_any(ew_args *w)
{
	prt_tensor *o = w->o;
	size_t es = pr_dtype_size(o->dtype), as = pr_dtype_size(w->a->dtype);
	size_t bsz = w->b ? pr_dtype_size(w->b->dtype) : 0;
	int64_t idx[PR_MAX_RANK] = {0}, n = prt_tensor_numel(o);
	int64_t oo = 0, ao = 0, bo = 0;
	for (int64_t i = 0; i < n; i++) {
		double bv = w->b ? pr_elem_load(w->b->dtype, w->b->data + bo * (int64_t)bsz) : w->scalar;
		double av = pr_elem_load(w->a->dtype, w->a->data + ao * (int64_t)as);
		pr_elem_store(o->dtype, o->data + oo * (int64_t)es, ew_apply(w->op, av, w->alpha * bv));
		for (int d = o->rank - 1; d >= 0; d--) {
			oo += o->strides[d], ao += w->as[d], bo += w->bs[d];
			if (++idx[d] < o->shape[d])
				break;
			oo -= o->strides[d] * o->shape[d];
			ao -= w->as[d] * o->shape[d];
			bo -= w->bs[d] * o->shape[d];
			idx[d] = 0;
		}
	}
}

/* Same shape, all contiguous: one flat loop (the common case). */
static bool same_dense(const prt_tensor *o, const prt_tensor *a, const prt_tensor *b)
{
	if (a->rank != o->rank || (b && b->rank != o->rank))
		return false;
	for (int d = 0; d < o->rank; d++)
		if (a->shape[d] != o->shape[d] || (b && b->shape[d] != o->shape[d]))
			return false;
	return prt_tensor_is_contiguous(o) && prt_tensor_is_contiguous(a) &&
	       (!b || prt_tensor_is_contiguous(b));
}

static void ew_dense_f32(ew_args *w)
{
	float *po = (float *)w->o->data;
	const float *pa = (const float *)w->a->data;
	const float *pb = w->b ? (const float *)w->b->data : NULL;
	float sc = (float)w->scalar, alpha = (float)w->alpha;
	int64_t n = prt_tensor_numel(w->o);
	for (int64_t i = 0; i < n; i++)
		po[i] = ew_apply_f(w->op, pa[i], alpha * (pb ? pb[i] : sc));
}

/* out = op(a, alpha * b): b is argument 1 (a tensor or a number), alpha
 * argument alpha_at (-1: none). Unary ops have no b. */
static pr_err *ew_impl(prt_kctx *k, prt_ew_op op, bool binary, int alpha_at)
{
	pr_err *err = NULL;
	ew_args w = {.op = op, .o = &k->out->t, .alpha = 1};
	w.a = need_tensor(k, 0, &err);
	if (err)
		return err;
	if (binary) {
		w.b = prt_karg_tensor(k, 1);
		if (!w.b && prt_karg_is_none(k, 1))
			return prt_kernel_error(k, "argument 1 must be a tensor or a number");
		w.scalar = prt_karg_float(k, 1, 0);
		if (alpha_at >= 0)
			w.alpha = prt_karg_float(k, alpha_at, 1);
	}
	if (k->out->kind != PRT_RV_TENSOR)
		return prt_kernel_error(k, "the result must be a tensor");
	if (!prt_bcast_strides(w.a, w.o, w.as) || (w.b && !prt_bcast_strides(w.b, w.o, w.bs)))
		return prt_kernel_error(k, "argument shapes do not broadcast to the result's");
	if (!w.b)
		memset(w.bs, 0, sizeof w.bs);
	if (w.o->dtype == PR_F32 && w.a->dtype == PR_F32 && (!w.b || w.b->dtype == PR_F32) &&
	    same_dense(w.o, w.a, w.b))
		ew_dense_f32(&w);
	else if (w.o->dtype == PR_F32 && w.a->dtype == PR_F32 && (!w.b || w.b->dtype == PR_F32))
		ew_loop_f32(&w);
	else
		ew_loop_any(&w);
	return NULL;
}

/* Are the result and the first n arguments f32 (argument 1 may be a number)?
 * Anything else computes with ATen's type promotion (kernels_elementwise.c):
 * exact int64, bool, f16 and mixed dtypes. */
static bool all_f32(prt_kctx *k, int n)
{
	prt_tensor *a = prt_karg_tensor(k, 0), *b = n > 1 ? prt_karg_tensor(k, 1) : NULL;
	bool b_number = n > 1 && !b && !prt_karg_is_none(k, 1);
	return k->out->kind == PRT_RV_TENSOR && k->out->t.dtype == PR_F32 && a &&
	       a->dtype == PR_F32 && (n < 2 || b_number || (b && b->dtype == PR_F32));
}

pr_err *prt_k_add(prt_kctx *k)
{
	return all_f32(k, 2) ? ew_impl(k, PRT_EW_ADD, true, 2) : prt_ew_arith(k, PRT_EWT_ADD, 2, 2);
}

pr_err *prt_k_sub(prt_kctx *k)
{
	return all_f32(k, 2) ? ew_impl(k, PRT_EW_SUB, true, 2) : prt_ew_arith(k, PRT_EWT_SUB, 2, 2);
}

pr_err *prt_k_mul(prt_kctx *k)
{
	return all_f32(k, 2) ? ew_impl(k, PRT_EW_MUL, true, -1) : prt_ew_arith(k, PRT_EWT_MUL, 2, -1);
}

pr_err *prt_k_div(prt_kctx *k)
{
	return all_f32(k, 2) ? ew_impl(k, PRT_EW_DIV, true, -1) : prt_ew_arith(k, PRT_EWT_DIV, 2, -1);
}

pr_err *prt_k_neg(prt_kctx *k)
{
	return all_f32(k, 1) ? ew_impl(k, PRT_EW_NEG, false, -1) : prt_ew_arith(k, PRT_EWT_NEG, 1, -1);
}
pr_err *prt_k_relu(prt_kctx *k) { return ew_impl(k, PRT_EW_RELU, false, -1); }
pr_err *prt_k_sin(prt_kctx *k) { return ew_impl(k, PRT_EW_SIN, false, -1); }
pr_err *prt_k_cos(prt_kctx *k) { return ew_impl(k, PRT_EW_COS, false, -1); }
pr_err *prt_k_exp(prt_kctx *k) { return ew_impl(k, PRT_EW_EXP, false, -1); }
pr_err *prt_k_tanh(prt_kctx *k) { return ew_impl(k, PRT_EW_TANH, false, -1); }
pr_err *prt_k_sigmoid(prt_kctx *k) { return ew_impl(k, PRT_EW_SIGMOID, false, -1); }

pr_err *prt_k_gelu(prt_kctx *k)
{
	const char *approx = prt_karg_str(k, 1, "none");
	return ew_impl(k, strcmp(approx, "tanh") == 0 ? PRT_EW_GELU_TANH : PRT_EW_GELU, false, -1);
}

/* custom::accumulate(Tensor(a!) x, Tensor y) -> (): x += y. */
pr_err *prt_k_accumulate(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = need_tensor(k, 0, &err);
	if (err)
		return err;
	ew_args w = {.op = PRT_EW_ADD, .o = x, .a = x, .alpha = 1};
	w.b = need_tensor(k, 1, &err);
	if (err)
		return err;
	if (!prt_bcast_strides(w.a, x, w.as) || !prt_bcast_strides(w.b, x, w.bs))
		return prt_kernel_error(k, "y does not broadcast to x's shape");
	if (x->dtype == PR_F32 && w.b->dtype == PR_F32)
		ew_loop_f32(&w);
	else
		ew_loop_any(&w);
	return NULL;
}

static size_t nz(int64_t n) { return n > 0 ? (size_t)n : 1; }

/* ---- matrix products ------------------------------------------------------ */

/* c[n,m] = sum_k a[n,k] * b[k,m], or b[m,k] when bt. */
static void matmul(const double *a, const double *b, double *c, int64_t n, int64_t kk,
		   int64_t m, bool bt)
{
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < m; j++) {
			double s = 0;
			for (int64_t p = 0; p < kk; p++)
				s += a[i * kk + p] * (bt ? b[j * kk + p] : b[p * m + j]);
			c[i * m + j] = s;
		}
}

static pr_err *check_rank(prt_kctx *k, const prt_tensor *t, int rank, const char *what)
{
	if (t->rank != rank)
		return prt_kernel_error(k, "%s must have rank %d, not %d", what, rank, t->rank);
	return NULL;
}

/* out = beta * bias + alpha * (a @ b) for 2-D a, b; bias may be NULL. */
static pr_err *mm_impl(prt_kctx *k, const prt_tensor *a, const prt_tensor *b, const prt_tensor *bias,
		       double beta, double alpha)
{
	pr_err *err = check_rank(k, a, 2, "mat1");
	if (!err)
		err = check_rank(k, b, 2, "mat2");
	if (err)
		return err;
	int64_t n = a->shape[0], kk = a->shape[1], m = b->shape[1];
	prt_tensor *o = &k->out->t;
	if (b->shape[0] != kk || o->rank != 2 || o->shape[0] != n || o->shape[1] != m)
		return prt_kernel_error(k, "shapes do not match: [%lld,%lld] @ [%lld,%lld]",
				       (long long)n, (long long)kk, (long long)b->shape[0],
				       (long long)m);
	double *av = prt_tensor_gather(a), *bv = prt_tensor_gather(b);
	double *cv = pr_xmalloc(sizeof(double) * nz(n * m));
	matmul(av, bv, cv, n, kk, m, false);
	if (bias) {
		prt_tensor full = *o;
		int64_t st[PR_MAX_RANK];
		if (!prt_bcast_strides(bias, o, st)) {
			free(av), free(bv), free(cv);
			return prt_kernel_error(k, "the bias does not broadcast to [%lld,%lld]",
					       (long long)n, (long long)m);
		}
		full.data = bias->data, full.dtype = bias->dtype;
		memcpy(full.strides, st, sizeof st);
		double *biasv = prt_tensor_gather(&full);
		for (int64_t i = 0; i < n * m; i++)
			cv[i] = beta * biasv[i] + alpha * cv[i];
		free(biasv);
	} else if (alpha != 1) {
		for (int64_t i = 0; i < n * m; i++)
			cv[i] *= alpha;
	}
	prt_tensor_scatter(o, cv);
	free(av), free(bv), free(cv);
	return NULL;
}

pr_err *prt_k_mm(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *a = need_tensor(k, 0, &err), *b = need_tensor(k, 1, &err);
	return err ? err : mm_impl(k, a, b, NULL, 1, 1);
}

pr_err *prt_k_addmm(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *bias = need_tensor(k, 0, &err), *a = need_tensor(k, 1, &err),
		  *b = need_tensor(k, 2, &err);
	if (err)
		return err;
	return mm_impl(k, a, b, bias, prt_karg_float(k, 3, 1), prt_karg_float(k, 4, 1));
}

/* linear(input[..., in], weight[out, in], bias[out]?) = input @ weight^T + bias. */
pr_err *prt_k_linear(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = need_tensor(k, 0, &err), *w = need_tensor(k, 1, &err);
	if (err || (err = check_rank(k, w, 2, "weight")))
		return err;
	prt_tensor *bias = prt_karg_tensor(k, 2);
	prt_tensor *o = &k->out->t;
	int64_t kk = w->shape[1], m = w->shape[0];
	if (x->rank < 1 || x->shape[x->rank - 1] != kk)
		return prt_kernel_error(k, "input's last dim must be %lld and the result's %lld",
				       (long long)kk, (long long)m);
	int64_t shape[PR_MAX_RANK];
	memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->rank);
	shape[x->rank - 1] = m;
	if ((err = prt_result_shape_check(k, x->rank, shape)))
		return err;
	int64_t n = prt_tensor_numel(x) / (kk ? kk : 1);
	double *xv = prt_tensor_gather(x), *wv = prt_tensor_gather(w);
	double *cv = pr_xmalloc(sizeof(double) * nz(n * m));
	matmul(xv, wv, cv, n, kk, m, true);
	if (bias) {
		if (prt_tensor_numel(bias) != m) {
			free(xv), free(wv), free(cv);
			return prt_kernel_error(k, "bias must have %lld elements", (long long)m);
		}
		double *bv = prt_tensor_gather(bias);
		for (int64_t i = 0; i < n * m; i++)
			cv[i] += bv[i % m];
		free(bv);
	}
	prt_tensor_scatter(o, cv);
	free(xv), free(wv), free(cv);
	return NULL;
}

pr_err *prt_k_bmm(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *a = need_tensor(k, 0, &err), *b = need_tensor(k, 1, &err);
	if (err || (err = check_rank(k, a, 3, "self")) || (err = check_rank(k, b, 3, "mat2")))
		return err;
	prt_tensor *o = &k->out->t;
	int64_t B = a->shape[0], n = a->shape[1], kk = a->shape[2], m = b->shape[2];
	if (b->shape[0] != B || b->shape[1] != kk || o->rank != 3 || o->shape[0] != B ||
	    o->shape[1] != n || o->shape[2] != m)
		return prt_kernel_error(k, "shapes do not match for a batched product");
	double *av = prt_tensor_gather(a), *bv = prt_tensor_gather(b);
	double *cv = pr_xmalloc(sizeof(double) * nz(B * n * m));
	for (int64_t i = 0; i < B; i++)
		matmul(av + i * n * kk, bv + i * kk * m, cv + i * n * m, n, kk, m, false);
	prt_tensor_scatter(o, cv);
	free(av), free(bv), free(cv);
	return NULL;
}

/* ---- softmax, reductions, norms --------------------------------------------- */

/* Splits shape around dim: outer * len * inner. */
static void split_dim(const prt_tensor *t, int d, int64_t *outer, int64_t *len, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < d; i++)
		*outer *= t->shape[i];
	*len = t->rank ? t->shape[d] : 1;
	for (int i = d + 1; i < t->rank; i++)
		*inner *= t->shape[i];
}

/* _softmax(self, dim, half_to_float) and softmax.int(self, dim, dtype?). */
pr_err *prt_k_softmax(prt_kctx *k)
{
	pr_err *err = NULL;
	prt_tensor *x = need_tensor(k, 0, &err);
	if (err)
		return err;
	int d = prt_dim(prt_karg_int(k, 1, -1), x->rank);
	if (d < 0)
		return prt_kernel_error(k, "dim out of range");
	if ((err = prt_result_shape_check(k, x->rank, x->shape)))
		return err;
	int64_t outer, len, inner;
	split_dim(x, d, &outer, &len, &inner);
	double *v = prt_tensor_gather(x);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double *p = v + o * len * inner + i, mx = -INFINITY, s = 0;
			for (int64_t j = 0; j < len; j++)
				mx = fmax(mx, p[j * inner]);
			for (int64_t j = 0; j < len; j++)
				s += (p[j * inner] = exp(p[j * inner] - mx));
			for (int64_t j = 0; j < len; j++)
				p[j * inner] /= s;
		}
	prt_tensor_scatter(&k->out->t, v);
	free(v);
	return NULL;
}

pr_err *prt_reduce_dims(prt_kctx *k, const prt_tensor *x, bool *reduced, int64_t *count)
{
	int64_t dims[PR_MAX_RANK];
	int nd = prt_karg_ints(k, 1, dims, PR_MAX_RANK);
	for (int i = 0; i < PR_MAX_RANK; i++)
		reduced[i] = nd <= 0 && i < x->rank;   /* none or [] reduces every dim */
	for (int i = 0; i < nd; i++) {
		int d = prt_dim(dims[i], x->rank);
		if (d < 0)
			return prt_kernel_error(k, "dim %lld out of range", (long long)dims[i]);
		reduced[d] = true;
	}
	int64_t n = prt_tensor_numel(x), on = prt_tensor_numel(&k->out->t);
	*count = 1;
	for (int i = 0; i < x->rank; i++)
		if (reduced[i])
			*count *= x->shape[i];
	if (*count && on * *count != n)
		return prt_kernel_error(k, "the result has %lld elements, expected %lld",
				       (long long)on, (long long)(n / *count));
	return NULL;
}

static pr_err *reduce_impl(prt_kctx *k, bool mean)
{
	pr_err *err = NULL;
	prt_tensor *x = need_tensor(k, 0, &err);
	bool reduced[PR_MAX_RANK];
	int64_t count;
	if (err || (err = prt_reduce_dims(k, x, reduced, &count)))
		return err;
	int64_t n = prt_tensor_numel(x), on = prt_tensor_numel(&k->out->t);
	double *v = prt_tensor_gather(x), *acc = pr_xcalloc((size_t)(on ? on : 1), sizeof(double));
	int64_t idx[PR_MAX_RANK] = {0};
	for (int64_t i = 0; i < n; i++) {
		int64_t o = 0;
		for (int d = 0; d < x->rank; d++)
			if (!reduced[d])
				o = o * x->shape[d] + idx[d];
		acc[o] += v[i];
		for (int d = x->rank - 1; d >= 0; d--) {
			if (++idx[d] < x->shape[d])
				break;
			idx[d] = 0;
		}
	}
	if (mean)
		for (int64_t i = 0; i < on; i++)
			acc[i] /= (double)count;
	prt_tensor_scatter(&k->out->t, acc);
	free(v), free(acc);
	return NULL;
}

pr_err *prt_k_sum_dim(prt_kctx *k) { return reduce_impl(k, false); }
pr_err *prt_k_mean_dim(prt_kctx *k) { return reduce_impl(k, true); }

pr_err *prt_norm_args_get(prt_kctx *k, bool rms, int weight_at, int bias_at, int eps_at,
			 prt_norm_args *a)
{
	pr_err *err = NULL;
	prt_tensor *x = need_tensor(k, 0, &err);
	if (err)
		return err;
	int64_t ns[PR_MAX_RANK];
	int nn = prt_karg_ints(k, 1, ns, PR_MAX_RANK);
	if (nn < 0 || nn > x->rank)
		return prt_kernel_error(k, "normalized_shape must be a list of at most %d dims", x->rank);
	a->x = x;
	a->nn = nn;
	a->len = 1;
	for (int i = 0; i < nn; i++) {
		if (ns[i] != x->shape[x->rank - nn + i])
			return prt_kernel_error(k, "normalized_shape does not match the input's last dims");
		a->len *= ns[i];
	}
	a->w = prt_karg_tensor(k, weight_at);
	a->b = bias_at >= 0 ? prt_karg_tensor(k, bias_at) : NULL;
	if ((a->w && prt_tensor_numel(a->w) != a->len) || (a->b && prt_tensor_numel(a->b) != a->len))
		return prt_kernel_error(k, "weight and bias must have %lld elements", (long long)a->len);
	a->eps = prt_karg_float(k, eps_at, rms ? (x->dtype == PR_F64 ? 2.220446049250313e-16
								   : 1.1920928955078125e-07)
					       : 1e-5);
	return NULL;
}

/* Normalizes rows of the last dims named by normalized_shape (argument 1):
 * layer_norm subtracts the mean, rms_norm does not. */
static pr_err *norm_impl(prt_kctx *k, bool rms, int weight_at, int bias_at, int eps_at)
{
	prt_norm_args a;
	pr_err *err = prt_norm_args_get(k, rms, weight_at, bias_at, eps_at, &a);
	if (err || (err = prt_result_shape_check(k, a.x->rank, a.x->shape)))
		return err;
	prt_tensor *x = a.x, *w = a.w, *b = a.b;
	int64_t len = a.len;
	double eps = a.eps;
	double *v = prt_tensor_gather(x), *wv = w ? prt_tensor_gather(w) : NULL,
	       *bv = b ? prt_tensor_gather(b) : NULL;
	int64_t rows = len ? prt_tensor_numel(x) / len : 0;
	for (int64_t r = 0; r < rows; r++) {
		double *p = v + r * len, mu = 0, var = 0;
		for (int64_t j = 0; j < len && !rms; j++)
			mu += p[j] / (double)len;
		for (int64_t j = 0; j < len; j++)
			var += (p[j] - mu) * (p[j] - mu) / (double)len;
		double inv = 1 / sqrt(var + eps);
		for (int64_t j = 0; j < len; j++)
			p[j] = (p[j] - mu) * inv * (wv ? wv[j] : 1) + (bv ? bv[j] : 0);
	}
	prt_tensor_scatter(&k->out->t, v);
	free(v), free(wv), free(bv);
	return NULL;
}

/* layer_norm(input, normalized_shape, weight?, bias?, eps=1e-5, cudnn_enable) */
pr_err *prt_k_layer_norm(prt_kctx *k) { return norm_impl(k, false, 2, 3, 4); }
/* rms_norm(input, normalized_shape, weight?, eps?) */
pr_err *prt_k_rms_norm(prt_kctx *k) { return norm_impl(k, true, 2, -1, 3); }
