/* kernels_cuda.cu: CUDA kernels for the ops a device delegate's body runs.
 *
 * Like the host kernels they are stride-aware and share their structure:
 * every elementwise op (and the strided copy behind clone, contiguous,
 * copy_, reshape, cat and kv_update) is one grid-stride kernel over the
 * output's elements, each operand seen through broadcast strides computed by
 * the same helper the host uses (prt_bcast_strides); the in-place variants are
 * the same kernel with the output aliasing the first argument. Matrix
 * products go to cuBLAS (row-major operands with a unit stride on either dim
 * are passed as they are, transposed or not; anything else is first made
 * contiguous).
 *
 * Row ops (softmax, sum and mean over dims, layer_norm, rms_norm) split the
 * input into rows: the reduced dims form a row, the others number the rows,
 * each side walked through its own strides (struct strided). One block per
 * row, a shared-memory reduction, float arithmetic; softmax subtracts the
 * row's maximum, the norms take the mean first and then the variance around
 * it, with the host kernel's eps (the argument checks are the host kernel's
 * own, prt_reduce_dims and prt_norm_args_get). Index ops (embedding,
 * index_select, index_put_) check every index on the device first: the first
 * one out of range is recorded in a device variable, nothing is written
 * through it, and the op reads the record back (waiting for the stream) to
 * report the host kernel's error.
 *
 * Everything runs on the device's stream. f32 data and i64/i32 indices;
 * add, sub, mul, div and neg on other dtypes run the host's typed plan on
 * the device (prt_cuda_ew_typed, kernels_cuda_nn.cu), as the host kernels
 * do; every other op hands other dtypes to prt_k_staged, which runs the
 * host kernel on host copies (slow but exact), except contiguous and
 * reshape, whose copy (when they need one) takes f32 only. View ops read no element and run
 * their host kernel. */
/* error.h declares pr_assert_fail with C11's _Noreturn, which C++ spells
 * differently. */
#ifndef _Noreturn
#define _Noreturn [[noreturn]]
#endif
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>

#include <iterator>
#include <vector>

#include "kernels.h"
#include "kernels_elementwise.h"
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
	case PRT_EW_ADD: return a + b;
	case PRT_EW_SUB: return a - b;
	case PRT_EW_MUL: return a * b;
	case PRT_EW_DIV: return a / b;
	case PRT_EW_NEG: return -a;
	case PRT_EW_RELU: return a > 0 ? a : 0;
	case PRT_EW_SIN: return sinf(a);
	case PRT_EW_COS: return cosf(a);
	case PRT_EW_EXP: return expf(a);
	case PRT_EW_TANH: return tanhf(a);
	case PRT_EW_GELU: return 0.5f * a * (1 + erff(a * 0.70710678118654752f));
	case PRT_EW_GELU_TANH:
		return 0.5f * a * (1 + tanhf(0.7978845608028654f * (a + 0.044715f * a * a * a)));
	case PRT_EW_SIGMOID: return 1 / (1 + expf(-a));
	case PRT_EW_COPY: return a;
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

/* A strided copy of elements of T's size: the bits move as they are, so one
 * instance serves every dtype of that size. */
template <typename T> __global__ void copy_kernel(ew_desc d, T *o, const T *a)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d.n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = i, oo = 0, ao = 0;
		for (int k = d.rank - 1; k >= 0; k--) {
			int64_t idx = r % d.shape[k];
			r /= d.shape[k];
			oo += idx * d.os[k];
			ao += idx * d.as[k];
		}
		o[oo] = a[ao];
	}
}

cudaStream_t stream_of(prt_kctx *k) { return (cudaStream_t)prt_cuda_stream(prt_devset_dev(k->devs, k->dev)); }

pr_err *launch_error(prt_kctx *k, const char *what)
{
	cudaError_t rc = cudaGetLastError();
	if (rc == cudaSuccess)
		return NULL;
	return prt_kernel_error(k, "CUDA: %s failed: %s", what, cudaGetErrorString(rc));
}

/* Grid-stride kernels: THREADS a block, enough blocks for n items (capped;
 * each thread then takes several). */
const int THREADS = 256;
unsigned blocks_for(int64_t n)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

bool all_f32(const prt_tensor *o, const prt_tensor *a, const prt_tensor *b)
{
	return o->dtype == PR_F32 && a->dtype == PR_F32 && (!b || b->dtype == PR_F32);
}

/* The copy of ew_launch for a dtype other than f32 (o and a alike). */
pr_err *copy_bits(prt_kctx *k, const ew_desc &d, prt_tensor *o, const prt_tensor *a)
{
	if (d.n == 0)
		return NULL;
	unsigned blocks = blocks_for(d.n);
	cudaStream_t st = stream_of(k);
	switch (pr_dtype_size(o->dtype)) {
	case 1: copy_kernel<<<blocks, THREADS, 0, st>>>(d, (uint8_t *)o->data, (const uint8_t *)a->data); break;
	case 2: copy_kernel<<<blocks, THREADS, 0, st>>>(d, (uint16_t *)o->data, (const uint16_t *)a->data); break;
	case 4: copy_kernel<<<blocks, THREADS, 0, st>>>(d, (uint32_t *)o->data, (const uint32_t *)a->data); break;
	case 8: copy_kernel<<<blocks, THREADS, 0, st>>>(d, (uint64_t *)o->data, (const uint64_t *)a->data); break;
	default: return prt_kernel_error(k, "no CUDA copy for elements of %zu bytes", pr_dtype_size(o->dtype));
	}
	return launch_error(k, "copy kernel launch");
}

/* o = op(a, alpha * (b or scalar)) over o's shape. */
pr_err *ew_launch(prt_kctx *k, int op, prt_tensor *o, const prt_tensor *a, const prt_tensor *b,
		  double scalar, double alpha)
{
	ew_desc d;
	memset(&d, 0, sizeof d);
	d.rank = o->rank;
	d.op = op;
	d.n = prt_tensor_numel(o);
	d.scalar = (float)scalar;
	d.alpha = (float)alpha;
	d.has_b = b != NULL;
	memcpy(d.shape, o->shape, sizeof d.shape);
	memcpy(d.os, o->strides, sizeof d.os);
	if (!prt_bcast_strides(a, o, d.as) || (b && !prt_bcast_strides(b, o, d.bs)))
		return prt_kernel_error(k, "argument shapes do not broadcast to the result's");
	if (op == PRT_EW_COPY && o->dtype == a->dtype && o->dtype != PR_F32)
		return copy_bits(k, d, o, a);
	if (!all_f32(o, a, b))
		return prt_kernel_error(k, "the CUDA kernels take f32 tensors only");
	if (d.n == 0)
		return NULL;
	ew_kernel<<<blocks_for(d.n), THREADS, 0, stream_of(k)>>>(d, (float *)o->data,
								(const float *)a->data,
								b ? (const float *)b->data : NULL);
	return launch_error(k, "elementwise kernel launch");
}

/* Every tensor argument (list items too) has dtype t. */
bool all_dtype(const prt_karg *a, int n, pr_dtype t)
{
	for (int i = 0; i < n; i++) {
		if (a[i].kind == PR_ARG_LIST && !all_dtype(a[i].items, a[i].n, t))
			return false;
		if (a[i].kind == PR_ARG_VALUE && a[i].v->kind == PRT_RV_TENSOR && a[i].v->t.dtype != t)
			return false;
	}
	return true;
}

bool result_dtype_is(const prt_kctx *k, pr_dtype t)
{
	return k->out->kind != PRT_RV_TENSOR || k->out->t.dtype == t;
}

/* The arithmetic kernels below take f32 only; any other dtype runs staged,
 * exactly as the host would. */
bool f32_op(const prt_kctx *k)
{
	return all_dtype(k->args, k->n_args, PR_F32) && result_dtype_is(k, PR_F32);
}

/* The copy ops move elements of any one dtype (copy_bits); a conversion
 * between dtypes runs staged. */
bool one_dtype_op(prt_kctx *k)
{
	const prt_tensor *first = prt_karg_tensor(k, 0);
	if (!first && k->n_args > 0 && k->args[0].kind == PR_ARG_LIST && k->args[0].n > 0 &&
	    k->args[0].items[0].kind == PR_ARG_VALUE && k->args[0].items[0].v->kind == PRT_RV_TENSOR)
		first = &k->args[0].items[0].v->t;   /* cat's list */
	pr_dtype t = first ? first->dtype : PR_F32;
	return all_dtype(k->args, k->n_args, t) && result_dtype_is(k, t);
}

/* The typed op (kernels_elementwise.h) the host runs add, sub, mul, div and
 * neg as when an operand or the result is not f32; -1 for the others. */
int typed_op(int op)
{
	switch (op) {
	case PRT_EW_ADD: return PRT_EWT_ADD;
	case PRT_EW_SUB: return PRT_EWT_SUB;
	case PRT_EW_MUL: return PRT_EWT_MUL;
	case PRT_EW_DIV: return PRT_EWT_DIV;
	case PRT_EW_NEG: return PRT_EWT_NEG;
	default: return -1;
	}
}

pr_err *ew_impl(prt_kctx *k, int op, bool binary, int alpha_at)
{
	if (!f32_op(k))
		return typed_op(op) >= 0 ? prt_cuda_ew_typed(k, typed_op(op), binary ? 2 : 1, alpha_at)
					 : prt_k_staged(k);
	prt_tensor *a = prt_karg_tensor(k, 0), *b = binary ? prt_karg_tensor(k, 1) : NULL;
	if (!a || (binary && !b && prt_karg_is_none(k, 1)))
		return prt_kernel_error(k, "missing tensor argument");
	double scalar = binary ? prt_karg_float(k, 1, 0) : 0;
	double alpha = alpha_at >= 0 ? prt_karg_float(k, alpha_at, 1) : 1;
	return ew_launch(k, op, &k->out->t, a, b, scalar, alpha);
}

pr_err *cu_add(prt_kctx *k) { return ew_impl(k, PRT_EW_ADD, true, 2); }
pr_err *cu_sub(prt_kctx *k) { return ew_impl(k, PRT_EW_SUB, true, 2); }
pr_err *cu_mul(prt_kctx *k) { return ew_impl(k, PRT_EW_MUL, true, -1); }
pr_err *cu_div(prt_kctx *k) { return ew_impl(k, PRT_EW_DIV, true, -1); }
pr_err *cu_neg(prt_kctx *k) { return ew_impl(k, PRT_EW_NEG, false, -1); }
pr_err *cu_relu(prt_kctx *k) { return ew_impl(k, PRT_EW_RELU, false, -1); }
pr_err *cu_sin(prt_kctx *k) { return ew_impl(k, PRT_EW_SIN, false, -1); }
pr_err *cu_cos(prt_kctx *k) { return ew_impl(k, PRT_EW_COS, false, -1); }
pr_err *cu_exp(prt_kctx *k) { return ew_impl(k, PRT_EW_EXP, false, -1); }
pr_err *cu_tanh(prt_kctx *k) { return ew_impl(k, PRT_EW_TANH, false, -1); }
pr_err *cu_sigmoid(prt_kctx *k) { return ew_impl(k, PRT_EW_SIGMOID, false, -1); }

pr_err *cu_gelu(prt_kctx *k)
{
	const char *approx = prt_karg_str(k, 1, "none");
	return ew_impl(k, strcmp(approx, "tanh") == 0 ? PRT_EW_GELU_TANH : PRT_EW_GELU, false, -1);
}

pr_err *cu_accumulate(prt_kctx *k)
{
	if (!f32_op(k))
		return prt_k_staged(k);
	prt_tensor *x = prt_karg_tensor(k, 0), *y = prt_karg_tensor(k, 1);
	if (!x || !y)
		return prt_kernel_error(k, "x and y must be tensors");
	return ew_launch(k, PRT_EW_ADD, x, x, y, 0, 1);
}

pr_err *copy_launch(prt_kctx *k, prt_tensor *dst, const prt_tensor *src)
{
	return ew_launch(k, PRT_EW_COPY, dst, src, NULL, 0, 1);
}

pr_err *cu_clone(prt_kctx *k)
{
	if (!one_dtype_op(k))
		return prt_k_staged(k);
	prt_tensor *x = prt_karg_tensor(k, 0);
	return x ? copy_launch(k, &k->out->t, x) : prt_kernel_error(k, "self must be a tensor");
}

pr_err *cu_copy_(prt_kctx *k)
{
	if (!one_dtype_op(k))
		return prt_k_staged(k);
	prt_tensor *self = prt_karg_tensor(k, 0), *src = prt_karg_tensor(k, 1);
	if (!self || !src)
		return prt_kernel_error(k, "self and src must be tensors");
	pr_err *err = copy_launch(k, self, src);
	if (!err && k->out->kind == PRT_RV_TENSOR)
		k->out->t = *self;
	return err;
}

pr_err *cu_contiguous(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0);
	if (!x)
		return prt_kernel_error(k, "self must be a tensor");
	if (k->out_alias && prt_tensor_is_contiguous(x)) {
		k->out->t = *x;
		return NULL;
	}
	if (k->out_alias) {
		if (!k->own)
			return prt_kernel_error(k, "no storage for a non-contiguous input");
		k->out->t = *k->own;
	}
	return copy_launch(k, &k->out->t, x);
}

/* reshape: the host kernel computes the view (no element read); when the
 * strides cannot express it, copy in row-major order through a contiguous
 * view of the destination. */
pr_err *cu_reshape(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0);
	if (!x)
		return prt_kernel_error(k, "self must be a tensor");
	int64_t shape[PR_MAX_RANK], st[PR_MAX_RANK];
	int n = prt_karg_ints(k, 1, shape, PR_MAX_RANK);
	if (n < 0)
		return prt_kernel_error(k, "shape must be a list of sizes");
	int64_t numel = prt_tensor_numel(x), known = 1;
	int infer = -1;
	for (int d = 0; d < n; d++) {
		if (shape[d] == -1)
			infer = d;
		else
			known *= shape[d];
	}
	if (infer >= 0)
		shape[infer] = known ? numel / known : 0;
	prt_tensor v = *x;
	v.rank = n;
	memcpy(v.shape, shape, sizeof(int64_t) * (size_t)n);
	if (prt_view_strides(x, n, shape, st)) {
		memcpy(v.strides, st, sizeof(int64_t) * (size_t)n);
		if (k->out_alias) {
			k->out->t = v;
			return NULL;
		}
		return copy_launch(k, &k->out->t, &v);
	}
	if (k->out_alias) {
		if (!k->own)
			return prt_kernel_error(k, "no storage to reshape a non-viewable tensor");
		k->out->t = *k->own;
	}
	if (!prt_tensor_is_contiguous(&k->out->t))
		return prt_kernel_error(k, "reshape into a non-contiguous result is not supported on CUDA");
	/* x's elements in row-major order land in the contiguous result seen
	 * with x's shape. */
	prt_tensor dst = *x;
	dst.data = k->out->t.data;
	dst.storage = k->out->t.storage;
	int64_t s = 1;
	for (int d = x->rank - 1; d >= 0; d--)
		dst.strides[d] = s, s *= x->shape[d];
	return copy_launch(k, &dst, x);
}

pr_err *cu_kv_update(prt_kctx *k)
{
	if (!one_dtype_op(k))
		return prt_k_staged(k);
	prt_tensor *cache = prt_karg_tensor(k, 0), *value = prt_karg_tensor(k, 1), row, src;
	if (!cache || !value)
		return prt_kernel_error(k, "cache and value must be tensors");
	pr_err *err = prt_select_view(k, cache, 0, prt_karg_int(k, 2, 0), &row);
	if (!err)
		err = prt_select_view(k, value, 0, 0, &src);
	return err ? err : copy_launch(k, &row, &src);
}

pr_err *cu_cat(prt_kctx *k)
{
	if (!one_dtype_op(k))
		return prt_k_staged(k);
	prt_karg *list = k->n_args > 0 ? &k->args[0] : NULL;
	if (!list || list->kind != PR_ARG_LIST)
		return prt_kernel_error(k, "argument 0 must be a list of tensors");
	prt_tensor *o = &k->out->t;
	int d = prt_dim(prt_karg_int(k, 1, 0), o->rank);
	if (d < 0)
		return prt_kernel_error(k, "dim out of range");
	int64_t at = 0, es = (int64_t)pr_dtype_size(o->dtype);
	for (int j = 0; j < list->n; j++) {
		prt_karg *it = &list->items[j];
		if (it->kind != PR_ARG_VALUE || it->v->kind != PRT_RV_TENSOR)
			return prt_kernel_error(k, "item %d of the list is not a tensor", j);
		prt_tensor *x = &it->v->t;
		if (x->rank == 1 && x->shape[0] == 0 && o->rank != 1)
			continue;   /* legacy empty tensors are skipped, as on the host */
		pr_err *err = prt_cat_item_check(k, o, x, d, at, j);
		if (err)
			return err;
		prt_tensor part = *o;
		part.data = o->data + at * o->strides[d] * es;
		part.shape[d] = x->shape[d];
		if ((err = copy_launch(k, &part, x)))
			return err;
		at += x->shape[d];
	}
	if (at != o->shape[d])
		return prt_kernel_error(k, "the inputs fill %lld of %lld along dim %d", (long long)at,
				       (long long)o->shape[d], d);
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

bool as_operand(const prt_tensor *t, operand *o)
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

pr_err *blas_error(prt_kctx *k, cublasStatus_t st, const char *call)
{
	return st == CUBLAS_STATUS_SUCCESS ? NULL
					   : prt_kernel_error(k, "cuBLAS: %s failed (status %d)", call, (int)st);
}

/* c[n,m] (row-major, ldc) = alpha * a[n,kk] @ b[kk,m] + beta * c. In
 * column-major terms: C^T = B^T A^T. */
pr_err *gemm(prt_kctx *k, const prt_tensor *a, const prt_tensor *b, prt_tensor *c, float alpha, float beta)
{
	operand A, B;
	if (c->strides[1] != 1 && c->shape[1] > 1)
		return prt_kernel_error(k, "a matrix product into a non-row-major result is not supported on CUDA");
	if (!as_operand(a, &A) || !as_operand(b, &B))
		return prt_kernel_error(k, "matrix operands need a unit stride on one dim on CUDA");
	int n = (int)a->shape[0], kk = (int)a->shape[1], m = (int)b->shape[1];
	int ldc = (int)(c->strides[0] > m ? c->strides[0] : (m ? m : 1));
	cublasHandle_t h = (cublasHandle_t)prt_cuda_blas(prt_devset_dev(k->devs, k->dev));
	cublasStatus_t st = cublasSgemm(h, B.rowmajor ? CUBLAS_OP_N : CUBLAS_OP_T,
					A.rowmajor ? CUBLAS_OP_N : CUBLAS_OP_T, m, n, kk, &alpha, B.p,
					(int)B.ld, A.p, (int)A.ld, &beta, (float *)c->data, ldc);
	return blas_error(k, st, "cublasSgemm");
}

/* The operands are f32: every caller runs only after f32_op. */
pr_err *check_mm(prt_kctx *k, const prt_tensor *a, const prt_tensor *b, const prt_tensor *c)
{
	if (!a || !b || a->rank != 2 || b->rank != 2 || c->rank != 2 || a->shape[1] != b->shape[0] ||
	    c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1])
		return prt_kernel_error(k, "matrix shapes do not match");
	return NULL;
}

pr_err *cu_mm(prt_kctx *k)
{
	if (!f32_op(k))
		return prt_k_staged(k);
	prt_tensor *a = prt_karg_tensor(k, 0), *b = prt_karg_tensor(k, 1);
	pr_err *err = check_mm(k, a, b, &k->out->t);
	return err ? err : gemm(k, a, b, &k->out->t, 1, 0);
}

pr_err *cu_addmm(prt_kctx *k)
{
	if (!f32_op(k))
		return prt_k_staged(k);
	prt_tensor *bias = prt_karg_tensor(k, 0), *a = prt_karg_tensor(k, 1), *b = prt_karg_tensor(k, 2);
	pr_err *err = check_mm(k, a, b, &k->out->t);
	if (err || !bias)
		return err ? err : prt_kernel_error(k, "self must be a tensor");
	double beta = prt_karg_float(k, 3, 1), alpha = prt_karg_float(k, 4, 1);
	if ((err = copy_launch(k, &k->out->t, bias)))   /* broadcast the bias into the result */
		return err;
	return gemm(k, a, b, &k->out->t, (float)alpha, (float)beta);
}

/* linear(x[..., in], w[out, in], bias?) = x @ w^T + bias, x seen as [N, in]. */
pr_err *cu_linear(prt_kctx *k)
{
	if (!f32_op(k))
		return prt_k_staged(k);
	prt_tensor *x = prt_karg_tensor(k, 0), *w = prt_karg_tensor(k, 1), *bias = prt_karg_tensor(k, 2);
	if (!x || !w || w->rank != 2 || x->rank < 1)
		return prt_kernel_error(k, "input and weight must be tensors, weight of rank 2");
	int64_t in = w->shape[1], out = w->shape[0], rows = in ? prt_tensor_numel(x) / in : 0;
	int64_t oshape[PR_MAX_RANK];
	memcpy(oshape, x->shape, sizeof(int64_t) * (size_t)x->rank);
	oshape[x->rank - 1] = out;
	pr_err *err = x->shape[x->rank - 1] != in ?
		prt_kernel_error(k, "input's last dim must be %lld", (long long)in) :
		prt_result_shape_check(k, x->rank, oshape);
	if (err)
		return err;
	prt_tensor x2 = *x, c2 = k->out->t, wt = *w;
	int64_t s2[2] = {rows, in}, c2s[2] = {rows, out};
	if (!prt_view_strides(x, 2, s2, x2.strides) || !prt_view_strides(&k->out->t, 2, c2s, c2.strides))
		return prt_kernel_error(k, "input and result must be viewable as matrices on CUDA");
	x2.rank = c2.rank = 2;
	x2.shape[0] = rows, x2.shape[1] = in;
	c2.shape[0] = rows, c2.shape[1] = out;
	wt.shape[0] = in, wt.shape[1] = out;       /* w^T: swap the dims */
	wt.strides[0] = w->strides[1], wt.strides[1] = w->strides[0];
	if ((err = check_mm(k, &x2, &wt, &c2)))
		return err;
	if (bias && (err = copy_launch(k, &c2, bias)))
		return err;
	return gemm(k, &x2, &wt, &c2, 1, bias ? 1.0f : 0.0f);
}

pr_err *cu_bmm(prt_kctx *k)
{
	if (!f32_op(k))
		return prt_k_staged(k);
	prt_tensor *a = prt_karg_tensor(k, 0), *b = prt_karg_tensor(k, 1), *c = &k->out->t;
	if (!a || !b || a->rank != 3 || b->rank != 3 || c->rank != 3 || a->shape[0] != b->shape[0])
		return prt_kernel_error(k, "bmm takes two rank-3 tensors of one batch size");
	for (int64_t i = 0; i < a->shape[0]; i++) {
		prt_tensor ai, bi, ci;
		pr_err *err = prt_select_view(k, a, 0, i, &ai);
		if (!err)
			err = prt_select_view(k, b, 0, i, &bi);
		if (!err)
			err = prt_select_view(k, c, 0, i, &ci);
		if (!err)
			err = check_mm(k, &ai, &bi, &ci);
		if (!err)
			err = gemm(k, &ai, &bi, &ci, 1, 0);
		if (err)
			return err;
	}
	return NULL;
}

/* ---- row kernels: softmax, sum / mean, layer_norm / rms_norm ----------------------- */

/* Some dims of a tensor walked in row-major order: element i of the walk is
 * at strided_at(s, i) from the data pointer. */
struct strided {
	int rank;
	int64_t shape[PR_MAX_RANK];
	int64_t st[PR_MAX_RANK];
};

__host__ __device__ int64_t strided_at(const strided &s, int64_t i)
{
	int64_t off = 0;
	for (int d = s.rank - 1; d >= 0; d--) {
		off += i % s.shape[d] * s.st[d];
		i /= s.shape[d];
	}
	return off;
}

/* The dims of t that keep marks (all when keep is NULL). Size-1 dims are
 * dropped and neighbours that are contiguous with each other merged, which
 * leaves the walk's offsets as they were and saves divisions. */
strided strided_of(const prt_tensor *t, const bool *keep)
{
	strided s;
	memset(&s, 0, sizeof s);
	for (int d = 0; d < t->rank; d++) {
		if ((keep && !keep[d]) || t->shape[d] == 1)
			continue;
		if (s.rank > 0 && s.st[s.rank - 1] == t->strides[d] * t->shape[d]) {
			s.shape[s.rank - 1] *= t->shape[d];
			s.st[s.rank - 1] = t->strides[d];
			continue;
		}
		s.shape[s.rank] = t->shape[d];
		s.st[s.rank++] = t->strides[d];
	}
	return s;
}

/* rows x len elements: row r of x starts at strided_at(xr, r), its element j
 * is strided_at(xe, j) further; the same for the result (or, for sum and
 * mean, result r is at strided_at(orow, r)). */
struct rows_desc {
	strided xr, xe, orow, oe;
	int64_t rows, len;
};

/* A row split: the dims `reduced` marks form the row's elements, the others
 * number the rows; o is split the same way (o NULL: not split). */
rows_desc rows_of(const prt_tensor *x, const prt_tensor *o, const bool *reduced)
{
	bool kept[PR_MAX_RANK];
	for (int d = 0; d < PR_MAX_RANK; d++)
		kept[d] = !reduced[d];
	rows_desc r;
	memset(&r, 0, sizeof r);
	r.xr = strided_of(x, kept);
	r.xe = strided_of(x, reduced);
	if (o) {
		r.orow = strided_of(o, kept);
		r.oe = strided_of(o, reduced);
	}
	r.rows = r.len = 1;
	for (int d = 0; d < x->rank; d++)
		*(reduced[d] ? &r.len : &r.rows) *= x->shape[d];
	return r;
}

/* The warp's total (or maximum) of v, in lane 0. */
template <bool MAX> __device__ float warp_reduce(float v)
{
	for (int o = 16; o > 0; o >>= 1) {
		float w = __shfl_down_sync(0xffffffffu, v, o);
		v = MAX ? fmaxf(v, w) : v + w;
	}
	return v;
}

/* The block's total (or maximum) of v, in every thread; blockDim.x is a
 * multiple of 32, sh holds 32 floats. */
template <bool MAX> __device__ float block_reduce(float v, float *sh)
{
	v = warp_reduce<MAX>(v);
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
	__syncthreads();   /* sh may still be read from the last call */
	if (lane == 0)
		sh[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = warp_reduce<MAX>(lane < (int)(blockDim.x / 32) ? sh[lane] : MAX ? -INFINITY : 0.0f);
		if (lane == 0)
			sh[0] = v;
	}
	__syncthreads();
	return sh[0];
}

/* Numerically stable: exp(x - max) / sum, as the host kernel does. */
__global__ void softmax_kernel(rows_desc d, float *o, const float *x)
{
	__shared__ float sh[32];
	for (int64_t r = blockIdx.x; r < d.rows; r += gridDim.x) {
		const float *xr = x + strided_at(d.xr, r);
		float *orow = o + strided_at(d.orow, r), mx = -INFINITY, s = 0;
		for (int64_t j = threadIdx.x; j < d.len; j += blockDim.x)
			mx = fmaxf(mx, xr[strided_at(d.xe, j)]);
		mx = block_reduce<true>(mx, sh);
		for (int64_t j = threadIdx.x; j < d.len; j += blockDim.x)
			s += expf(xr[strided_at(d.xe, j)] - mx);
		s = block_reduce<false>(s, sh);
		for (int64_t j = threadIdx.x; j < d.len; j += blockDim.x)
			orow[strided_at(d.oe, j)] = expf(xr[strided_at(d.xe, j)] - mx) / s;
	}
}

__global__ void sum_kernel(rows_desc d, float *o, const float *x, bool mean)
{
	__shared__ float sh[32];
	for (int64_t r = blockIdx.x; r < d.rows; r += gridDim.x) {
		const float *xr = x + strided_at(d.xr, r);
		float s = 0;
		for (int64_t j = threadIdx.x; j < d.len; j += blockDim.x)
			s += xr[strided_at(d.xe, j)];
		s = block_reduce<false>(s, sh);
		if (threadIdx.x == 0)
			o[strided_at(d.orow, r)] = mean ? s / (float)d.len : s;
	}
}

struct norm_desc {
	rows_desc r;
	strided w, b;         /* weight and bias, walked over one row */
	float eps;
	bool rms;
};

/* Two passes over each row (mean, then the variance around it), in float
 * with the host kernel's eps; rms_norm takes the mean as 0. */
__global__ void norm_kernel(norm_desc d, float *o, const float *x, const float *w, const float *b)
{
	__shared__ float sh[32];
	for (int64_t r = blockIdx.x; r < d.r.rows; r += gridDim.x) {
		const float *xr = x + strided_at(d.r.xr, r);
		float *orow = o + strided_at(d.r.orow, r), mu = 0, var = 0, n = (float)d.r.len;
		if (!d.rms) {
			for (int64_t j = threadIdx.x; j < d.r.len; j += blockDim.x)
				mu += xr[strided_at(d.r.xe, j)];
			mu = block_reduce<false>(mu, sh) / n;
		}
		for (int64_t j = threadIdx.x; j < d.r.len; j += blockDim.x) {
			float c = xr[strided_at(d.r.xe, j)] - mu;
			var += c * c;
		}
		float inv = 1.0f / sqrtf(block_reduce<false>(var, sh) / n + d.eps);
		for (int64_t j = threadIdx.x; j < d.r.len; j += blockDim.x) {
			float y = (xr[strided_at(d.r.xe, j)] - mu) * inv;
			if (w)
				y *= w[strided_at(d.w, j)];
			if (b)
				y += b[strided_at(d.b, j)];
			orow[strided_at(d.r.oe, j)] = y;
		}
	}
}

/* One block a row (up to 65535 blocks, then each takes several rows), the
 * block as wide as the row up to 256 threads, a multiple of the warp. */
dim3 row_blocks(const rows_desc &d) { return dim3((unsigned)(d.rows < 65535 ? d.rows : 65535)); }
unsigned row_threads(const rows_desc &d)
{
	unsigned t = 32;
	while (t < 256 && t < d.len)
		t *= 2;
	return t;
}

bool same_shape(const prt_tensor *a, const prt_tensor *b)
{
	return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) == 0;
}

/* _softmax(self, dim, half_to_float) and softmax.int(self, dim, dtype?). */
pr_err *cu_softmax(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0), *o = &k->out->t;
	if (!x)
		return prt_kernel_error(k, "argument 0 must be a tensor");
	if (!all_f32(o, x, NULL))
		return prt_k_staged(k);
	int d = prt_dim(prt_karg_int(k, 1, -1), x->rank);
	if (d < 0)
		return prt_kernel_error(k, "dim out of range");
	if (!same_shape(x, o))
		return prt_kernel_error(k, "the result's shape must be the input's");
	bool reduced[PR_MAX_RANK] = {false};
	reduced[d] = x->rank > 0;
	rows_desc r = rows_of(x, o, reduced);
	if (r.rows == 0 || r.len == 0)
		return NULL;
	softmax_kernel<<<row_blocks(r), row_threads(r), 0, stream_of(k)>>>(r, (float *)o->data,
									  (const float *)x->data);
	return launch_error(k, "softmax kernel launch");
}

/* sum.dim_IntList(self, dim?, keepdim, dtype?) and mean.dim: result r (in
 * row-major order, keepdim or not) is the sum of row r. */
pr_err *sum_impl(prt_kctx *k, bool mean)
{
	prt_tensor *x = prt_karg_tensor(k, 0), *o = &k->out->t;
	if (!x)
		return prt_kernel_error(k, "argument 0 must be a tensor");
	if (!all_f32(o, x, NULL))
		return prt_k_staged(k);
	bool reduced[PR_MAX_RANK];
	int64_t count;
	pr_err *err = prt_reduce_dims(k, x, reduced, &count);
	if (err)
		return err;
	rows_desc r = rows_of(x, NULL, reduced);
	r.rows = prt_tensor_numel(o);   /* also when x is empty: sums of nothing */
	r.orow = strided_of(o, NULL);
	if (r.rows == 0)
		return NULL;
	sum_kernel<<<row_blocks(r), row_threads(r), 0, stream_of(k)>>>(r, (float *)o->data,
								      (const float *)x->data, mean);
	return launch_error(k, "sum kernel launch");
}

pr_err *cu_sum_dim(prt_kctx *k) { return sum_impl(k, false); }
pr_err *cu_mean_dim(prt_kctx *k) { return sum_impl(k, true); }

pr_err *norm_impl(prt_kctx *k, bool rms, int weight_at, int bias_at, int eps_at)
{
	prt_norm_args a;
	pr_err *err = prt_norm_args_get(k, rms, weight_at, bias_at, eps_at, &a);
	prt_tensor *o = &k->out->t;
	if (err)
		return err;
	if (!all_f32(o, a.x, a.w) || (a.b && a.b->dtype != PR_F32))
		return prt_k_staged(k);
	if (!same_shape(a.x, o))
		return prt_kernel_error(k, "the result's shape must be the input's");
	bool reduced[PR_MAX_RANK] = {false};
	for (int i = a.x->rank - a.nn; i < a.x->rank; i++)
		reduced[i] = true;
	norm_desc d;
	memset(&d, 0, sizeof d);
	d.r = rows_of(a.x, o, reduced);
	if (a.w)
		d.w = strided_of(a.w, NULL);
	if (a.b)
		d.b = strided_of(a.b, NULL);
	d.eps = (float)a.eps;
	d.rms = rms;
	if (d.r.rows == 0 || d.r.len == 0)
		return NULL;
	norm_kernel<<<row_blocks(d.r), row_threads(d.r), 0, stream_of(k)>>>(
		d, (float *)o->data, (const float *)a.x->data, a.w ? (const float *)a.w->data : NULL,
		a.b ? (const float *)a.b->data : NULL);
	return launch_error(k, "norm kernel launch");
}

/* layer_norm(input, normalized_shape, weight?, bias?, eps=1e-5, cudnn_enable) */
pr_err *cu_layer_norm(prt_kctx *k) { return norm_impl(k, false, 2, 3, 4); }
/* rms_norm(input, normalized_shape, weight?, eps?) */
pr_err *cu_rms_norm(prt_kctx *k) { return norm_impl(k, true, 2, -1, 3); }

/* ---- indexing: embedding, index_select, index_put_ --------------------------------- */

/* An index tensor on the device (i64 or i32; other dtypes are staged), valid
 * in [-limit, limit): a negative index counts from the end, as on the host. */
struct index_ref {
	const void *p;
	strided s;
	bool i32;
	int64_t limit;
};

/* Up to PR_MAX_RANK index tensors of len elements each, checked in order. */
struct index_set {
	int n;
	int64_t len;
	index_ref ix[PR_MAX_RANK];
};

__device__ int64_t index_load(const index_ref &ix, int64_t i)
{
	int64_t off = strided_at(ix.s, i);
	int64_t v = ix.i32 ? ((const int32_t *)ix.p)[off] : ((const int64_t *)ix.p)[off];
	return v < 0 ? v + ix.limit : v;
}

/* Where in its index_set the first index out of range is (tensor j, element
 * l at j * len + l), NO_BAD if none. One per device (a __device__ variable
 * lives in each device's context); the kernels of a device run in order on
 * its stream, so one op's check cannot meet another's. */
const unsigned long long NO_BAD = ~0ull;
__device__ unsigned long long first_bad;

__global__ void index_check_kernel(index_set s, unsigned long long *bad)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < s.n * s.len;
	     i += (int64_t)gridDim.x * blockDim.x) {
		const index_ref &ix = s.ix[i / s.len];
		int64_t v = index_load(ix, i % s.len);
		if (v < 0 || v >= ix.limit)
			atomicMin(bad, (unsigned long long)i);
	}
}

bool index_dtype_ok(const prt_tensor *t) { return t->dtype == PR_I64 || t->dtype == PR_I32; }

index_ref index_ref_of(const prt_tensor *t, int64_t limit)
{
	index_ref r;
	r.p = t->data;
	r.s = strided_of(t, NULL);
	r.i32 = t->dtype == PR_I32;
	r.limit = limit;
	return r;
}

/* Starts checking s's indices on the device: clears the flag, queues the
 * check. The op's kernel queued next may read *bad; index_report reads it
 * back after. */
pr_err *index_check(prt_kctx *k, const index_set &s, unsigned long long **bad)
{
	cudaError_t rc = cudaGetSymbolAddress((void **)bad, first_bad);
	if (rc == cudaSuccess)
		rc = cudaMemsetAsync(*bad, 0xff, sizeof **bad, stream_of(k));
	if (rc != cudaSuccess)
		return prt_kernel_error(k, "CUDA: clearing the index flag failed: %s", cudaGetErrorString(rc));
	if (s.n * s.len > 0)
		index_check_kernel<<<blocks_for(s.n * s.len), THREADS, 0, stream_of(k)>>>(s, *bad);
	return launch_error(k, "index check kernel launch");
}

/* The host kernel's error for the first index out of range, if any (reads
 * the flag back: this waits for the device's stream). */
pr_err *index_report(prt_kctx *k, const index_set &s, const unsigned long long *bad)
{
	unsigned long long at;
	pr_err *err = prt_mem_copy(k->devs, 0, &at, k->dev, bad, sizeof at, false);
	if (err || at == NO_BAD)
		return err;
	const index_ref &ix = s.ix[at / (unsigned long long)s.len];
	int64_t off = strided_at(ix.s, (int64_t)(at % (unsigned long long)s.len)), v = 0;
	int32_t v32 = 0;
	err = ix.i32 ? prt_mem_copy(k->devs, 0, &v32, k->dev, (const int32_t *)ix.p + off, 4, false)
		     : prt_mem_copy(k->devs, 0, &v, k->dev, (const int64_t *)ix.p + off, 8, false);
	if (err)
		return err;
	return prt_kernel_error(k, "index %lld out of range [0, %lld)", (long long)(ix.i32 ? v32 : v),
			       (long long)ix.limit);
}

/* o[..., i, ...] = x[..., idx[i], ...] along dim, over o's elements; an
 * index out of range is skipped (index_report names it). */
struct gather_desc {
	int rank, dim;
	int64_t n;
	int64_t shape[PR_MAX_RANK];                  /* the result's */
	int64_t os[PR_MAX_RANK], xs[PR_MAX_RANK];
	index_ref ix;
};

__global__ void gather_kernel(gather_desc d, float *o, const float *x)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d.n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = i, oo = 0, xo = 0;
		bool ok = true;
		for (int k = d.rank - 1; k >= 0; k--) {
			int64_t c = r % d.shape[k], xc = c;
			r /= d.shape[k];
			if (k == d.dim) {
				xc = index_load(d.ix, c);
				ok = xc >= 0 && xc < d.ix.limit;
			}
			oo += c * d.os[k];
			xo += xc * d.xs[k];
		}
		if (ok)
			o[oo] = x[xo];
	}
}

pr_err *gather_launch(prt_kctx *k, const prt_tensor *o, const prt_tensor *x, int dim, const prt_tensor *ix)
{
	gather_desc d;
	memset(&d, 0, sizeof d);
	d.rank = o->rank;
	d.dim = dim;
	d.n = prt_tensor_numel(o);
	memcpy(d.shape, o->shape, sizeof d.shape);
	memcpy(d.os, o->strides, sizeof d.os);
	memcpy(d.xs, x->strides, sizeof d.xs);
	d.ix = index_ref_of(ix, x->shape[dim]);
	index_set s;
	memset(&s, 0, sizeof s);
	s.n = 1;
	s.len = prt_tensor_numel(ix);
	s.ix[0] = d.ix;
	unsigned long long *bad;
	pr_err *err = index_check(k, s, &bad);
	if (err)
		return err;
	if (d.n > 0) {
		gather_kernel<<<blocks_for(d.n), THREADS, 0, stream_of(k)>>>(d, (float *)o->data,
									    (const float *)x->data);
		if ((err = launch_error(k, "gather kernel launch")))
			return err;
	}
	return index_report(k, s, bad);
}

/* embedding(weight[V, D], indices[...]) -> [..., D]: index_select of the
 * rows of weight into the result seen as [N, D]. */
pr_err *cu_embedding(prt_kctx *k)
{
	prt_tensor *w = prt_karg_tensor(k, 0), *ix = prt_karg_tensor(k, 1);
	if (!w || !ix)
		return prt_kernel_error(k, "argument %d must be a tensor", w ? 1 : 0);
	if (!all_f32(&k->out->t, w, NULL) || !index_dtype_ok(ix))
		return prt_k_staged(k);
	pr_err *err = prt_embedding_check(k, w, ix);
	if (err)
		return err;
	prt_tensor o = k->out->t;
	int64_t shape2[2] = {prt_tensor_numel(ix), w->shape[1]};
	if (!prt_view_strides(&o, 2, shape2, o.strides))
		return prt_kernel_error(k, "the result's layout cannot be seen as [N, D]");
	o.rank = 2;
	o.shape[0] = shape2[0], o.shape[1] = shape2[1];
	return gather_launch(k, &o, w, 0, ix);
}

/* index_select(self, dim, index[n]) */
pr_err *cu_index_select(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0), *ix = prt_karg_tensor(k, 2), *o = &k->out->t;
	if (!x || !ix)
		return prt_kernel_error(k, "argument %d must be a tensor", x ? 2 : 0);
	if (!all_f32(o, x, NULL) || !index_dtype_ok(ix))
		return prt_k_staged(k);
	int d = prt_dim(prt_karg_int(k, 1, 0), x->rank);
	if (d < 0 || x->rank == 0)
		return prt_kernel_error(k, "dim out of range");
	int64_t n = prt_tensor_numel(ix);
	if (o->rank != x->rank || o->shape[d] != n)
		return prt_kernel_error(k, "the result must have %lld elements along dim %d", (long long)n, d);
	for (int i = 0; i < x->rank; i++)
		if (i != d && o->shape[i] != x->shape[i])
			return prt_kernel_error(k, "the result's dim %d must be the input's", i);
	return gather_launch(k, o, x, d, ix);
}

/* index_put_: the L sub-tensors of self the index tensors pick take values.
 * One thread per element of a sub-tensor, walking l in order, so repeated
 * indices end as on the host (the last write wins, or every value adds);
 * nothing is written if an index is out of range. */
struct put_desc {
	index_set idx;
	int64_t lead[PR_MAX_RANK];     /* self's strides along the indexed dims */
	strided sub, v;                /* one sub-tensor of self; values */
	int64_t R, nv;
	bool acc;
};

__global__ void put_kernel(put_desc d, float *self, const float *v, const unsigned long long *bad)
{
	if (*bad != NO_BAD)
		return;
	for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < d.R;
	     r += (int64_t)gridDim.x * blockDim.x) {
		int64_t so = strided_at(d.sub, r);
		for (int64_t l = 0; l < d.idx.len; l++) {
			int64_t off = so;
			for (int j = 0; j < d.idx.n; j++)
				off += index_load(d.idx.ix[j], l) * d.lead[j];
			float x = v[strided_at(d.v, d.nv == 1 ? 0 : d.nv == d.R ? r : l * d.R + r)];
			self[off] = d.acc ? self[off] + x : x;
		}
	}
}

/* index_put_(self, Tensor?[] indices, values, accumulate=False) */
pr_err *cu_index_put_(prt_kctx *k)
{
	prt_tensor *self = prt_karg_tensor(k, 0), *vals = prt_karg_tensor(k, 2);
	if (!self || !vals)
		return prt_kernel_error(k, "argument %d must be a tensor", self ? 2 : 0);
	prt_karg *list = k->n_args > 1 ? &k->args[1] : NULL;
	if (!list || list->kind != PR_ARG_LIST || list->n < 1 || list->n > self->rank)
		return prt_kernel_error(k, "indices must be a list of 1 to %d tensors", self->rank);
	put_desc d;
	memset(&d, 0, sizeof d);
	d.idx.n = list->n;
	d.idx.len = -1;
	bool staged = !all_f32(self, vals, NULL);
	for (int j = 0; j < list->n; j++) {
		prt_karg *it = &list->items[j];
		if (it->kind != PR_ARG_VALUE || it->v->kind != PRT_RV_TENSOR)
			return prt_kernel_error(k, "only leading tensor indices are supported");
		const prt_tensor *t = &it->v->t;
		staged = staged || !index_dtype_ok(t);
		if (d.idx.len >= 0 && prt_tensor_numel(t) != d.idx.len)
			return prt_kernel_error(k, "index tensors must have the same number of elements");
		d.idx.len = prt_tensor_numel(t);
		d.idx.ix[j] = index_ref_of(t, self->shape[j]);
		d.lead[j] = self->strides[j];
	}
	if (staged)
		return prt_k_staged(k);
	prt_tensor sub = *self;    /* the dims left after the indexed ones */
	sub.rank = self->rank - list->n;
	memmove(sub.shape, self->shape + list->n, sizeof(int64_t) * (size_t)sub.rank);
	memmove(sub.strides, self->strides + list->n, sizeof(int64_t) * (size_t)sub.rank);
	d.sub = strided_of(&sub, NULL);
	d.v = strided_of(vals, NULL);
	d.R = prt_tensor_numel(&sub);
	d.nv = prt_tensor_numel(vals);
	d.acc = prt_karg_int(k, 3, 0) != 0;
	int64_t L = d.idx.len;
	if (d.nv != L * d.R && d.nv != d.R && d.nv != 1)
		return prt_kernel_error(k, "values has %lld elements; expected %lld, %lld or 1",
				       (long long)d.nv, (long long)(L * d.R), (long long)d.R);
	unsigned long long *bad;
	pr_err *err = index_check(k, d.idx, &bad);
	if (err)
		return err;
	if (d.R > 0 && L > 0) {
		put_kernel<<<blocks_for(d.R), THREADS, 0, stream_of(k)>>>(d, (float *)self->data,
									  (const float *)vals->data, bad);
		if ((err = launch_error(k, "index_put_ kernel launch")))
			return err;
	}
	if ((err = index_report(k, d.idx, bad)))
		return err;
	if (k->out->kind == PRT_RV_TENSOR)
		k->out->t = *self;
	return NULL;
}

const prt_cuda_kernel cuda_kernels[] = {
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
	{"aten::_softmax", cu_softmax}, {"aten::softmax.int", cu_softmax},
	{"aten::sum.dim_IntList", cu_sum_dim}, {"aten::mean.dim", cu_mean_dim},
	{"aten::layer_norm", cu_layer_norm}, {"aten::rms_norm", cu_rms_norm},
	{"aten::embedding", cu_embedding}, {"aten::index_select", cu_index_select},
	{"aten::index_put_", cu_index_put_},
};

} // namespace

/* This file's table, then kernels_cuda_nn.cu's, as one (built once; the
 * registry looks names up in it when it merges). */
extern "C" const prt_cuda_kernel *prt_cuda_kernels(int *n)
{
	static const std::vector<prt_cuda_kernel> all = [] {
		int nn = 0;
		const prt_cuda_kernel *more = prt_cuda_nn_kernels(&nn);
		std::vector<prt_cuda_kernel> v(std::begin(cuda_kernels), std::end(cuda_kernels));
		v.insert(v.end(), more, more + nn);
		return v;
	}();
	*n = (int)all.size();
	return all.data();
}

/* The strided copy on a device, for the executor (delegate results). */
extern "C" pr_err *prt_cuda_copy(prt_kctx *k, prt_tensor *dst, const prt_tensor *src)
{
	return copy_launch(k, dst, src);
}
