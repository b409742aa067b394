/* kernels_cuda.cu: CUDA kernels for the ops a device delegate's body runs.
 *
 * Like the host kernels they are stride-aware and share their structure:
 * every elementwise op (and the strided copy behind clone, contiguous,
 * copy_, reshape, cat and kv_update) is one grid-stride kernel over the
 * output's elements, each operand seen through broadcast strides computed by
 * the same helper the host uses (pr_bcast_strides); the in-place variants are
 * the same kernel with the output aliasing the first argument. Matrix
 * products go to cuBLAS (row-major operands with a unit stride on either dim
 * are passed as they are, transposed or not; anything else is first made
 * contiguous). Everything runs on the device's stream. f32 only; other dtypes
 * and the ops without a kernel here fall back to pr_k_staged (kernel_registry.c).
 * View ops read no element and run their host kernel. */
/* error.h declares pr_assert_fail with C11's _Noreturn, which C++ spells
 * differently. */
#ifndef _Noreturn
#define _Noreturn [[noreturn]]
#endif
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "rt_cuda.h"

namespace {

struct ew_desc {
	int rank;
	int op;
	int64_t n;
	int64_t shape[PR_MAX_RANK];
	int64_t os[PR_MAX_RANK], as[PR_MAX_RANK], bs[PR_MAX_RANK];
	float scalar, alpha;
	bool has_b;
};

__device__ float ew_apply(int op, float a, float b)
{
	switch (op) {
	case PR_EW_ADD: return a + b;
	case PR_EW_SUB: return a - b;
	case PR_EW_MUL: return a * b;
	case PR_EW_DIV: return a / b;
	case PR_EW_NEG: return -a;
	case PR_EW_RELU: return a > 0 ? a : 0;
	case PR_EW_SIN: return sinf(a);
	case PR_EW_COS: return cosf(a);
	case PR_EW_EXP: return expf(a);
	case PR_EW_TANH: return tanhf(a);
	case PR_EW_GELU: return 0.5f * a * (1 + erff(a * 0.70710678118654752f));
	case PR_EW_GELU_TANH:
		return 0.5f * a * (1 + tanhf(0.7978845608028654f * (a + 0.044715f * a * a * a)));
	case PR_EW_SIGMOID: return 1 / (1 + expf(-a));
	case PR_EW_COPY: return a;
	}
	return 0;
}

__global__ void ew_kernel(ew_desc d, float *o, const float *a, const float *b)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d.n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = i, oo = 0, ao = 0, bo = 0;
		for (int k = d.rank - 1; k >= 0; k--) {
			int64_t idx = r % d.shape[k];
			r /= d.shape[k];
			oo += idx * d.os[k];
			ao += idx * d.as[k];
			bo += idx * d.bs[k];
		}
		float bv = d.has_b ? b[bo] : d.scalar;
		o[oo] = ew_apply(d.op, a[ao], d.alpha * bv);
	}
}

cudaStream_t stream_of(pr_kctx *k) { return (cudaStream_t)pr_cuda_stream(pr_devset_dev(k->devs, k->dev)); }

pr_err *launch_error(pr_kctx *k, const char *what)
{
	cudaError_t rc = cudaGetLastError();
	if (rc == cudaSuccess)
		return NULL;
	return pr_kernel_error(k, "CUDA: %s failed: %s", what, cudaGetErrorString(rc));
}

bool all_f32(const pr_tensor *o, const pr_tensor *a, const pr_tensor *b)
{
	return o->dtype == PR_F32 && a->dtype == PR_F32 && (!b || b->dtype == PR_F32);
}

/* o = op(a, alpha * (b or scalar)) over o's shape. */
pr_err *ew_launch(pr_kctx *k, int op, pr_tensor *o, const pr_tensor *a, const pr_tensor *b,
		  double scalar, double alpha)
{
	ew_desc d;
	memset(&d, 0, sizeof d);
	d.rank = o->rank;
	d.op = op;
	d.n = pr_tensor_numel(o);
	d.scalar = (float)scalar;
	d.alpha = (float)alpha;
	d.has_b = b != NULL;
	memcpy(d.shape, o->shape, sizeof d.shape);
	memcpy(d.os, o->strides, sizeof d.os);
	if (!pr_bcast_strides(a, o, d.as) || (b && !pr_bcast_strides(b, o, d.bs)))
		return pr_kernel_error(k, "argument shapes do not broadcast to the result's");
	if (!all_f32(o, a, b))
		return pr_kernel_error(k, "the CUDA kernels take f32 tensors only");
	if (d.n == 0)
		return NULL;
	int threads = 256;
	int64_t blocks = (d.n + threads - 1) / threads;
	if (blocks > 65535)
		blocks = 65535;
	ew_kernel<<<(unsigned)blocks, threads, 0, stream_of(k)>>>(d, (float *)o->data,
								 (const float *)a->data,
								 b ? (const float *)b->data : NULL);
	return launch_error(k, "elementwise kernel launch");
}

pr_err *ew_impl(pr_kctx *k, int op, bool binary, int alpha_at)
{
	pr_tensor *a = pr_karg_tensor(k, 0), *b = binary ? pr_karg_tensor(k, 1) : NULL;
	if (!a || (binary && !b && pr_karg_is_none(k, 1)))
		return pr_kernel_error(k, "missing tensor argument");
	double scalar = binary ? pr_karg_float(k, 1, 0) : 0;
	double alpha = alpha_at >= 0 ? pr_karg_float(k, alpha_at, 1) : 1;
	return ew_launch(k, op, &k->out->t, a, b, scalar, alpha);
}

pr_err *cu_add(pr_kctx *k) { return ew_impl(k, PR_EW_ADD, true, 2); }
pr_err *cu_sub(pr_kctx *k) { return ew_impl(k, PR_EW_SUB, true, 2); }
pr_err *cu_mul(pr_kctx *k) { return ew_impl(k, PR_EW_MUL, true, -1); }
pr_err *cu_div(pr_kctx *k) { return ew_impl(k, PR_EW_DIV, true, -1); }
pr_err *cu_neg(pr_kctx *k) { return ew_impl(k, PR_EW_NEG, false, -1); }
pr_err *cu_relu(pr_kctx *k) { return ew_impl(k, PR_EW_RELU, false, -1); }
pr_err *cu_sin(pr_kctx *k) { return ew_impl(k, PR_EW_SIN, false, -1); }
pr_err *cu_cos(pr_kctx *k) { return ew_impl(k, PR_EW_COS, false, -1); }
pr_err *cu_exp(pr_kctx *k) { return ew_impl(k, PR_EW_EXP, false, -1); }
pr_err *cu_tanh(pr_kctx *k) { return ew_impl(k, PR_EW_TANH, false, -1); }
pr_err *cu_sigmoid(pr_kctx *k) { return ew_impl(k, PR_EW_SIGMOID, false, -1); }

pr_err *cu_gelu(pr_kctx *k)
{
	const char *approx = pr_karg_str(k, 1, "none");
	return ew_impl(k, strcmp(approx, "tanh") == 0 ? PR_EW_GELU_TANH : PR_EW_GELU, false, -1);
}

pr_err *cu_accumulate(pr_kctx *k)
{
	pr_tensor *x = pr_karg_tensor(k, 0), *y = pr_karg_tensor(k, 1);
	if (!x || !y)
		return pr_kernel_error(k, "x and y must be tensors");
	return ew_launch(k, PR_EW_ADD, x, x, y, 0, 1);
}

pr_err *copy_launch(pr_kctx *k, pr_tensor *dst, const pr_tensor *src)
{
	return ew_launch(k, PR_EW_COPY, dst, src, NULL, 0, 1);
}

pr_err *cu_clone(pr_kctx *k)
{
	pr_tensor *x = pr_karg_tensor(k, 0);
	return x ? copy_launch(k, &k->out->t, x) : pr_kernel_error(k, "self must be a tensor");
}

pr_err *cu_copy_(pr_kctx *k)
{
	pr_tensor *self = pr_karg_tensor(k, 0), *src = pr_karg_tensor(k, 1);
	if (!self || !src)
		return pr_kernel_error(k, "self and src must be tensors");
	pr_err *err = copy_launch(k, self, src);
	if (!err && k->out->kind == PR_RV_TENSOR)
		k->out->t = *self;
	return err;
}

pr_err *cu_contiguous(pr_kctx *k)
{
	pr_tensor *x = pr_karg_tensor(k, 0);
	if (!x)
		return pr_kernel_error(k, "self must be a tensor");
	if (k->out_alias && pr_tensor_is_contiguous(x)) {
		k->out->t = *x;
		return NULL;
	}
	if (k->out_alias) {
		if (!k->own)
			return pr_kernel_error(k, "no storage for a non-contiguous input");
		k->out->t = *k->own;
	}
	return copy_launch(k, &k->out->t, x);
}

/* reshape: the host kernel computes the view (no element read); when the
 * strides cannot express it, copy in row-major order through a contiguous
 * view of the destination. */
pr_err *cu_reshape(pr_kctx *k)
{
	pr_tensor *x = pr_karg_tensor(k, 0);
	if (!x)
		return pr_kernel_error(k, "self must be a tensor");
	int64_t shape[PR_MAX_RANK], st[PR_MAX_RANK];
	int n = pr_karg_ints(k, 1, shape, PR_MAX_RANK);
	if (n < 0)
		return pr_kernel_error(k, "shape must be a list of sizes");
	int64_t numel = pr_tensor_numel(x), known = 1;
	int infer = -1;
	for (int d = 0; d < n; d++) {
		if (shape[d] == -1)
			infer = d;
		else
			known *= shape[d];
	}
	if (infer >= 0)
		shape[infer] = known ? numel / known : 0;
	pr_tensor v = *x;
	v.rank = n;
	memcpy(v.shape, shape, sizeof(int64_t) * (size_t)n);
	if (pr_view_strides(x, n, shape, st)) {
		memcpy(v.strides, st, sizeof(int64_t) * (size_t)n);
		if (k->out_alias) {
			k->out->t = v;
			return NULL;
		}
		return copy_launch(k, &k->out->t, &v);
	}
	if (k->out_alias) {
		if (!k->own)
			return pr_kernel_error(k, "no storage to reshape a non-viewable tensor");
		k->out->t = *k->own;
	}
	if (!pr_tensor_is_contiguous(&k->out->t))
		return pr_kernel_error(k, "reshape into a non-contiguous result is not supported on CUDA");
	/* x's elements in row-major order land in the contiguous result seen
	 * with x's shape. */
	pr_tensor dst = *x;
	dst.data = k->out->t.data;
	dst.storage = k->out->t.storage;
	int64_t s = 1;
	for (int d = x->rank - 1; d >= 0; d--)
		dst.strides[d] = s, s *= x->shape[d];
	return copy_launch(k, &dst, x);
}

pr_err *cu_kv_update(pr_kctx *k)
{
	pr_tensor *cache = pr_karg_tensor(k, 0), *value = pr_karg_tensor(k, 1), row, src;
	if (!cache || !value)
		return pr_kernel_error(k, "cache and value must be tensors");
	pr_err *err = pr_select_view(k, cache, 0, pr_karg_int(k, 2, 0), &row);
	if (!err)
		err = pr_select_view(k, value, 0, 0, &src);
	return err ? err : copy_launch(k, &row, &src);
}

pr_err *cu_cat(pr_kctx *k)
{
	pr_karg *list = k->n_args > 0 ? &k->args[0] : NULL;
	if (!list || list->kind != PR_ARG_LIST)
		return pr_kernel_error(k, "argument 0 must be a list of tensors");
	pr_tensor *o = &k->out->t;
	int d = pr_dim(pr_karg_int(k, 1, 0), o->rank);
	if (d < 0)
		return pr_kernel_error(k, "dim out of range");
	int64_t at = 0, es = (int64_t)pr_dtype_size(o->dtype);
	for (int j = 0; j < list->n; j++) {
		pr_karg *it = &list->items[j];
		if (it->kind != PR_ARG_VALUE || it->v->kind != PR_RV_TENSOR)
			return pr_kernel_error(k, "item %d of the list is not a tensor", j);
		pr_tensor *x = &it->v->t;
		if (x->rank != o->rank || at + x->shape[d] > o->shape[d])
			return pr_kernel_error(k, "item %d does not fit the result along dim %d", j, d);
		pr_tensor part = *o;
		part.data = o->data + at * o->strides[d] * es;
		part.shape[d] = x->shape[d];
		pr_err *err = copy_launch(k, &part, x);
		if (err)
			return err;
		at += x->shape[d];
	}
	return NULL;
}

/* ---- matrix products (cuBLAS) --------------------------------------------------- */

/* A 2-D operand as cuBLAS wants it: in column-major terms, row-major X
 * (strides [ld, 1]) is X^T with leading dimension ld. */
struct operand {
	const float *p;
	int64_t ld;
	bool rowmajor;     /* else strides [1, ld] */
};

bool as_operand(const pr_tensor *t, operand *o)
{
	o->p = (const float *)t->data;
	if (t->strides[1] == 1 && t->strides[0] >= (t->shape[1] ? t->shape[1] : 1)) {
		o->ld = t->strides[0];
		o->rowmajor = true;
		return true;
	}
	if (t->strides[0] == 1 && t->strides[1] >= (t->shape[0] ? t->shape[0] : 1)) {
		o->ld = t->strides[1];
		o->rowmajor = false;
		return true;
	}
	return false;
}

pr_err *blas_error(pr_kctx *k, cublasStatus_t st, const char *call)
{
	return st == CUBLAS_STATUS_SUCCESS ? NULL
					   : pr_kernel_error(k, "cuBLAS: %s failed (status %d)", call, (int)st);
}

/* c[n,m] (row-major, ldc) = alpha * a[n,kk] @ b[kk,m] + beta * c. In
 * column-major terms: C^T = B^T A^T. */
pr_err *gemm(pr_kctx *k, const pr_tensor *a, const pr_tensor *b, pr_tensor *c, float alpha, float beta)
{
	operand A, B;
	if (c->strides[1] != 1 && c->shape[1] > 1)
		return pr_kernel_error(k, "a matrix product into a non-row-major result is not supported on CUDA");
	if (!as_operand(a, &A) || !as_operand(b, &B))
		return pr_kernel_error(k, "matrix operands need a unit stride on one dim on CUDA");
	int n = (int)a->shape[0], kk = (int)a->shape[1], m = (int)b->shape[1];
	int ldc = (int)(c->strides[0] > m ? c->strides[0] : (m ? m : 1));
	cublasHandle_t h = (cublasHandle_t)pr_cuda_blas(pr_devset_dev(k->devs, k->dev));
	cublasStatus_t st = cublasSgemm(h, B.rowmajor ? CUBLAS_OP_N : CUBLAS_OP_T,
					A.rowmajor ? CUBLAS_OP_N : CUBLAS_OP_T, m, n, kk, &alpha, B.p,
					(int)B.ld, A.p, (int)A.ld, &beta, (float *)c->data, ldc);
	return blas_error(k, st, "cublasSgemm");
}

pr_err *check_mm(pr_kctx *k, const pr_tensor *a, const pr_tensor *b, const pr_tensor *c)
{
	if (!a || !b || a->rank != 2 || b->rank != 2 || c->rank != 2 || a->shape[1] != b->shape[0] ||
	    c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1])
		return pr_kernel_error(k, "matrix shapes do not match");
	if (!all_f32(c, a, b))
		return pr_kernel_error(k, "the CUDA kernels take f32 tensors only");
	return NULL;
}

pr_err *cu_mm(pr_kctx *k)
{
	pr_tensor *a = pr_karg_tensor(k, 0), *b = pr_karg_tensor(k, 1);
	pr_err *err = check_mm(k, a, b, &k->out->t);
	return err ? err : gemm(k, a, b, &k->out->t, 1, 0);
}

pr_err *cu_addmm(pr_kctx *k)
{
	pr_tensor *bias = pr_karg_tensor(k, 0), *a = pr_karg_tensor(k, 1), *b = pr_karg_tensor(k, 2);
	pr_err *err = check_mm(k, a, b, &k->out->t);
	if (err || !bias)
		return err ? err : pr_kernel_error(k, "self must be a tensor");
	double beta = pr_karg_float(k, 3, 1), alpha = pr_karg_float(k, 4, 1);
	if ((err = copy_launch(k, &k->out->t, bias)))   /* broadcast the bias into the result */
		return err;
	return gemm(k, a, b, &k->out->t, (float)alpha, (float)beta);
}

/* linear(x[..., in], w[out, in], bias?) = x @ w^T + bias, x seen as [N, in]. */
pr_err *cu_linear(pr_kctx *k)
{
	pr_tensor *x = pr_karg_tensor(k, 0), *w = pr_karg_tensor(k, 1), *bias = pr_karg_tensor(k, 2);
	if (!x || !w || w->rank != 2 || x->rank < 1)
		return pr_kernel_error(k, "input and weight must be tensors, weight of rank 2");
	int64_t in = w->shape[1], out = w->shape[0], rows = in ? pr_tensor_numel(x) / in : 0;
	pr_tensor x2 = *x, c2 = k->out->t, wt = *w;
	int64_t s2[2] = {rows, in}, c2s[2] = {rows, out};
	if (!pr_view_strides(x, 2, s2, x2.strides) || !pr_view_strides(&k->out->t, 2, c2s, c2.strides))
		return pr_kernel_error(k, "input and result must be viewable as matrices on CUDA");
	x2.rank = c2.rank = 2;
	x2.shape[0] = rows, x2.shape[1] = in;
	c2.shape[0] = rows, c2.shape[1] = out;
	wt.shape[0] = in, wt.shape[1] = out;       /* w^T: swap the dims */
	wt.strides[0] = w->strides[1], wt.strides[1] = w->strides[0];
	pr_err *err = check_mm(k, &x2, &wt, &c2);
	if (err)
		return err;
	if (bias && (err = copy_launch(k, &c2, bias)))
		return err;
	return gemm(k, &x2, &wt, &c2, 1, bias ? 1.0f : 0.0f);
}

pr_err *cu_bmm(pr_kctx *k)
{
	pr_tensor *a = pr_karg_tensor(k, 0), *b = pr_karg_tensor(k, 1), *c = &k->out->t;
	if (!a || !b || a->rank != 3 || b->rank != 3 || c->rank != 3 || a->shape[0] != b->shape[0])
		return pr_kernel_error(k, "bmm takes two rank-3 tensors of one batch size");
	for (int64_t i = 0; i < a->shape[0]; i++) {
		pr_tensor ai, bi, ci;
		pr_err *err = pr_select_view(k, a, 0, i, &ai);
		if (!err)
			err = pr_select_view(k, b, 0, i, &bi);
		if (!err)
			err = pr_select_view(k, c, 0, i, &ci);
		if (!err)
			err = check_mm(k, &ai, &bi, &ci);
		if (!err)
			err = gemm(k, &ai, &bi, &ci, 1, 0);
		if (err)
			return err;
	}
	return NULL;
}

const pr_cuda_kernel cuda_kernels[] = {
	{"aten::add.Tensor", cu_add},   {"aten::add.Scalar", cu_add},
	{"aten::add_.Tensor", cu_add},  {"aten::add_.Scalar", cu_add},
	{"aten::sub.Tensor", cu_sub},   {"aten::sub.Scalar", cu_sub},
	{"aten::sub_.Tensor", cu_sub},  {"aten::mul.Tensor", cu_mul},
	{"aten::mul.Scalar", cu_mul},   {"aten::mul_.Tensor", cu_mul},
	{"aten::mul_.Scalar", cu_mul},  {"aten::div.Tensor", cu_div},
	{"aten::div.Scalar", cu_div},   {"aten::div_.Tensor", cu_div},
	{"aten::neg", cu_neg},          {"aten::relu", cu_relu},
	{"aten::relu_", cu_relu},       {"aten::sin", cu_sin},
	{"aten::cos", cu_cos},          {"aten::exp", cu_exp},
	{"aten::tanh", cu_tanh},        {"aten::gelu", cu_gelu},
	{"aten::sigmoid", cu_sigmoid},  {"custom::accumulate", cu_accumulate},
	{"aten::clone", cu_clone},      {"aten::copy_", cu_copy_},
	{"aten::contiguous", cu_contiguous}, {"aten::reshape", cu_reshape},
	{"custom::kv_update", cu_kv_update}, {"aten::cat", cu_cat},
	{"aten::mm", cu_mm},            {"aten::addmm", cu_addmm},
	{"aten::linear", cu_linear},    {"aten::bmm", cu_bmm},
};

} // namespace

extern "C" const pr_cuda_kernel *pr_cuda_kernels(int *n)
{
	*n = (int)(sizeof cuda_kernels / sizeof cuda_kernels[0]);
	return cuda_kernels;
}

/* The strided copy on a device, for the executor (delegate results). */
extern "C" pr_err *pr_cuda_copy(pr_kctx *k, pr_tensor *dst, const pr_tensor *src)
{
	return copy_launch(k, dst, src);
}
