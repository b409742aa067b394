/* rt_cuda.h: the CUDA backend's interfaces. The backend (device_cuda.c and
 * the .cu files) is its own library, libpassrun_cuda.so, opened on first use
 * by cuda_backend.c; it exports one symbol, a prt_cuda_backend table, and
 * everything else in it is hidden. Its kernels need their device's stream and
 * cuBLAS handle. C linkage, so the .cu files and the C files agree. */
#ifndef PASSRUN_RT_CUDA_H
#define PASSRUN_RT_CUDA_H

#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table libpassrun_cuda.so exports as PRT_CUDA_BACKEND_SYMBOL. */
#define PRT_CUDA_BACKEND_ABI 1
#define PRT_CUDA_BACKEND_SYMBOL "prt_cuda_backend_v1"
typedef struct prt_cuda_backend {
	int abi;                                      /* PRT_CUDA_BACKEND_ABI */
	bool (*available)(void);                      /* a GPU is there */
	pr_err *(*dev_new)(pr_device where, prt_dev **out);
	const prt_cuda_kernel *(*kernels)(int *n);
	pr_err *(*copy)(prt_kctx *k, prt_tensor *dst, const prt_tensor *src);
} prt_cuda_backend;
/* Has the backend been loaded (by prt_cuda_available or prt_cuda_new)? */
bool prt_cuda_loaded(void);

void *prt_cuda_stream(prt_dev *d);   /* cudaStream_t */
void *prt_cuda_blas(prt_dev *d);     /* cublasHandle_t */
/* The kernels of kernels_cuda_nn.cu (prt_cuda_kernels lists them after its own). */
const prt_cuda_kernel *prt_cuda_nn_kernels(int *n);
/* Typed elementwise op `op` (a prt_ewt_op) on arguments 0..n-1, alpha at
 * alpha_at (-1: none), planned as the host plans it and run on k's device
 * (kernels_cuda_nn.cu). */
pr_err *prt_cuda_ew_typed(prt_kctx *k, int op, int n, int alpha_at);
/* A strided elementwise copy on k's device (kernels_cuda.cu). */
pr_err *prt_cuda_copy(prt_kctx *k, prt_tensor *dst, const prt_tensor *src);

#ifdef __cplusplus
}
#endif
#endif
