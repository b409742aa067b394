/* device_cuda.c: the CUDA device.
 *
 * One stream per device; every copy and kernel of that device goes on it, so
 * they run in order. Host -> device copies go through pinned staging memory
 * (cudaMallocHost) with cudaMemcpyAsync: the staging buffer is reused, so a
 * copy first waits for the previous one that used it. Device -> host copies
 * wait for their stream before returning (the caller reads the data next).
 * synchronize selects the device (cudaSetDevice) and waits on its stream.
 * Every failing CUDA call becomes an error naming the call and CUDA's message.
 *
 * Built only when CMake finds the CUDA toolkit, into libpassrun_cuda.so with
 * the CUDA kernels (rt_cuda.h); cuda_backend.c opens it on first use. */
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "rt_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

typedef struct cuda_dev {
	int index;
	cudaStream_t stream;
	cublasHandle_t blas;
	void *staging;          /* pinned */
	int64_t staging_size;
	bool staging_busy;      /* an async copy may still read it */
} cuda_dev;

#define CU(call)                                                                   \
	do {                                                                       \
		cudaError_t rc_ = (call);                                          \
		if (rc_ != cudaSuccess)                                            \
			return pr_err_new("CUDA: %s failed: %s", #call,            \
					  cudaGetErrorString(rc_));                \
	} while (0)

bool prt_cuda_available(void)
{
	int n = 0;
	return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static pr_err *select_dev(prt_dev *d)
{
	cuda_dev *c = d->impl;
	CU(cudaSetDevice(c->index));
	return NULL;
}

static pr_err *cuda_alloc(prt_dev *d, int64_t bytes, void **out)
{
	pr_err *e = select_dev(d);
	if (e)
		return e;
	CU(cudaMalloc(out, (size_t)bytes));
	CU(cudaMemset(*out, 0, (size_t)bytes));
	return NULL;
}

static void cuda_free(prt_dev *d, void *p, int64_t bytes)
{
	(void)bytes;
	pr_err_free(select_dev(d));
	cudaFree(p);
}

static pr_err *cuda_sync(prt_dev *d)
{
	cuda_dev *c = d->impl;
	pr_err *e = select_dev(d);
	if (e)
		return e;
	CU(cudaStreamSynchronize(c->stream));
	c->staging_busy = false;
	return NULL;
}

/* Pinned staging of at least n bytes, free to write. */
static pr_err *staging(prt_dev *d, int64_t n)
{
	cuda_dev *c = d->impl;
	if (c->staging_busy) {
		pr_err *e = cuda_sync(d);
		if (e)
			return e;
	}
	if (c->staging_size >= n)
		return NULL;
	if (c->staging)
		cudaFreeHost(c->staging);
	c->staging = NULL;
	c->staging_size = 0;
	CU(cudaMallocHost(&c->staging, (size_t)n));
	c->staging_size = n;
	return NULL;
}

/* The device made current and a staging buffer of n bytes, for a copy. */
static pr_err *staged_copy_begin(prt_dev *d, int64_t n)
{
	pr_err *e = select_dev(d);
	return e ? e : staging(d, n);
}

static pr_err *cuda_h2d(prt_dev *d, void *dst, const void *src, int64_t n)
{
	cuda_dev *c = d->impl;
	pr_err *e = staged_copy_begin(d, n);
	if (e)
		return e;
	memcpy(c->staging, src, (size_t)n);
	CU(cudaMemcpyAsync(dst, c->staging, (size_t)n, cudaMemcpyHostToDevice, c->stream));
	c->staging_busy = true;
	return NULL;
}

static pr_err *cuda_d2h(prt_dev *d, void *dst, const void *src, int64_t n)
{
	cuda_dev *c = d->impl;
	pr_err *e = staged_copy_begin(d, n);
	if (e)
		return e;
	CU(cudaMemcpyAsync(c->staging, src, (size_t)n, cudaMemcpyDeviceToHost, c->stream));
	CU(cudaStreamSynchronize(c->stream));
	memcpy(dst, c->staging, (size_t)n);
	return NULL;
}

static pr_err *cuda_d2d(prt_dev *d, void *dst, const void *src, int64_t n)
{
	cuda_dev *c = d->impl;
	pr_err *e = select_dev(d);
	if (e)
		return e;
	CU(cudaMemcpyAsync(dst, src, (size_t)n, cudaMemcpyDeviceToDevice, c->stream));
	return NULL;
}

static void cuda_enter(prt_dev *d) { pr_err_free(select_dev(d)); }
static void cuda_leave(prt_dev *d) { (void)d; }

static bool cuda_contains(prt_dev *d, const void *p, int64_t n)
{
	(void)n;
	cuda_dev *c = d->impl;
	struct cudaPointerAttributes a;
	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		cudaGetLastError();
		return false;
	}
	return a.type == cudaMemoryTypeDevice && a.device == c->index;
}

static void cuda_destroy(prt_dev *d)
{
	cuda_dev *c = d->impl;
	pr_err_free(cuda_sync(d));
	if (c->blas)
		cublasDestroy(c->blas);
	if (c->staging)
		cudaFreeHost(c->staging);
	cudaStreamDestroy(c->stream);
	free(c);
	free(d);
}

static const prt_dev_ops cuda_ops = {
	.kind = "cuda",
	.alloc = cuda_alloc,
	.free = cuda_free,
	.h2d = cuda_h2d,
	.d2h = cuda_d2h,
	.d2d = cuda_d2d,
	.sync = cuda_sync,
	.enter = cuda_enter,
	.leave = cuda_leave,
	.contains = cuda_contains,
	.destroy = cuda_destroy,
};

pr_err *prt_cuda_new(pr_device where, prt_dev **out)
{
	int n = 0;
	CU(cudaGetDeviceCount(&n));
	int index = where.index < 0 ? 0 : where.index;
	if (index >= n)
		return pr_err_new("device cuda:%d does not exist (this machine has %d CUDA device%s)",
				  index, n, n == 1 ? "" : "s");
	CU(cudaSetDevice(index));
	cuda_dev *c = pr_xcalloc(1, sizeof *c);
	c->index = index;
	cudaError_t rc = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
	if (rc != cudaSuccess) {
		free(c);
		return pr_err_new("CUDA: cudaStreamCreate failed: %s", cudaGetErrorString(rc));
	}
	if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetStream(c->blas, c->stream) != CUBLAS_STATUS_SUCCESS) {
		cudaStreamDestroy(c->stream);
		free(c);
		return pr_err_new("cuBLAS: cublasCreate failed on cuda:%d", index);
	}
	prt_dev *d = pr_xcalloc(1, sizeof *d);
	d->ops = &cuda_ops;
	d->where = where;
	d->impl = c;
	*out = d;
	return NULL;
}

void *prt_cuda_stream(prt_dev *d) { return ((cuda_dev *)d->impl)->stream; }
void *prt_cuda_blas(prt_dev *d) { return ((cuda_dev *)d->impl)->blas; }

/* The one symbol the library exports (everything else is hidden, so these
 * names bind here, not to cuda_backend.c's wrappers of the same names). */
__attribute__((visibility("default"))) const prt_cuda_backend prt_cuda_backend_v1 = {
	.abi = PRT_CUDA_BACKEND_ABI,
	.available = prt_cuda_available,
	.dev_new = prt_cuda_new,
	.kernels = prt_cuda_kernels,
	.copy = prt_cuda_copy,
};
