/* rt_cuda.h: the CUDA backend's interfaces. The backend (device_cuda.c and
 * the .cu files) is its own library, libpassrun_cuda.so, opened on first use
 * by cuda_backend.c; it exports one symbol, a pr_cuda_backend table, and
 * everything else in it is hidden. Its kernels need their device's stream and
 * cuBLAS handle. C linkage, so the .cu files and the C files agree. */
#ifndef PASSRUN_RT_CUDA_H
#define PASSRUN_RT_CUDA_H

#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table libpassrun_cuda.so exports as PR_CUDA_BACKEND_SYMBOL. */
#define PR_CUDA_BACKEND_ABI 1
#define PR_CUDA_BACKEND_SYMBOL "pr_cuda_backend_v1"
typedef struct pr_cuda_backend {
	int abi;                                      /* PR_CUDA_BACKEND_ABI */
	bool (*available)(void);                      /* a GPU is there */
	pr_err *(*dev_new)(pr_device where, pr_dev **out);
	const pr_cuda_kernel *(*kernels)(int *n);
	pr_err *(*copy)(pr_kctx *k, pr_tensor *dst, const pr_tensor *src);
} pr_cuda_backend;
/* Has the backend been loaded (by pr_cuda_available or pr_cuda_new)? */
bool pr_cuda_loaded(void);

void *pr_cuda_stream(pr_dev *d);   /* cudaStream_t */
void *pr_cuda_blas(pr_dev *d);     /* cublasHandle_t */
/* The kernels of kernels_cuda_nn.cu (pr_cuda_kernels lists them after its own). */
const pr_cuda_kernel *pr_cuda_nn_kernels(int *n);
/* Typed elementwise op `op` (a pr_ewt_op) on arguments 0..n-1, alpha at
 * alpha_at (-1: none), planned as the host plans it and run on k's device
 * (kernels_cuda_nn.cu). */
pr_err *pr_cuda_ew_typed(pr_kctx *k, int op, int n, int alpha_at);
/* A strided elementwise copy on k's device (kernels_cuda.cu). */
pr_err *pr_cuda_copy(pr_kctx *k, pr_tensor *dst, const pr_tensor *src);

#ifdef __cplusplus
}
#endif
#endif
