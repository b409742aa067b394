/* rt_cuda.h: what the CUDA kernels (kernels_cuda.cu) need from the CUDA
 * device (device_cuda.c): its stream and cuBLAS handle. C linkage, so the .cu
 * file and the C files agree. */
#ifndef PASSRUN_RT_CUDA_H
#define PASSRUN_RT_CUDA_H

#include "rt.h"

#ifdef __cplusplus
extern "C" {
#endif

void *pr_cuda_stream(pr_dev *d);   /* cudaStream_t */
void *pr_cuda_blas(pr_dev *d);     /* cublasHandle_t */
/* A strided elementwise copy on k's device (kernels_cuda.cu). */
pr_err *pr_cuda_copy(pr_kctx *k, pr_tensor *dst, const pr_tensor *src);

#ifdef __cplusplus
}
#endif
#endif
