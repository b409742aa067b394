/* kernels_cuda_nn.cu: CUDA kernels for the ops real models add to those of
 * kernels_cuda.cu: convolution, batch norm, pooling, the
 * activations of CNNs, the typed elementwise ops, factories, cumsum and
 * gather.
 *
 * Each mirrors its host kernel, whose checks and messages stay the only
 * ones: a kernel here takes the arguments it can run as they are (the
 * dtypes, shapes and options listed at each) and hands anything else to
 * prt_k_staged, which runs the host kernel on host copies, so a bad argument
 * gets the host kernel's error and an unusual one its exact result.
 *
 *   - Convolution (1-d as 2-d with H = 1, any stride, padding, dilation and
 *     groups) runs cuDNN's legacy forward API on NCHW-packed operands (a
 *     strided input or weight is first copied packed, a strided result is
 *     computed into a packed buffer and copied out), with FMA math only (no
 *     TF32: results must match the host's to 1e-4) and one of the exact
 *     GEMM-like algorithms; the bias is added after. Built without cuDNN
 *     (CMake says so), convolution runs staged.
 *   - Batch norm (inference), max / average / adaptive-average pooling and
 *     hardtanh, hardswish, hardsigmoid, silu: one thread per result element,
 *     f32 data seen through any strides, arithmetic in double like the host
 *     kernels (kernels_nn.c), ATen's windows and divisors; the argument
 *     checks are the host's own (prt_conv_args_get, prt_bn_args_get,
 *     prt_pool_args_get).
 *   - The typed elementwise ops (sqrt, rsqrt, abs, pow, comparisons,
 *     logical and bitwise ops, where, masked_fill, _to_copy, maximum,
 *     minimum, clamp, round): the host's planner (prt_ew_plan_get and its where,
 *     masked_fill and clamp forms) makes the
 *     plan, checks included, and one kernel runs it over the result, each
 *     element as kernels_elementwise.c's loop computes it (the arithmetic
 *     is kernels_elementwise.h's, shared; loads and stores are data.h's,
 *     ported below), every dtype.
 *   - Factories (full, zeros, ones, full_like, scalar_tensor: the element
 *     made on the host by data.h, then written everywhere; arange), cumsum
 *     (one thread per line, int64 or double sums) and gather (bytes copied,
 *     every dtype; its indices checked on the device first, and one out of
 *     range runs the host kernel, which reports it) and index.Tensor (the
 *     same, with the host's broadcast of the index tensors), as
 *     kernels_tensor.c.
 *
 * Everything runs on the device's stream; scratch memory is stream-ordered
 * (cudaMallocAsync / cudaFreeAsync), so it is released in order with the
 * kernels that use it. */
/* error.h declares pr_assert_fail with C11's _Noreturn, which C++ spells
 * differently. */
#ifndef _Noreturn
#define _Noreturn [[noreturn]]
#endif
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>
#ifdef PASSRUN_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "kernels.h"
#include "kernels_elementwise.h"
#include "passrun/data.h"
#include "rt_cuda.h"

namespace {

/* ---- shared helpers ------------------------------------------------------------- */

/* (kernels_cuda.cu has its own copies of these three: they are a line or
 * two each, and its table must not depend on this file's.) */
cudaStream_t stream_of(prt_kctx *k) { return (cudaStream_t)prt_cuda_stream(prt_devset_dev(k->devs, k->dev)); }

pr_err *cuda_check(prt_kctx *k, cudaError_t rc, const char *what)
{
	return rc == cudaSuccess ? NULL : prt_kernel_error(k, "CUDA: %s failed: %s", what, cudaGetErrorString(rc));
}

pr_err *launch_error(prt_kctx *k, const char *what) { return cuda_check(k, cudaGetLastError(), what); }

const int THREADS = 256;
unsigned blocks_for(int64_t n)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#define GRID_STRIDE(i, n)                                                                      \
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);              \
	     i += (int64_t)gridDim.x * blockDim.x)

/* A tensor's element walk: element i (row-major over shape) is at
 * offset(i) elements from data. */
struct walk {
	int rank;
	int64_t n;
	int64_t shape[PR_MAX_RANK], st[PR_MAX_RANK];
};

walk walk_of(const prt_tensor *t)
{
	walk w;
	memset(&w, 0, sizeof w);
	w.rank = t->rank;
	w.n = prt_tensor_numel(t);
	memcpy(w.shape, t->shape, sizeof w.shape);
	memcpy(w.st, t->strides, sizeof w.st);
	return w;
}

/* i's coordinates over w's shape (c[rank]). */
__device__ void coords_of(const walk &w, int64_t i, int64_t *c)
{
	for (int d = w.rank - 1; d >= 0; d--) {
		c[d] = i % w.shape[d];
		i /= w.shape[d];
	}
}

__device__ int64_t offset_of(const walk &w, const int64_t *c)
{
	int64_t off = 0;
	for (int d = 0; d < w.rank; d++)
		off += c[d] * w.st[d];
	return off;
}

bool is_f32(const prt_tensor *t) { return t && t->dtype == PR_F32; }

/* An int[N] argument: N values, a single value repeated (int[2] written as
 * [3] or 3), or dflt when absent or empty (the stride of pooling); false
 * when it is none of these. */
bool int_list(prt_kctx *k, int i, int n, const int64_t *dflt, int64_t *out)
{
	int64_t v[PR_MAX_RANK];
	int m = prt_karg_is_none(k, i) ? 0 : prt_karg_ints(k, i, v, PR_MAX_RANK);
	if (m == 0 && dflt) {
		memcpy(out, dflt, sizeof(int64_t) * (size_t)n);
		return true;
	}
	if (m != 1 && m != n)
		return false;
	for (int d = 0; d < n; d++)
		out[d] = v[m == 1 ? 0 : d];
	return true;
}

/* The result tensor of k: its only tensor, or the first of a tuple (batch
 * norm's output before its empty statistics); NULL otherwise. */
prt_tensor *first_result(prt_kctx *k)
{
	prt_rv *r = k->out;
	if (r->kind == PRT_RV_TUPLE && r->n > 0)
		r = &r->elems[0];
	return r->kind == PRT_RV_TENSOR ? &r->t : NULL;
}

/* Does o have shape [lead of x..., tail] (the leading `nlead` dims of x,
 * then nt sizes)? */
bool shape_is(const prt_tensor *o, const prt_tensor *x, int nlead, int nt, const int64_t *tail)
{
	if (!o || o->rank != nlead + nt)
		return false;
	for (int d = 0; d < nlead; d++)
		if (o->shape[d] != x->shape[d])
			return false;
	for (int d = 0; d < nt; d++)
		if (o->shape[nlead + d] != tail[d])
			return false;
	return true;
}

/* Stream-ordered scratch on k's device. */
struct scratch {
	void *p;
	cudaStream_t st;
};

pr_err *scratch_alloc(prt_kctx *k, int64_t bytes, scratch *s)
{
	s->st = stream_of(k);
	s->p = NULL;
	return cuda_check(k, cudaMallocAsync(&s->p, (size_t)(bytes > 0 ? bytes : 1), s->st), "cudaMallocAsync");
}

void scratch_free(scratch *s)
{
	if (s->p)
		cudaFreeAsync(s->p, s->st);
	s->p = NULL;
}

#ifdef PASSRUN_HAVE_CUDNN

/* ---- convolution (cuDNN) ------------------------------------------------------------ */

/* A packed copy of the f32 tensor t, in fresh scratch: a view of it (*packed). */
__global__ void pack_kernel(walk w, float *o, const float *x)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, w.n) {
		coords_of(w, i, c);
		o[i] = x[offset_of(w, c)];
	}
}

/* dst (any strides) = packed src of dst's shape. */
__global__ void unpack_kernel(walk w, float *o, const float *x)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, w.n) {
		coords_of(w, i, c);
		o[offset_of(w, c)] = x[i];
	}
}

pr_err *pack(prt_kctx *k, const prt_tensor *t, scratch *s, prt_tensor *packed)
{
	walk w = walk_of(t);
	pr_err *err = scratch_alloc(k, w.n * 4, s);
	if (err)
		return err;
	*packed = prt_tensor_make(PR_F32, t->rank, t->shape, s->p);
	packed->dev = t->dev;
	if (w.n == 0)
		return NULL;
	pack_kernel<<<blocks_for(w.n), THREADS, 0, s->st>>>(w, (float *)s->p, (const float *)t->data);
	return launch_error(k, "pack kernel launch");
}

/* o[n, c, ...] += b[c] */
struct bias_desc {
	walk o;
	int64_t bst;
};

__global__ void bias_kernel(bias_desc d, float *o, const float *b)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.o.n) {
		coords_of(d.o, i, c);
		o[offset_of(d.o, c)] += b[c[1] * d.bst];
	}
}

pr_err *add_bias(prt_kctx *k, prt_tensor *o, const prt_tensor *b)
{
	bias_desc d;
	d.o = walk_of(o);
	d.bst = b->strides[0];
	if (d.o.n == 0)
		return NULL;
	bias_kernel<<<blocks_for(d.o.n), THREADS, 0, stream_of(k)>>>(d, (float *)o->data, (const float *)b->data);
	return launch_error(k, "bias kernel launch");
}

/* What cuDNN's path takes: f32 operands, not transposed, 1 or 2 spatial
 * dims, a result of the host kernel's shape, sizes that fit cuDNN's ints.
 * Anything else runs the host kernel (which also refuses what is wrong). */
bool conv_on_device(const prt_conv_args &a, const prt_tensor *o)
{
	if (!is_f32(a.x) || !is_f32(a.w) || !is_f32(o) || (a.b && (!is_f32(a.b) || a.b->rank != 1)) ||
	    a.transposed || a.nsp > 2)
		return false;
	int64_t tail[3] = {a.cout};
	for (int d = 0; d < a.nsp; d++)
		tail[1 + d] = a.out[3 - a.nsp + d];
	int64_t lead[1] = {a.n};
	prt_tensor n1 = *a.x;
	n1.shape[0] = lead[0];
	return shape_is(o, &n1, 1, a.nsp + 1, tail) && prt_tensor_numel(a.x) < INT32_MAX &&
	       prt_tensor_numel(a.w) < INT32_MAX && prt_tensor_numel(o) < INT32_MAX;
}

/* One cuDNN handle per CUDA device, made on first use (cudnnCreate takes
 * tens of milliseconds, and most programs have no convolution) and kept for
 * the process: a handle is bound to its device's context; the stream is set
 * on every call. */
cudnnHandle_t dnn_handles[64];

pr_err *dnn_error(prt_kctx *k, cudnnStatus_t st, const char *call)
{
	return st == CUDNN_STATUS_SUCCESS ? NULL
					  : prt_kernel_error(k, "cuDNN: %s failed: %s", call, cudnnGetErrorString(st));
}

pr_err *dnn_handle(prt_kctx *k, cudnnHandle_t *h)
{
	int dev = 0;
	pr_err *err = cuda_check(k, cudaGetDevice(&dev), "cudaGetDevice");
	if (err)
		return err;
	if (dev < 0 || dev >= 64)
		return prt_kernel_error(k, "cuDNN: device %d is beyond the 64 this runtime handles", dev);
	if (!dnn_handles[dev] && (err = dnn_error(k, cudnnCreate(&dnn_handles[dev]), "cudnnCreate")))
		return err;
	*h = dnn_handles[dev];
	return dnn_error(k, cudnnSetStream(*h, stream_of(k)), "cudnnSetStream");
}

/* The algorithms whose result is a plain sum of products in float (no FFT,
 * no Winograd transform, no TF32): the heuristics' first such one, else
 * implicit GEMM, which takes every geometry with no workspace. */
bool exact_algo(const cudnnConvolutionFwdAlgoPerf_t &p)
{
	return p.status == CUDNN_STATUS_SUCCESS && p.mathType == CUDNN_FMA_MATH &&
	       (p.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
		p.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM || p.algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
}

cudnnConvolutionFwdAlgo_t pick_algo(cudnnHandle_t h, cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
				    cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd)
{
	cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	int got = 0;
	if (cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf) ==
	    CUDNN_STATUS_SUCCESS)
		for (int i = 0; i < got; i++)
			if (exact_algo(perf[i]))
				return perf[i].algo;
	return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
}

/* The descriptors of one convolution, destroyed together. */
struct dnn_descs {
	cudnnTensorDescriptor_t x, y;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t c;
};

void dnn_descs_free(dnn_descs *d)
{
	if (d->c)
		cudnnDestroyConvolutionDescriptor(d->c);
	if (d->w)
		cudnnDestroyFilterDescriptor(d->w);
	if (d->y)
		cudnnDestroyTensorDescriptor(d->y);
	if (d->x)
		cudnnDestroyTensorDescriptor(d->x);
}

/* Packed NCHW descriptors for a's geometry (dims 1 and 2 of the normalized
 * three; dim 0 has size 1 when nsp <= 2). */
pr_err *dnn_descs_make(prt_kctx *k, const prt_conv_args &a, dnn_descs *d)
{
	int n = (int)a.n, ci = (int)a.cin, co = (int)a.cout, g = (int)a.groups;
	pr_err *err;
	memset(d, 0, sizeof *d);
	if ((err = dnn_error(k, cudnnCreateTensorDescriptor(&d->x), "cudnnCreateTensorDescriptor")) ||
	    (err = dnn_error(k, cudnnCreateTensorDescriptor(&d->y), "cudnnCreateTensorDescriptor")) ||
	    (err = dnn_error(k, cudnnCreateFilterDescriptor(&d->w), "cudnnCreateFilterDescriptor")) ||
	    (err = dnn_error(k, cudnnCreateConvolutionDescriptor(&d->c), "cudnnCreateConvolutionDescriptor")))
		return err;
	if ((err = dnn_error(k, cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, ci,
							    (int)a.in[1], (int)a.in[2]),
			     "cudnnSetTensor4dDescriptor")) ||
	    (err = dnn_error(k, cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, co,
							    (int)a.out[1], (int)a.out[2]),
			     "cudnnSetTensor4dDescriptor")) ||
	    (err = dnn_error(k, cudnnSetFilter4dDescriptor(d->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, co, ci / g,
							    (int)a.k[1], (int)a.k[2]),
			     "cudnnSetFilter4dDescriptor")) ||
	    (err = dnn_error(k, cudnnSetConvolution2dDescriptor(d->c, (int)a.pad[1], (int)a.pad[2], (int)a.stride[1],
								 (int)a.stride[2], (int)a.dil[1], (int)a.dil[2],
								 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
			     "cudnnSetConvolution2dDescriptor")) ||
	    (err = dnn_error(k, cudnnSetConvolutionGroupCount(d->c, g), "cudnnSetConvolutionGroupCount")) ||
	    (err = dnn_error(k, cudnnSetConvolutionMathType(d->c, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType")))
		return err;
	/* cuDNN's own output size must be the host kernel's. */
	int on, oc, oh, ow;
	if ((err = dnn_error(k, cudnnGetConvolution2dForwardOutputDim(d->c, d->x, d->w, &on, &oc, &oh, &ow),
			     "cudnnGetConvolution2dForwardOutputDim")))
		return err;
	if (on != n || oc != co || oh != a.out[1] || ow != a.out[2])
		return prt_kernel_error(k, "cuDNN: the output would be [%d,%d,%d,%d], not [%d,%d,%lld,%lld]", on, oc, oh,
				       ow, n, co, (long long)a.out[1], (long long)a.out[2]);
	return NULL;
}

/* y = conv(x, w) on packed NCHW operands; *unsupported (and no error) when
 * cuDNN has no algorithm for this geometry. */
pr_err *dnn_forward(prt_kctx *k, const prt_conv_args &a, const float *x, const float *w, float *y, bool *unsupported)
{
	cudnnHandle_t h;
	dnn_descs d;
	pr_err *err = dnn_handle(k, &h);
	if (err)
		return err;
	if ((err = dnn_descs_make(k, a, &d))) {
		dnn_descs_free(&d);
		return err;
	}
	cudnnConvolutionFwdAlgo_t algo = pick_algo(h, d.x, d.w, d.c, d.y);
	size_t wsize = 0;
	scratch ws = {NULL, stream_of(k)};
	const float one = 1, zero = 0;
	cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.c, d.y, algo, &wsize);
	err = dnn_error(k, st, "cudnnGetConvolutionForwardWorkspaceSize");
	if (!err && wsize)
		err = scratch_alloc(k, (int64_t)wsize, &ws);
	if (!err) {
		st = cudnnConvolutionForward(h, &one, d.x, x, d.w, w, d.c, algo, ws.p, wsize, &zero, d.y, y);
		err = dnn_error(k, st, "cudnnConvolutionForward");
	}
	*unsupported = st == CUDNN_STATUS_NOT_SUPPORTED;
	if (*unsupported) {
		pr_err_free(err);
		err = NULL;
	}
	scratch_free(&ws);
	dnn_descs_free(&d);
	return err;
}

/* The packed operands of a convolution: each a view of its tensor when
 * that is contiguous, else of a packed copy in scratch. */
struct conv_bufs {
	scratch xs, ws, ys;
	prt_tensor x, w, y;
};

pr_err *conv_bufs_get(prt_kctx *k, const prt_conv_args &a, prt_tensor *o, conv_bufs *b)
{
	memset(b, 0, sizeof *b);
	b->x = *a.x, b->w = *a.w, b->y = *o;
	pr_err *err = NULL;
	if (!prt_tensor_is_contiguous(a.x))
		err = pack(k, a.x, &b->xs, &b->x);
	if (!err && !prt_tensor_is_contiguous(a.w))
		err = pack(k, a.w, &b->ws, &b->w);
	if (!err && !prt_tensor_is_contiguous(o) && !(err = scratch_alloc(k, prt_tensor_numel(o) * 4, &b->ys)))
		b->y = prt_tensor_make(PR_F32, o->rank, o->shape, b->ys.p);
	return err;
}

void conv_bufs_free(conv_bufs *b)
{
	scratch_free(&b->ys);
	scratch_free(&b->ws);
	scratch_free(&b->xs);
}

/* convolution(input, weight, bias?, stride, padding, dilation, transposed,
 * output_padding, groups) */
pr_err *cu_convolution(prt_kctx *k)
{
	prt_conv_args a;
	prt_tensor *o = first_result(k);
	pr_err *err = prt_conv_args_get(k, &a);
	if (err)
		return err;   /* the host kernel's own check and message */
	if (!conv_on_device(a, o))
		return prt_k_staged(k);
	if (prt_tensor_numel(o) == 0)
		return NULL;
	conv_bufs b;
	bool unsupported = false;
	err = conv_bufs_get(k, a, o, &b);
	if (!err && prt_tensor_numel(a.x) > 0)
		err = dnn_forward(k, a, (const float *)b.x.data, (const float *)b.w.data, (float *)b.y.data, &unsupported);
	else if (!err)   /* no input channels: sums of nothing */
		err = cuda_check(k, cudaMemsetAsync(b.y.data, 0, (size_t)prt_tensor_numel(o) * 4, stream_of(k)),
				 "cudaMemsetAsync");
	if (!err && unsupported) {   /* a geometry cuDNN does not take: the host kernel */
		conv_bufs_free(&b);
		return prt_k_staged(k);
	}
	if (!err && b.ys.p) {
		walk wo = walk_of(o);
		unpack_kernel<<<blocks_for(wo.n), THREADS, 0, stream_of(k)>>>(wo, (float *)o->data, (const float *)b.ys.p);
		err = launch_error(k, "unpack kernel launch");
	}
	if (!err && a.b)
		err = add_bias(k, o, a.b);
	conv_bufs_free(&b);
	return err;
}

#else /* built without cuDNN: convolution runs staged (CMake said so) */

pr_err *cu_convolution(prt_kctx *k) { return prt_k_staged(k); }

#endif

/* ---- batch norm (inference) ------------------------------------------------------------ */

/* y = (x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c], c the index on dim 1,
 * in double as on the host. */
struct bn_desc {
	walk x, o;
	int64_t ws, bs, ms, vs;        /* strides of the per-channel vectors */
	double eps;
};

__global__ void bn_kernel(bn_desc d, float *o, const float *x, const float *w, const float *b, const float *mean,
			  const float *var)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.o.n) {
		coords_of(d.o, i, c);
		int64_t ch = c[1];
		double inv = 1 / sqrt((double)var[ch * d.vs] + d.eps);
		double y = ((double)x[offset_of(d.x, c)] - mean[ch * d.ms]) * inv * (w ? w[ch * d.ws] : 1.0) +
			   (b ? b[ch * d.bs] : 0.0);
		o[offset_of(d.o, c)] = (float)y;
	}
}

/* A per-channel f32 vector of rank 1 (or absent: NULL, stride 0). */
bool channel_vec(const prt_tensor *t, const float **p, int64_t *st)
{
	*p = t ? (const float *)t->data : NULL;
	*st = t ? t->strides[0] : 0;
	return !t || (is_f32(t) && t->rank == 1);
}

/* batch_norm(input, weight?, bias?, running_mean?, running_var?, training,
 * momentum, eps, cudnn_enabled) and _native_batch_norm_legit_no_training(
 * input, weight?, bias?, running_mean, running_var, momentum, eps). */
pr_err *bn_impl(prt_kctx *k, bool legit)
{
	prt_bn_args a;
	prt_tensor *o = first_result(k);
	pr_err *err = prt_bn_args_get(k, legit, &a);
	if (err)
		return err;
	bn_desc d;
	memset(&d, 0, sizeof d);
	const float *w, *b, *mean, *var;
	if (!is_f32(a.x) || !shape_is(o, a.x, a.x->rank, 0, NULL) || !is_f32(o) || !channel_vec(a.w, &w, &d.ws) ||
	    !channel_vec(a.b, &b, &d.bs) || !channel_vec(a.mean, &mean, &d.ms) || !channel_vec(a.var, &var, &d.vs))
		return prt_k_staged(k);
	d.x = walk_of(a.x);
	d.o = walk_of(o);
	d.eps = a.eps;
	if (d.o.n == 0)
		return NULL;
	bn_kernel<<<blocks_for(d.o.n), THREADS, 0, stream_of(k)>>>(d, (float *)o->data, (const float *)a.x->data, w,
								   b, mean, var);
	return launch_error(k, "batch norm kernel launch");
}

pr_err *cu_batch_norm(prt_kctx *k) { return bn_impl(k, false); }
pr_err *cu_bn_no_training(prt_kctx *k) { return bn_impl(k, true); }

/* ---- pooling ---------------------------------------------------------------------------- */

enum pool_kind { POOL_MAX, POOL_AVG, POOL_ADAPTIVE };

/* Tensors are seen with two spatial dims (1-d pooling: a height of 1 and
 * stride 0 in front of the last dim); the dims before them number the
 * planes. One thread per result element. */
struct pool_desc {
	walk o;                      /* the result's walk, all dims */
	int64_t xst[PR_MAX_RANK];    /* the input's strides */
	int64_t ist[PR_MAX_RANK];    /* the indices' strides (max pool with indices) */
	int64_t in[2], out[2];
	int64_t k[2], s[2], p[2], d[2];
	int kind;
	bool include_pad;
	int64_t divisor;             /* 0: none given */
};

/* The host kernel's windows (kernels_nn.c), element for element. */
__device__ double at_xy(const pool_desc &d, const float *x, int64_t base, int64_t y, int64_t xx)
{
	int hr = d.o.rank - 2;
	return x[base + y * d.xst[hr] + xx * d.xst[hr + 1]];
}

/* ATen's max: a NaN wins, and the last NaN's index is kept. */
__device__ double max_window(const pool_desc &d, const float *x, int64_t base, int64_t oy, int64_t ox, int64_t *arg)
{
	double best = -INFINITY;
	int64_t at = -1;
	for (int64_t i = 0; i < d.k[0]; i++) {
		int64_t iy = oy * d.s[0] - d.p[0] + i * d.d[0];
		for (int64_t j = 0; iy >= 0 && iy < d.in[0] && j < d.k[1]; j++) {
			int64_t ix = ox * d.s[1] - d.p[1] + j * d.d[1];
			if (ix < 0 || ix >= d.in[1])
				continue;
			double v = at_xy(d, x, base, iy, ix);
			if (at < 0 || v > best || isnan(v))
				best = v, at = iy * d.in[1] + ix;
		}
	}
	*arg = at;
	return best;
}

/* ATen's avg_pool2d: the window clipped to the padded input for the
 * count_include_pad divisor, to the input for the sum. */
__device__ double avg_window(const pool_desc &d, const float *x, int64_t base, int64_t oy, int64_t ox)
{
	int64_t y0 = oy * d.s[0] - d.p[0], x0 = ox * d.s[1] - d.p[1];
	int64_t y1 = min(y0 + d.k[0], d.in[0] + d.p[0]), x1 = min(x0 + d.k[1], d.in[1] + d.p[1]);
	int64_t padded = (y1 - y0) * (x1 - x0);
	y0 = max(y0, (int64_t)0), x0 = max(x0, (int64_t)0);
	y1 = min(y1, d.in[0]), x1 = min(x1, d.in[1]);
	double s = 0;
	for (int64_t y = y0; y < y1; y++)
		for (int64_t xx = x0; xx < x1; xx++)
			s += at_xy(d, x, base, y, xx);
	int64_t div = d.divisor ? d.divisor : d.include_pad ? padded : (y1 - y0) * (x1 - x0);
	return div ? s / (double)div : (double)NAN;
}

/* Adaptive: cell o of n over an input of len averages
 * [floor(o * len / n), ceil((o + 1) * len / n)). */
__device__ double adaptive_window(const pool_desc &d, const float *x, int64_t base, int64_t oy, int64_t ox)
{
	int64_t y0 = oy * d.in[0] / d.out[0], y1 = ((oy + 1) * d.in[0] + d.out[0] - 1) / d.out[0];
	int64_t x0 = ox * d.in[1] / d.out[1], x1 = ((ox + 1) * d.in[1] + d.out[1] - 1) / d.out[1];
	double s = 0;
	for (int64_t y = y0; y < y1; y++)
		for (int64_t xx = x0; xx < x1; xx++)
			s += at_xy(d, x, base, y, xx);
	return s / (double)((y1 - y0) * (x1 - x0));
}

__global__ void pool_kernel(pool_desc d, float *o, int64_t *ix, const float *x)
{
	int64_t c[PR_MAX_RANK];
	int hr = d.o.rank - 2;
	GRID_STRIDE(i, d.o.n) {
		coords_of(d.o, i, c);
		int64_t base = 0, ioff = 0, at = 0;
		for (int j = 0; j < hr; j++)
			base += c[j] * d.xst[j];
		double v = d.kind == POOL_MAX ? max_window(d, x, base, c[hr], c[hr + 1], &at)
			   : d.kind == POOL_AVG ? avg_window(d, x, base, c[hr], c[hr + 1])
						: adaptive_window(d, x, base, c[hr], c[hr + 1]);
		o[offset_of(d.o, c)] = (float)v;
		if (ix) {
			for (int j = 0; j < d.o.rank; j++)
				ioff += c[j] * d.ist[j];
			ix[ioff] = at;
		}
	}
}

/* t with two spatial dims: sp = 1 puts a dim of size 1 (stride 0) before
 * the last one. */
prt_tensor as_2d(const prt_tensor *t, int sp)
{
	prt_tensor v = *t;
	if (sp == 1) {
		v.rank = t->rank + 1;
		v.shape[v.rank - 1] = t->shape[t->rank - 1];
		v.strides[v.rank - 1] = t->strides[t->rank - 1];
		v.shape[v.rank - 2] = 1;
		v.strides[v.rank - 2] = 0;
	}
	return v;
}

/* The adaptive pool's sizes, checked as the host checks them (false: the
 * host kernel runs and reports). */
bool adaptive_args(prt_kctx *k, int sp, const prt_tensor *x, pool_desc *d)
{
	int64_t os[2];
	if (!x || (x->rank != sp + 1 && x->rank != sp + 2) || !int_list(k, 1, sp, NULL, os))
		return false;
	d->in[0] = d->out[0] = 1;
	for (int i = 0; i < sp; i++) {
		d->in[2 - sp + i] = x->shape[x->rank - sp + i];
		d->out[2 - sp + i] = os[i];
		if (os[i] < 1 || x->shape[x->rank - sp + i] < 1)
			return false;
	}
	return true;
}

/* max_pool1d / max_pool2d(self, kernel_size, stride=[], padding=0,
 * dilation=1, ceil_mode=False); max_pool2d_with_indices (values, indices);
 * avg_pool1d / avg_pool2d(self, kernel_size, stride=[], padding=0,
 * ceil_mode=False, count_include_pad=True, divisor_override=None);
 * adaptive_avg_pool1d / 2d(self, output_size). f32 data; indices i64. */
pr_err *pool_impl(prt_kctx *k, int kind, int sp)
{
	pool_desc d;
	memset(&d, 0, sizeof d);
	prt_tensor *x = prt_karg_tensor(k, 0), *o = first_result(k), *ix = NULL;
	if (kind == POOL_MAX && k->out->kind == PRT_RV_TUPLE) {
		if (k->out->n != 2 || k->out->elems[1].kind != PRT_RV_TENSOR)
			return prt_k_staged(k);
		ix = &k->out->elems[1].t;
	}
	if (kind == POOL_ADAPTIVE) {
		if (!adaptive_args(k, sp, x, &d))
			return prt_k_staged(k);
	} else {
		prt_pool_args a;
		pr_err *err = prt_pool_args_get(k, sp, kind == POOL_AVG, &a);
		if (err)
			return err;
		for (int i = 0; i < 2; i++) {
			d.in[i] = a.in[i], d.out[i] = a.out[i], d.k[i] = a.kernel[i];
			d.s[i] = a.stride[i], d.p[i] = a.pad[i], d.d[i] = a.dil[i];
		}
		d.include_pad = a.count_include_pad;
		d.divisor = a.divisor;
	}
	int lead = x->rank - sp;
	if (!is_f32(x) || !is_f32(o) || !shape_is(o, x, lead, sp, d.out + 2 - sp) ||
	    (ix && (ix->dtype != PR_I64 || !shape_is(ix, x, lead, sp, d.out + 2 - sp))))
		return prt_k_staged(k);
	prt_tensor x2 = as_2d(x, sp), o2 = as_2d(o, sp);
	d.o = walk_of(&o2);
	memcpy(d.xst, x2.strides, sizeof d.xst);
	if (ix) {
		prt_tensor i2 = as_2d(ix, sp);
		memcpy(d.ist, i2.strides, sizeof d.ist);
	}
	d.kind = kind;
	if (d.o.n == 0)
		return NULL;
	pool_kernel<<<blocks_for(d.o.n), THREADS, 0, stream_of(k)>>>(d, (float *)o->data,
								     ix ? (int64_t *)ix->data : NULL,
								     (const float *)x->data);
	return launch_error(k, "pooling kernel launch");
}

pr_err *cu_max_pool2d(prt_kctx *k) { return pool_impl(k, POOL_MAX, 2); }
pr_err *cu_max_pool1d(prt_kctx *k) { return pool_impl(k, POOL_MAX, 1); }
pr_err *cu_avg_pool2d(prt_kctx *k) { return pool_impl(k, POOL_AVG, 2); }
pr_err *cu_avg_pool1d(prt_kctx *k) { return pool_impl(k, POOL_AVG, 1); }
pr_err *cu_adaptive_avg_pool2d(prt_kctx *k) { return pool_impl(k, POOL_ADAPTIVE, 2); }
pr_err *cu_adaptive_avg_pool1d(prt_kctx *k) { return pool_impl(k, POOL_ADAPTIVE, 1); }

/* ---- activations ----------------------------------------------------------------------- */

enum act_kind { ACT_HARDTANH, ACT_HARDSWISH, ACT_HARDSIGMOID, ACT_SILU };

struct act_desc {
	walk x, o;
	int kind;
	double lo, hi;            /* hardtanh's bounds */
};

/* Comparisons, not fmin/fmax, so that NaN stays NaN (ATen's clamp). */
__device__ double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* In double, as the host: hardswish is x * relu6(x + 3) / 6, hardsigmoid
 * relu6(x + 3) / 6, silu x * sigmoid(x). */
__device__ double act_apply(const act_desc &d, double v)
{
	switch (d.kind) {
	case ACT_HARDTANH: return clampd(v, d.lo, d.hi);
	case ACT_HARDSWISH: return v * clampd(v + 3, 0, 6) / 6;
	case ACT_HARDSIGMOID: return clampd(v + 3, 0, 6) / 6;
	default: return v / (1 + exp(-v));
	}
}

__global__ void act_kernel(act_desc d, float *o, const float *x)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.o.n) {
		coords_of(d.o, i, c);
		o[offset_of(d.o, c)] = (float)act_apply(d, x[offset_of(d.x, c)]);
	}
}

/* hardtanh(self, min_val=-1, max_val=1), hardswish(self), hardsigmoid(self),
 * silu(self) and their in-place forms (the result is self). Elementwise in
 * place is safe: each element is read by the thread that writes it. */
pr_err *act_impl(prt_kctx *k, int kind)
{
	prt_tensor *x = prt_karg_tensor(k, 0), *o = first_result(k);
	act_desc d;
	memset(&d, 0, sizeof d);
	d.lo = prt_karg_float(k, 1, -1);
	d.hi = prt_karg_float(k, 2, 1);
	if (!is_f32(x) || !is_f32(o) || !shape_is(o, x, x->rank, 0, NULL) || (kind == ACT_HARDTANH && d.lo > d.hi))
		return prt_k_staged(k);
	d.x = walk_of(x);
	d.o = walk_of(o);
	d.kind = kind;
	if (d.o.n == 0)
		return NULL;
	act_kernel<<<blocks_for(d.o.n), THREADS, 0, stream_of(k)>>>(d, (float *)o->data, (const float *)x->data);
	return launch_error(k, "activation kernel launch");
}

pr_err *cu_hardtanh(prt_kctx *k) { return act_impl(k, ACT_HARDTANH); }
pr_err *cu_hardswish(prt_kctx *k) { return act_impl(k, ACT_HARDSWISH); }
pr_err *cu_hardsigmoid(prt_kctx *k) { return act_impl(k, ACT_HARDSIGMOID); }
pr_err *cu_silu(prt_kctx *k) { return act_impl(k, ACT_SILU); }

/* ---- elements of every dtype --------------------------------------------------------- */

/* The device twins of data.h's conversions (core/data.c), which the host
 * kernels store and load through: f16 and bf16 rounded from the double
 * directly, to nearest, ties to even; integers truncated and saturated, NaN
 * 0; bool v != 0. */
__device__ uint32_t small_float_bits(double v, int ebits, int mbits)
{
	uint64_t b = (uint64_t)__double_as_longlong(v);
	uint32_t sign = (uint32_t)(b >> 63) << (ebits + mbits);
	int e = (int)((b >> 52) & 0x7ff);
	uint64_t m = b & ((1ull << 52) - 1);
	uint32_t inf = ((1u << ebits) - 1) << mbits;
	if (e == 0x7ff)
		return sign | inf | (m ? 1u << (mbits - 1) : 0);
	if (e == 0)
		return sign;
	int bias = (1 << (ebits - 1)) - 1, te = e - 1023 + bias;
	if (te >= (1 << ebits) - 1)
		return sign | inf;
	uint64_t mant = m | (1ull << 52);
	int shift = 52 - mbits + (te >= 1 ? 0 : 1 - te);
	if (shift > 53)
		return sign;
	uint64_t q = mant >> shift, rem = mant & ((1ull << shift) - 1), half = 1ull << (shift - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	uint64_t bits = te >= 1 ? ((uint64_t)(te - 1) << mbits) + q : q;
	return bits >= inf ? sign | inf : sign | (uint32_t)bits;
}

__device__ double f16_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double sign = (h & 0x8000) ? -1.0 : 1.0;
	if (e == 0x1f)
		return m ? (double)NAN : sign * (double)INFINITY;
	return e == 0 ? sign * ldexp((double)m, -24) : sign * ldexp((double)(m | 0x400), e - 25);
}

__device__ double bf16_value(uint16_t h) { return __int_as_float((int)((uint32_t)h << 16)); }

__device__ double elem_load(pr_dtype t, const void *p, int64_t i)
{
	switch (t) {
	case PR_F32: return ((const float *)p)[i];
	case PR_F16: return f16_value(((const uint16_t *)p)[i]);
	case PR_BF16: return bf16_value(((const uint16_t *)p)[i]);
	case PR_F64: return ((const double *)p)[i];
	case PR_I64: return (double)((const int64_t *)p)[i];
	case PR_I32: return ((const int32_t *)p)[i];
	case PR_I16: return ((const int16_t *)p)[i];
	case PR_I8: return ((const int8_t *)p)[i];
	case PR_U8: return ((const uint8_t *)p)[i];
	default: return ((const uint8_t *)p)[i] != 0;
	}
}

__device__ int64_t double_to_int(double v, int64_t lo, int64_t hi)
{
	return isnan(v) ? 0 : v <= (double)lo ? lo : v >= (double)hi ? hi : (int64_t)v;
}

__device__ int64_t elem_load_i64(pr_dtype t, const void *p, int64_t i)
{
	switch (t) {
	case PR_I64: return ((const int64_t *)p)[i];
	case PR_I32: return ((const int32_t *)p)[i];
	case PR_I16: return ((const int16_t *)p)[i];
	case PR_I8: return ((const int8_t *)p)[i];
	case PR_U8: return ((const uint8_t *)p)[i];
	case PR_BOOL: return ((const uint8_t *)p)[i] != 0;
	default: return double_to_int(elem_load(t, p, i), INT64_MIN, INT64_MAX);
	}
}

__device__ void elem_store(pr_dtype t, void *p, int64_t i, double v)
{
	switch (t) {
	case PR_F32: ((float *)p)[i] = (float)v; break;
	case PR_F16: ((uint16_t *)p)[i] = (uint16_t)small_float_bits(v, 5, 10); break;
	case PR_BF16: ((uint16_t *)p)[i] = (uint16_t)small_float_bits(v, 8, 7); break;
	case PR_F64: ((double *)p)[i] = v; break;
	case PR_I64: ((int64_t *)p)[i] = double_to_int(v, INT64_MIN, INT64_MAX); break;
	case PR_I32: ((int32_t *)p)[i] = (int32_t)double_to_int(v, INT32_MIN, INT32_MAX); break;
	case PR_I16: ((int16_t *)p)[i] = (int16_t)double_to_int(v, INT16_MIN, INT16_MAX); break;
	case PR_I8: ((int8_t *)p)[i] = (int8_t)double_to_int(v, INT8_MIN, INT8_MAX); break;
	case PR_U8: ((uint8_t *)p)[i] = (uint8_t)double_to_int(v, 0, UINT8_MAX); break;
	default: ((uint8_t *)p)[i] = v != 0; break;
	}
}

__device__ int64_t clamp_i64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

__device__ void elem_store_i64(pr_dtype t, void *p, int64_t i, int64_t v)
{
	switch (t) {
	case PR_I64: ((int64_t *)p)[i] = v; break;
	case PR_I32: ((int32_t *)p)[i] = (int32_t)clamp_i64(v, INT32_MIN, INT32_MAX); break;
	case PR_I16: ((int16_t *)p)[i] = (int16_t)clamp_i64(v, INT16_MIN, INT16_MAX); break;
	case PR_I8: ((int8_t *)p)[i] = (int8_t)clamp_i64(v, INT8_MIN, INT8_MAX); break;
	case PR_U8: ((uint8_t *)p)[i] = (uint8_t)clamp_i64(v, 0, UINT8_MAX); break;
	case PR_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: elem_store(t, p, i, (double)v); break;
	}
}

/* ---- typed elementwise ops: the host's plan, run on the device ------------------------------ */

/* A plan (prt_ew_plan, kernels.h) as the device reads it. The functions
 * below are kernels_elementwise.c's loop, element for element; the
 * arithmetic itself is kernels_elementwise.h's, shared. */
struct ew_operand {
	const void *p;               /* NULL: the number */
	pr_dtype dtype;
	int64_t i;
	double f;
	int64_t st[PR_MAX_RANK];
};

struct ew_plan_desc {
	walk o;
	pr_dtype od, ct;
	prt_ewt_op op;
	int n;
	bool select;
	ew_operand x[3], cond;
	double alpha_f;
	int64_t alpha_i;
};

__device__ bool is_float_dt(pr_dtype t) { return prt_ew_domain_of(t) == PRT_EWD_FLOAT; }

__device__ double round_to(pr_dtype t, double v)
{
	switch (t) {
	case PR_F32: return (float)v;
	case PR_F16: return f16_value((uint16_t)small_float_bits(v, 5, 10));
	case PR_BF16: return bf16_value((uint16_t)small_float_bits(v, 8, 7));
	default: return v;
	}
}

__device__ double load_f(const ew_operand &x, int64_t off, pr_dtype ct)
{
	if (!x.p)
		return round_to(ct == PR_F64 ? PR_F64 : PR_F32, x.f);
	if (is_float_dt(x.dtype))
		return round_to(ct, elem_load(x.dtype, x.p, off));
	int64_t i = elem_load_i64(x.dtype, x.p, off);
	return ct == PR_F32 ? (double)(float)i : round_to(ct, (double)i);
}

__device__ int64_t load_i(const ew_operand &x, int64_t off, pr_dtype ct)
{
	if (!x.p)
		return is_float_dt(x.dtype) ? prt_ew_float_to_int(ct, x.f) : prt_ew_wrap(ct, x.i);
	if (is_float_dt(x.dtype))
		return prt_ew_float_to_int(ct, elem_load(x.dtype, x.p, off));
	return prt_ew_wrap(ct, elem_load_i64(x.dtype, x.p, off));
}

__device__ void ew_store_f(pr_dtype t, void *p, int64_t i, double v)
{
	if (is_float_dt(t))
		elem_store(t, p, i, v);
	else
		elem_store_i64(t, p, i, prt_ew_float_to_int(t, v));
}

__device__ void ew_store_i(pr_dtype t, void *p, int64_t i, int64_t v)
{
	if (t == PR_F32)
		((float *)p)[i] = (float)v;   /* one rounding, not two through double */
	else if (is_float_dt(t))
		elem_store(t, p, i, (double)v);
	else
		elem_store_i64(t, p, i, prt_ew_wrap(t, v));
}

/* load_i, but a number operand of maximum, minimum or clamp (a bound) at
 * full width, as the host. */
__device__ int64_t load_bound_i(const ew_plan_desc &d, const ew_operand &x, int64_t off)
{
	bool wide = d.op == PRT_EWT_MAXIMUM || d.op == PRT_EWT_MINIMUM || d.op == PRT_EWT_CLAMP;
	return !x.p && wide ? x.i : load_i(x, off, d.ct);
}

/* One element: the operands at offsets off[0..n-1], the result at oo. */
__device__ void ew_element(const ew_plan_desc &d, void *o, int64_t oo, const int64_t *off)
{
	const ew_operand &a = d.x[0], &b = d.x[1], &c = d.x[2];
	bool add = d.op == PRT_EWT_ADD || d.op == PRT_EWT_SUB;
	if (is_float_dt(d.ct)) {
		double av = load_f(a, off[0], d.ct), bv = d.n > 1 ? load_f(b, off[1], d.ct) : 0;
		if (add && d.alpha_f != 1)
			bv = round_to(d.ct, bv * d.alpha_f);
		double r = d.op == PRT_EWT_CLAMP ? prt_ew_clamp_f(av, bv, load_f(c, off[2], d.ct))
						 : prt_ewt_float_in(d.ct, d.op, av, bv);
		ew_store_f(d.od, o, oo, prt_ewt_gives_bool(d.op) ? r : round_to(d.ct, r));
	} else {
		int64_t av = load_i(a, off[0], d.ct), bv = d.n > 1 ? load_bound_i(d, b, off[1]) : 0;
		if (add && d.alpha_i != 1)
			bv = prt_ewt_int(PRT_EWT_MUL, bv, d.alpha_i);
		int64_t r = d.op == PRT_EWT_CLAMP
				    ? prt_ew_wrap(d.ct, prt_ew_clamp_i(av, bv, load_bound_i(d, c, off[2])))
				    : prt_ewt_int_in(d.ct, d.op, av, bv);
		ew_store_i(d.od, o, oo, r);
	}
}

/* where / masked_fill: x[0] where the condition (its offset off[3]) holds, else x[1]. */
__device__ void ew_select(const ew_plan_desc &d, void *o, int64_t oo, const int64_t *offs)
{
	bool c = elem_load_i64(d.cond.dtype, d.cond.p, offs[3]) != 0;
	const ew_operand &x = c ? d.x[0] : d.x[1];
	int64_t off = c ? offs[0] : offs[1];
	if (is_float_dt(d.ct))
		ew_store_f(d.od, o, oo, load_f(x, off, d.ct));
	else
		ew_store_i(d.od, o, oo, load_i(x, off, d.ct));
}

__global__ void ew_plan_kernel(ew_plan_desc d, void *o)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.o.n) {
		coords_of(d.o, i, c);
		int64_t off[4] = {0, 0, 0, 0};   /* the operands', the condition's last */
		for (int j = 0; j < d.o.rank; j++) {
			off[0] += c[j] * d.x[0].st[j];
			off[1] += c[j] * d.x[1].st[j];
			off[2] += c[j] * d.x[2].st[j];
			off[3] += c[j] * d.cond.st[j];
		}
		if (d.select)
			ew_select(d, o, offset_of(d.o, c), off);
		else
			ew_element(d, o, offset_of(d.o, c), off);
	}
}

ew_operand operand_of(const prt_ew_operand &x)
{
	ew_operand r;
	memset(&r, 0, sizeof r);
	r.p = x.t ? x.t->data : NULL;
	r.dtype = x.dtype, r.i = x.i, r.f = x.f;
	memcpy(r.st, x.st, sizeof r.st);
	return r;
}

/* Runs a plan the host's planner made (its checks passed). */
pr_err *ew_plan_launch(prt_kctx *k, const prt_ew_plan &p)
{
	ew_plan_desc d;
	memset(&d, 0, sizeof d);
	d.o = walk_of(p.out);
	d.od = p.out->dtype, d.ct = p.ct, d.op = (prt_ewt_op)p.op, d.n = p.n, d.select = p.select;
	for (int i = 0; i < p.n; i++)
		d.x[i] = operand_of(p.x[i]);
	if (p.select)
		d.cond = operand_of(p.cond);
	d.alpha_f = p.alpha_f, d.alpha_i = p.alpha_i;
	if (d.o.n == 0)
		return NULL;
	ew_plan_kernel<<<blocks_for(d.o.n), THREADS, 0, stream_of(k)>>>(d, p.out->data);
	return launch_error(k, "elementwise kernel launch");
}

/* op on arguments 0..n-1 (alpha at alpha_at), as kernels_elementwise.c's
 * kernel of that op plans it. */
pr_err *ew_run(prt_kctx *k, prt_ewt_op op, int n, int alpha_at)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_plan_get(k, op, n, alpha_at, &p);
	return err ? err : ew_plan_launch(k, p);
}

pr_err *cu_sqrt(prt_kctx *k) { return ew_run(k, PRT_EWT_SQRT, 1, -1); }
pr_err *cu_rsqrt(prt_kctx *k) { return ew_run(k, PRT_EWT_RSQRT, 1, -1); }
pr_err *cu_abs(prt_kctx *k) { return ew_run(k, PRT_EWT_ABS, 1, -1); }
pr_err *cu_pow(prt_kctx *k) { return ew_run(k, PRT_EWT_POW, 2, -1); }
pr_err *cu_eq(prt_kctx *k) { return ew_run(k, PRT_EWT_EQ, 2, -1); }
pr_err *cu_ne(prt_kctx *k) { return ew_run(k, PRT_EWT_NE, 2, -1); }
pr_err *cu_lt(prt_kctx *k) { return ew_run(k, PRT_EWT_LT, 2, -1); }
pr_err *cu_le(prt_kctx *k) { return ew_run(k, PRT_EWT_LE, 2, -1); }
pr_err *cu_gt(prt_kctx *k) { return ew_run(k, PRT_EWT_GT, 2, -1); }
pr_err *cu_ge(prt_kctx *k) { return ew_run(k, PRT_EWT_GE, 2, -1); }
pr_err *cu_logical_and(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_AND, 2, -1); }
pr_err *cu_logical_or(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_OR, 2, -1); }
pr_err *cu_logical_xor(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_XOR, 2, -1); }
pr_err *cu_logical_not(prt_kctx *k) { return ew_run(k, PRT_EWT_LOGICAL_NOT, 1, -1); }
pr_err *cu_bitwise_and(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_AND, 2, -1); }
pr_err *cu_bitwise_or(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_OR, 2, -1); }
pr_err *cu_bitwise_xor(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_XOR, 2, -1); }
pr_err *cu_bitwise_not(prt_kctx *k) { return ew_run(k, PRT_EWT_BITWISE_NOT, 1, -1); }
pr_err *cu_to_copy(prt_kctx *k) { return ew_run(k, PRT_EWT_COPY, 1, -1); }

pr_err *cu_where(prt_kctx *k)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_where_plan(k, &p);
	return err ? err : ew_plan_launch(k, p);
}

pr_err *cu_masked_fill(prt_kctx *k)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_masked_fill_plan(k, &p);
	return err ? err : ew_plan_launch(k, p);
}

/* Sets *bad when some element of the integer tensor w walks is 0. */
__global__ void zero_check_kernel(walk w, pr_dtype t, const void *p, int *bad)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, w.n) {
		coords_of(w, i, c);
		if (elem_load_i64(t, p, offset_of(w, c)) == 0)
			*bad = 1;
	}
}

template <typename F> pr_err *none_flagged(prt_kctx *k, F launch, bool *ok);

/* div.Tensor_mode / div.Scalar_mode(self, other, *, rounding_mode): none is
 * true division, "trunc" and "floor" round the quotient. An integer
 * division by zero (found on the device for a tensor divisor), or a mode
 * the host refuses, runs the host kernel, which says so. */
pr_err *cu_div_mode(prt_kctx *k)
{
	const char *mode = prt_karg_str(k, 2, NULL);
	if (!mode)
		return ew_run(k, PRT_EWT_DIV, 2, -1);
	bool fl = strcmp(mode, "floor") == 0;
	if (!fl && strcmp(mode, "trunc") != 0)
		return prt_k_staged(k);
	prt_ew_plan p;
	pr_err *err = prt_ew_plan_get(k, fl ? PRT_EWT_DIV_FLOOR : PRT_EWT_DIV_TRUNC, 2, -1, &p);
	if (err)
		return err;
	bool ok = true;
	const prt_ew_operand &b = p.x[1];
	if (prt_ew_domain_of(p.ct) != PRT_EWD_FLOAT && !b.t)
		ok = prt_ew_domain_of(b.dtype) == PRT_EWD_FLOAT ? b.f != 0 : b.i != 0;
	if (prt_ew_domain_of(p.ct) != PRT_EWD_FLOAT && b.t && prt_tensor_numel(b.t) > 0) {
		walk w = walk_of(b.t);
		const void *bp = b.t->data;
		pr_dtype bt = b.t->dtype;
		err = none_flagged(k, [&](int *bad, cudaStream_t st) {
			zero_check_kernel<<<blocks_for(w.n), THREADS, 0, st>>>(w, bt, bp, bad);
		}, &ok);
	}
	if (err || !ok)
		return err ? err : prt_k_staged(k);
	return ew_plan_launch(k, p);
}

pr_err *cu_maximum(prt_kctx *k) { return ew_run(k, PRT_EWT_MAXIMUM, 2, -1); }
pr_err *cu_minimum(prt_kctx *k) { return ew_run(k, PRT_EWT_MINIMUM, 2, -1); }

/* clamp and its one-bound forms, planned as the host plans them. */
pr_err *clamp_launch(prt_kctx *k, int lo_at, int hi_at)
{
	prt_ew_plan p;
	pr_err *err = prt_ew_clamp_plan(k, lo_at, hi_at, &p);
	return err ? err : ew_plan_launch(k, p);
}

pr_err *cu_clamp(prt_kctx *k) { return clamp_launch(k, 1, 2); }
pr_err *cu_clamp_min(prt_kctx *k) { return clamp_launch(k, 1, -1); }
pr_err *cu_clamp_max(prt_kctx *k) { return clamp_launch(k, -1, 1); }

/* round and round.decimals (and their in-place forms) in the host's
 * arithmetic, ATen's CPU kernel's: with decimals, f16 and bf16 scale in
 * float (prt_ew_round_decimals), the results the host and eager CPU give. */
pr_err *cu_round(prt_kctx *k) { return ew_run(k, PRT_EWT_ROUND, 1, -1); }
pr_err *cu_round_decimals(prt_kctx *k) { return ew_run(k, PRT_EWT_ROUND_DECIMALS, 2, -1); }

/* rsub.Scalar(self, other, alpha=1) = other - alpha * self: sub with its
 * operands swapped, as the host. */
pr_err *cu_rsub(prt_kctx *k)
{
	if (k->n_args < 2)
		return prt_k_staged(k);
	prt_karg swapped[3] = {k->args[1], k->args[0], k->n_args > 2 ? k->args[2] : prt_karg{}};
	if (k->n_args <= 2) {
		swapped[2].kind = PR_ARG_INT;
		swapped[2].i = 1;
	}
	prt_kctx c = *k;
	c.args = swapped, c.n_args = 3;
	return ew_run(&c, PRT_EWT_SUB, 2, 2);
}

/* ---- factories: full, zeros, ones, full_like, scalar_tensor, arange ------------------------ */

/* Every element of o takes the bytes of one element (es bytes, in val). */
struct fill_desc {
	walk o;
	int es;
	uint64_t val;
};

__global__ void fill_kernel(fill_desc d, uint8_t *o)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.o.n) {
		coords_of(d.o, i, c);
		uint8_t *p = o + offset_of(d.o, c) * d.es;
		for (int b = 0; b < d.es; b++)
			p[b] = (uint8_t)(d.val >> (8 * b));
	}
}

/* The host's fill: the element is made on the host exactly as the host
 * kernel stores it (data.h), then written everywhere. */
pr_err *fill_launch(prt_kctx *k, prt_tensor *o, bool as_int, int64_t iv, double fv)
{
	fill_desc d;
	memset(&d, 0, sizeof d);
	d.o = walk_of(o);
	d.es = (int)pr_dtype_size(o->dtype);
	if (as_int && !pr_dtype_is_float(o->dtype))
		pr_elem_store_i64(o->dtype, &d.val, iv);
	else
		pr_elem_store(o->dtype, &d.val, as_int ? (double)iv : fv);
	if (d.o.n == 0)
		return NULL;
	fill_kernel<<<blocks_for(d.o.n), THREADS, 0, stream_of(k)>>>(d, o->data);
	return launch_error(k, "fill kernel launch");
}

/* Is argument i an integer (a literal, an int value, a bool)? As the host. */
bool karg_is_int(prt_kctx *k, int i)
{
	if (i >= k->n_args)
		return false;
	const prt_karg *a = &k->args[i];
	return a->kind == PR_ARG_INT || a->kind == PR_ARG_BOOL || (a->kind == PR_ARG_VALUE && a->v->kind == PRT_RV_INT);
}

/* The result has the shape the size list (argument i) gives, and the fill
 * value (argument value_at, -1: none) is there; else the host kernel runs
 * (and says what is wrong). */
bool factory_ok(prt_kctx *k, int size_at, const prt_tensor *like, int value_at)
{
	if (k->out->kind != PRT_RV_TENSOR || (value_at >= 0 && prt_karg_is_none(k, value_at)))
		return false;
	int64_t size[PR_MAX_RANK];
	int n = like ? like->rank : size_at >= 0 ? prt_karg_ints(k, size_at, size, PR_MAX_RANK) : 0;
	if (n < 0)
		return false;
	const int64_t *want = like ? like->shape : size;
	const prt_tensor *o = &k->out->t;
	if (o->rank != n)
		return false;
	for (int d = 0; d < n; d++)
		if (o->shape[d] != want[d] || want[d] < 0)
			return false;
	return true;
}

/* full(size, fill_value, ...), zeros(size), ones(size): value_at -1 for c. */
pr_err *full_impl(prt_kctx *k, int value_at, double c)
{
	if (!factory_ok(k, 0, NULL, value_at))
		return prt_k_staged(k);
	bool as_int = value_at < 0 || karg_is_int(k, value_at);
	int64_t iv = value_at < 0 ? (int64_t)c : prt_karg_int(k, value_at, 0);
	return fill_launch(k, &k->out->t, as_int, iv, value_at < 0 ? c : prt_karg_float(k, value_at, 0));
}

pr_err *cu_full(prt_kctx *k) { return full_impl(k, 1, 0); }
pr_err *cu_zeros(prt_kctx *k) { return full_impl(k, -1, 0); }
pr_err *cu_ones(prt_kctx *k) { return full_impl(k, -1, 1); }

/* full_like(self, fill_value, ...) */
pr_err *cu_full_like(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0);
	if (!x || !factory_ok(k, -1, x, 1))
		return prt_k_staged(k);
	return fill_launch(k, &k->out->t, karg_is_int(k, 1), prt_karg_int(k, 1, 0), prt_karg_float(k, 1, 0));
}

/* scalar_tensor(s, ...): a 0-d result. */
pr_err *cu_scalar_tensor(prt_kctx *k)
{
	if (!factory_ok(k, -1, NULL, 0))
		return prt_k_staged(k);
	return fill_launch(k, &k->out->t, karg_is_int(k, 0), prt_karg_int(k, 0, 0), prt_karg_float(k, 0, 0));
}

/* o[i] = s0 + i * st (ints into an integer result) or start + i * step. */
struct arange_desc {
	int64_t n, ost;
	pr_dtype od;
	bool ints;
	int64_t s0, st;
	double start, step;
};

__global__ void arange_kernel(arange_desc d, void *o)
{
	GRID_STRIDE(i, d.n) {
		if (d.ints)
			elem_store_i64(d.od, o, i * d.ost, d.s0 + i * d.st);
		else
			elem_store(d.od, o, i * d.ost, d.start + (double)i * d.step);
	}
}

/* arange over [start, end) by step (start_at / step_at -1: 0 and 1): the
 * host kernel's length and values; any argument it would refuse, or a
 * result of another length, runs the host kernel, which says why. */
pr_err *arange_impl(prt_kctx *k, int start_at, int end_at, int step_at)
{
	if (k->out->kind != PRT_RV_TENSOR || prt_karg_is_none(k, end_at))
		return prt_k_staged(k);
	prt_tensor *o = &k->out->t;
	bool ints = karg_is_int(k, end_at) && (start_at < 0 || karg_is_int(k, start_at)) &&
		    (step_at < 0 || prt_karg_is_none(k, step_at) || karg_is_int(k, step_at));
	arange_desc d;
	memset(&d, 0, sizeof d);
	d.start = start_at < 0 ? 0 : prt_karg_float(k, start_at, 0);
	double end = prt_karg_float(k, end_at, 0);
	d.step = step_at < 0 ? 1 : prt_karg_float(k, step_at, 1);
	if (d.step == 0 || d.step != d.step || (d.step > 0 && d.start > end) || (d.step < 0 && d.start < end))
		return prt_k_staged(k);
	double len = ceil((end - d.start) / d.step);
	if (ints) {
		int64_t s0 = start_at < 0 ? 0 : prt_karg_int(k, start_at, 0);
		int64_t e0 = prt_karg_int(k, end_at, 0), st = step_at < 0 ? 1 : prt_karg_int(k, step_at, 1);
		len = (double)((e0 - s0 + st + (st > 0 ? -1 : 1)) / st);
	}
	d.n = (int64_t)len;
	if (o->rank != 1 || o->shape[0] != d.n)
		return prt_k_staged(k);
	d.ints = ints && !pr_dtype_is_float(o->dtype);
	d.s0 = ints && start_at >= 0 ? prt_karg_int(k, start_at, 0) : 0;
	d.st = ints && step_at >= 0 ? prt_karg_int(k, step_at, 1) : 1;
	d.ost = o->strides[0];
	d.od = o->dtype;
	if (d.n == 0)
		return NULL;
	arange_kernel<<<blocks_for(d.n), THREADS, 0, stream_of(k)>>>(d, o->data);
	return launch_error(k, "arange kernel launch");
}

pr_err *cu_arange(prt_kctx *k) { return arange_impl(k, -1, 0, -1); }
pr_err *cu_arange_start(prt_kctx *k) { return arange_impl(k, 0, 1, -1); }
pr_err *cu_arange_start_step(prt_kctx *k) { return arange_impl(k, 0, 1, 2); }

/* ---- cumsum ----------------------------------------------------------------------------- */

/* One thread per line along dim: the running sum in int64 (integer result
 * and input) or double, stored after each step, as the host. */
struct cumsum_desc {
	walk lines;                  /* x's shape with dim's size 1 */
	int64_t xst[PR_MAX_RANK], ost[PR_MAX_RANK];
	int64_t len, xs, os;         /* along dim */
	pr_dtype xd, od;
	bool ints;
};

__global__ void cumsum_kernel(cumsum_desc d, void *o, const void *x)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.lines.n) {
		coords_of(d.lines, i, c);
		int64_t xo = 0, oo = 0, si = 0;
		for (int j = 0; j < d.lines.rank; j++)
			xo += c[j] * d.xst[j], oo += c[j] * d.ost[j];
		double sf = 0;
		for (int64_t j = 0; j < d.len; j++) {
			if (d.ints) {
				si += elem_load_i64(d.xd, x, xo + j * d.xs);
				elem_store_i64(d.od, o, oo + j * d.os, si);
			} else {
				sf += elem_load(d.xd, x, xo + j * d.xs);
				elem_store(d.od, o, oo + j * d.os, sf);
			}
		}
	}
}

/* cumsum(self, dim, *, dtype=None) */
pr_err *cu_cumsum(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0), *o = k->out->kind == PRT_RV_TENSOR ? &k->out->t : NULL;
	int dim = x ? prt_dim(prt_karg_int(k, 1, 0), x->rank) : -1;
	if (!x || !o || dim < 0 || !shape_is(o, x, x->rank, 0, NULL))
		return prt_k_staged(k);
	cumsum_desc d;
	memset(&d, 0, sizeof d);
	prt_tensor lines = *x;
	if (x->rank)
		lines.shape[dim] = 1;
	d.lines = walk_of(&lines);
	memcpy(d.xst, x->strides, sizeof d.xst);
	memcpy(d.ost, o->strides, sizeof d.ost);
	d.len = x->rank ? x->shape[dim] : 1;
	d.xs = x->rank ? x->strides[dim] : 0;
	d.os = o->rank ? o->strides[dim] : 0;
	d.xd = x->dtype, d.od = o->dtype;
	d.ints = !pr_dtype_is_float(o->dtype) && !pr_dtype_is_float(x->dtype);
	if (prt_tensor_numel(x) == 0)
		return NULL;
	cumsum_kernel<<<blocks_for(d.lines.n), THREADS, 0, stream_of(k)>>>(d, o->data, x->data);
	return launch_error(k, "cumsum kernel launch");
}

/* ---- gather ------------------------------------------------------------------------------ */

/* out[i...] = self[i... with index[i...] along dim], element bytes copied.
 * The indices are checked on the device first; if one is out of range the
 * host kernel runs instead and reports it (nothing has been written). */
struct gather_nd_desc {
	walk ix;                     /* the index's walk (the result has its shape) */
	int64_t xst[PR_MAX_RANK], ost[PR_MAX_RANK];
	int dim, es;
	bool i32;
	int64_t limit;
};

__device__ int64_t gather_index(const gather_nd_desc &d, const void *ix, const int64_t *c)
{
	int64_t off = offset_of(d.ix, c);
	int64_t j = d.i32 ? ((const int32_t *)ix)[off] : ((const int64_t *)ix)[off];
	return j < 0 ? j + d.limit : j;
}

__global__ void gather_check_kernel(gather_nd_desc d, const void *ix, int *bad)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.ix.n) {
		coords_of(d.ix, i, c);
		int64_t j = gather_index(d, ix, c);
		if (j < 0 || j >= d.limit)
			*bad = 1;
	}
}

__global__ void gather_nd_kernel(gather_nd_desc d, uint8_t *o, const uint8_t *x, const void *ix)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, d.ix.n) {
		coords_of(d.ix, i, c);
		int64_t j = gather_index(d, ix, c), xo = 0, oo = 0;
		for (int r = 0; r < d.ix.rank; r++) {
			xo += (r == d.dim ? j : c[r]) * d.xst[r];
			oo += c[r] * d.ost[r];
		}
		for (int b = 0; b < d.es; b++)
			o[oo * d.es + b] = x[xo * d.es + b];
	}
}

/* Runs launch(bad, stream), a check kernel that sets *bad when it finds
 * something wrong (an index out of range), and says whether none did.
 * Waits for the device's stream. */
template <typename F> pr_err *none_flagged(prt_kctx *k, F launch, bool *ok)
{
	scratch flag;
	pr_err *err = scratch_alloc(k, sizeof(int), &flag);
	if (err)
		return err;
	int bad = 0;
	err = cuda_check(k, cudaMemsetAsync(flag.p, 0, sizeof(int), flag.st), "cudaMemsetAsync");
	if (!err) {
		launch((int *)flag.p, flag.st);
		err = launch_error(k, "check kernel launch");
	}
	if (!err)
		err = cuda_check(k, cudaMemcpyAsync(&bad, flag.p, sizeof bad, cudaMemcpyDeviceToHost, flag.st),
				 "cudaMemcpyAsync");
	if (!err)
		err = cuda_check(k, cudaStreamSynchronize(flag.st), "cudaStreamSynchronize");
	scratch_free(&flag);
	*ok = !bad;
	return err;
}

/* gather(self, dim, index, *, sparse_grad=False): the cases the host takes
 * (index of self's rank, no larger than self off dim, i64 or i32). */
pr_err *cu_gather(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0), *ix = prt_karg_tensor(k, 2);
	prt_tensor *o = k->out->kind == PRT_RV_TENSOR ? &k->out->t : NULL;
	int dim = x ? prt_dim(prt_karg_int(k, 1, 0), x->rank) : -1;
	if (!x || !ix || !o || dim < 0 || x->rank == 0 || ix->rank != x->rank || o->dtype != x->dtype ||
	    (ix->dtype != PR_I64 && ix->dtype != PR_I32) || !shape_is(o, ix, ix->rank, 0, NULL))
		return prt_k_staged(k);
	for (int i = 0; i < ix->rank; i++)
		if (i != dim && ix->shape[i] > x->shape[i])
			return prt_k_staged(k);
	gather_nd_desc d;
	memset(&d, 0, sizeof d);
	d.ix = walk_of(ix);
	memcpy(d.xst, x->strides, sizeof d.xst);
	memcpy(d.ost, o->strides, sizeof d.ost);
	d.dim = dim, d.es = (int)pr_dtype_size(x->dtype), d.i32 = ix->dtype == PR_I32, d.limit = x->shape[dim];
	if (d.ix.n == 0)
		return NULL;
	bool ok;
	const void *ixp = ix->data;
	pr_err *err = none_flagged(k, [&](int *bad, cudaStream_t st) {
		gather_check_kernel<<<blocks_for(d.ix.n), THREADS, 0, st>>>(d, ixp, bad);
	}, &ok);
	if (err || !ok)
		return err ? err : prt_k_staged(k);
	gather_nd_kernel<<<blocks_for(d.ix.n), THREADS, 0, stream_of(k)>>>(d, o->data, x->data, ix->data);
	return launch_error(k, "gather kernel launch");
}

/* ---- index.Tensor ---------------------------------------------------------------------- */

/* Advanced indexing as kernels_tensor.c does it: indices[i] (a tensor or
 * none) indexes dim i of self; the index tensors broadcast to one shape B,
 * which replaces the indexed dims in place when they are adjacent and goes
 * first when a none separates them. The device copies element bytes; the
 * shapes are worked out here the host's way, and anything the host would
 * refuse (or a result of another shape, or an index out of range, found on
 * the device first) runs the host kernel instead, which reports it. */
struct adv_desc {
	walk o;                                   /* the result */
	int xrank, n, nb, pos_b, es;
	int64_t xshape[PR_MAX_RANK], xst[PR_MAX_RANK];
	const void *ix[PR_MAX_RANK];              /* NULL: none */
	bool i32[PR_MAX_RANK];
	int64_t bst[PR_MAX_RANK][PR_MAX_RANK];    /* each index's strides over B */
};

/* Index d's element at B position bi (the result's coordinates from pos_b),
 * made non-negative against self's dim. */
__device__ int64_t adv_load(const adv_desc &a, int d, const int64_t *bi)
{
	int64_t off = 0;
	for (int j = 0; j < a.nb; j++)
		off += bi[j] * a.bst[d][j];
	int64_t v = a.i32[d] ? ((const int32_t *)a.ix[d])[off] : ((const int64_t *)a.ix[d])[off];
	return v < 0 ? v + a.xshape[d] : v;
}

/* The element of self result element c reads, or -1 when an index is out of range. */
__device__ int64_t adv_source(const adv_desc &a, const int64_t *c)
{
	int64_t off = 0;
	int od = 0;
	for (int d = 0; d < a.xrank; d++) {
		if (od == a.pos_b)
			od += a.nb;
		int64_t s;
		if (d < a.n && a.ix[d]) {
			s = adv_load(a, d, c + a.pos_b);
			if (s < 0 || s >= a.xshape[d])
				return -1;
		} else {
			s = c[od++];
		}
		off += s * a.xst[d];
	}
	return off;
}

__global__ void adv_check_kernel(adv_desc a, int *bad)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, a.o.n) {
		coords_of(a.o, i, c);
		if (adv_source(a, c) < 0)
			*bad = 1;
	}
}

__global__ void adv_kernel(adv_desc a, uint8_t *o, const uint8_t *x)
{
	int64_t c[PR_MAX_RANK];
	GRID_STRIDE(i, a.o.n) {
		coords_of(a.o, i, c);
		int64_t src = adv_source(a, c), dst = offset_of(a.o, c);
		for (int b = 0; src >= 0 && b < a.es; b++)
			o[dst * a.es + b] = x[src * a.es + b];
	}
}

/* B, the index tensors' broadcast shape, and each one's strides over it;
 * false when they do not broadcast. */
bool adv_broadcast(adv_desc *a, const prt_tensor *const *ix, int64_t *b)
{
	a->nb = 0;
	for (int i = 0; i < a->n; i++) {
		const prt_tensor *t = ix[i];
		if (!t)
			continue;
		if (t->rank > a->nb) {
			for (int d = a->nb - 1; d >= 0; d--)
				b[d + t->rank - a->nb] = b[d];
			for (int d = 0; d < t->rank - a->nb; d++)
				b[d] = 1;
			a->nb = t->rank;
		}
		for (int d = 0; d < t->rank; d++) {
			int64_t *bd = &b[a->nb - t->rank + d];
			if (*bd == 1)
				*bd = t->shape[d];
			else if (t->shape[d] != 1 && t->shape[d] != *bd)
				return false;
		}
	}
	prt_tensor bt;
	memset(&bt, 0, sizeof bt);
	bt.rank = a->nb;
	memcpy(bt.shape, b, sizeof(int64_t) * (size_t)a->nb);
	for (int i = 0; i < a->n; i++)
		if (ix[i] && !prt_bcast_strides(ix[i], &bt, a->bst[i]))
			return false;
	return true;
}

/* The result's shape the host kernel would give (false: it would refuse). */
bool adv_plan(prt_kctx *k, const prt_tensor *x, adv_desc *a, int *rank, int64_t *shape)
{
	if (k->n_args < 2 || k->args[1].kind != PR_ARG_LIST || k->args[1].n > x->rank)
		return false;
	const prt_karg *l = &k->args[1];
	const prt_tensor *ix[PR_MAX_RANK] = {NULL};
	int first = -1, last = -1;
	a->n = l->n;
	for (int i = 0; i < l->n; i++) {
		const prt_karg *it = &l->items[i];
		if (it->kind == PR_ARG_NONE)
			continue;
		if (it->kind != PR_ARG_VALUE || it->v->kind != PRT_RV_TENSOR ||
		    (it->v->t.dtype != PR_I64 && it->v->t.dtype != PR_I32))
			return false;
		ix[i] = &it->v->t;
		a->ix[i] = ix[i]->data;
		a->i32[i] = ix[i]->dtype == PR_I32;
		first = first < 0 ? i : first;
		last = i;
	}
	int64_t b[PR_MAX_RANK];
	if (first < 0 || !adv_broadcast(a, ix, b))
		return false;
	bool front = false;
	for (int i = first; i <= last; i++)
		front |= ix[i] == NULL;
	int r = 0;
	int64_t s[2 * PR_MAX_RANK];
	if (front) {
		a->pos_b = 0;
		for (int d = 0; d < a->nb; d++)
			s[r++] = b[d];
		for (int d = 0; d < x->rank; d++)
			if (d >= a->n || !ix[d])
				s[r++] = x->shape[d];
	} else {
		for (int d = 0; d < first; d++)
			s[r++] = x->shape[d];
		a->pos_b = r;
		for (int d = 0; d < a->nb; d++)
			s[r++] = b[d];
		for (int d = last + 1; d < x->rank; d++)
			s[r++] = x->shape[d];
	}
	if (r > PR_MAX_RANK)
		return false;
	*rank = r;
	memcpy(shape, s, sizeof(int64_t) * (size_t)r);
	return true;
}

/* index.Tensor(self, Tensor?[] indices) */
pr_err *cu_index(prt_kctx *k)
{
	prt_tensor *x = prt_karg_tensor(k, 0), *o = k->out->kind == PRT_RV_TENSOR ? &k->out->t : NULL;
	adv_desc a;
	memset(&a, 0, sizeof a);
	int r;
	int64_t shape[PR_MAX_RANK];
	if (!x || !o || o->dtype != x->dtype || !adv_plan(k, x, &a, &r, shape) || !shape_is(o, x, 0, r, shape))
		return prt_k_staged(k);
	a.o = walk_of(o);
	a.xrank = x->rank;
	a.es = (int)pr_dtype_size(x->dtype);
	memcpy(a.xshape, x->shape, sizeof a.xshape);
	memcpy(a.xst, x->strides, sizeof a.xst);
	if (a.o.n == 0)
		return NULL;
	bool ok;
	pr_err *err = none_flagged(k, [&](int *bad, cudaStream_t st) {
		adv_check_kernel<<<blocks_for(a.o.n), THREADS, 0, st>>>(a, bad);
	}, &ok);
	if (err || !ok)
		return err ? err : prt_k_staged(k);
	adv_kernel<<<blocks_for(a.o.n), THREADS, 0, stream_of(k)>>>(a, o->data, x->data);
	return launch_error(k, "index kernel launch");
}

/* Every name a host kernel of these ops may be registered under; the
 * registry pairs each with its host kernel, and ignores a name it has no
 * host kernel for. */
const prt_cuda_kernel nn_kernels[] = {
	{"aten::convolution", cu_convolution},
	{"aten::_native_batch_norm_legit_no_training", cu_bn_no_training},
	{"aten::batch_norm", cu_batch_norm},
	{"aten::max_pool2d_with_indices", cu_max_pool2d},
	{"aten::max_pool2d", cu_max_pool2d},
	{"aten::max_pool1d", cu_max_pool1d},
	{"aten::avg_pool2d", cu_avg_pool2d},
	{"aten::avg_pool1d", cu_avg_pool1d},
	{"aten::_adaptive_avg_pool2d", cu_adaptive_avg_pool2d},
	{"aten::adaptive_avg_pool2d", cu_adaptive_avg_pool2d},
	{"aten::adaptive_avg_pool1d", cu_adaptive_avg_pool1d},
	{"aten::hardtanh", cu_hardtanh},
	{"aten::hardtanh_", cu_hardtanh},
	{"aten::hardswish", cu_hardswish},
	{"aten::hardswish_", cu_hardswish},
	{"aten::hardsigmoid", cu_hardsigmoid},
	{"aten::hardsigmoid_", cu_hardsigmoid},
	{"aten::silu", cu_silu},
	{"aten::silu_", cu_silu},
	{"aten::sqrt", cu_sqrt},
	{"aten::rsqrt", cu_rsqrt},
	{"aten::abs", cu_abs},
	{"aten::pow.Tensor_Scalar", cu_pow},
	{"aten::pow.Tensor_Tensor", cu_pow},
	{"aten::pow.Scalar", cu_pow},
	{"aten::eq.Tensor", cu_eq},
	{"aten::eq.Scalar", cu_eq},
	{"aten::ne.Tensor", cu_ne},
	{"aten::ne.Scalar", cu_ne},
	{"aten::lt.Tensor", cu_lt},
	{"aten::lt.Scalar", cu_lt},
	{"aten::le.Tensor", cu_le},
	{"aten::le.Scalar", cu_le},
	{"aten::gt.Tensor", cu_gt},
	{"aten::gt.Scalar", cu_gt},
	{"aten::ge.Tensor", cu_ge},
	{"aten::ge.Scalar", cu_ge},
	{"aten::logical_and", cu_logical_and},
	{"aten::logical_or", cu_logical_or},
	{"aten::logical_xor", cu_logical_xor},
	{"aten::logical_not", cu_logical_not},
	{"aten::bitwise_and.Tensor", cu_bitwise_and},
	{"aten::bitwise_and.Scalar", cu_bitwise_and},
	{"aten::bitwise_or.Tensor", cu_bitwise_or},
	{"aten::bitwise_or.Scalar", cu_bitwise_or},
	{"aten::bitwise_xor.Tensor", cu_bitwise_xor},
	{"aten::bitwise_xor.Scalar", cu_bitwise_xor},
	{"aten::bitwise_not", cu_bitwise_not},
	{"aten::where.self", cu_where},
	{"aten::where.ScalarSelf", cu_where},
	{"aten::where.ScalarOther", cu_where},
	{"aten::where.Scalar", cu_where},
	{"aten::masked_fill.Scalar", cu_masked_fill},
	{"aten::masked_fill.Tensor", cu_masked_fill},
	{"aten::masked_fill_.Scalar", cu_masked_fill},
	{"aten::masked_fill_.Tensor", cu_masked_fill},
	{"aten::_to_copy", cu_to_copy},
	{"aten::div.Tensor_mode", cu_div_mode},
	{"aten::div.Scalar_mode", cu_div_mode},
	{"aten::rsub.Scalar", cu_rsub},
	{"aten::maximum", cu_maximum},
	{"aten::minimum", cu_minimum},
	{"aten::clamp", cu_clamp},
	{"aten::clamp.Tensor", cu_clamp},
	{"aten::clamp_", cu_clamp},
	{"aten::clamp_.Tensor", cu_clamp},
	{"aten::clamp_min", cu_clamp_min},
	{"aten::clamp_min.Tensor", cu_clamp_min},
	{"aten::clamp_min_", cu_clamp_min},
	{"aten::clamp_min_.Tensor", cu_clamp_min},
	{"aten::clamp_max", cu_clamp_max},
	{"aten::clamp_max.Tensor", cu_clamp_max},
	{"aten::clamp_max_", cu_clamp_max},
	{"aten::clamp_max_.Tensor", cu_clamp_max},
	{"aten::round", cu_round},
	{"aten::round_", cu_round},
	{"aten::round.decimals", cu_round_decimals},
	{"aten::round_.decimals", cu_round_decimals},
	{"aten::arange", cu_arange},
	{"aten::arange.start", cu_arange_start},
	{"aten::arange.start_step", cu_arange_start_step},
	{"aten::full", cu_full},
	{"aten::full_like", cu_full_like},
	{"aten::zeros", cu_zeros},
	{"aten::ones", cu_ones},
	{"aten::scalar_tensor", cu_scalar_tensor},
	{"aten::cumsum", cu_cumsum},
	{"aten::gather", cu_gather},
	{"aten::index.Tensor", cu_index},
};

} // namespace

extern "C" pr_err *prt_cuda_ew_typed(prt_kctx *k, int op, int n, int alpha_at)
{
	return ew_run(k, (prt_ewt_op)op, n, alpha_at);
}

extern "C" const prt_cuda_kernel *prt_cuda_nn_kernels(int *n)
{
	*n = (int)(sizeof nn_kernels / sizeof nn_kernels[0]);
	return nn_kernels;
}
