/* kernels.h: the host kernels, one function per op, registered by full name
 * in kernel_registry.c. Each takes a pr_kctx (rt.h): positional arguments as
 * the program wrote them, the result slot, and the device it runs on. */
#ifndef PASSRUN_KERNELS_H
#define PASSRUN_KERNELS_H

#include "rt.h"

#define PR_KERNELS(X)                                                         \
	X(add) X(sub) X(mul) X(div) X(neg) X(relu) X(sin) X(cos) X(exp)      \
	X(tanh) X(gelu) X(sigmoid) X(mm) X(addmm) X(linear) X(bmm)           \
	X(softmax) X(sum_dim) X(mean_dim) X(layer_norm) X(rms_norm)          \
	X(embedding) X(index_select) X(index_put_) X(cat) X(slice) X(select) \
	X(view) X(reshape) X(permute) X(transpose) X(t) X(as_strided)        \
	X(expand) X(unsqueeze) X(squeeze_dim) X(clone) X(contiguous)          \
	X(copy_) X(sym_size) X(accumulate) X(kv_update) X(alias)

#define PR_DECLARE_KERNEL(name) pr_err *pr_k_##name(pr_kctx *k);
PR_KERNELS(PR_DECLARE_KERNEL)

/* Shared by the shape kernels and the executor: the view of t with shape
 * `shape` (rank n), or false when t's strides cannot express it. */
bool pr_view_strides(const pr_tensor *t, int n, const int64_t *shape, int64_t *strides);
/* Normalizes a possibly negative dim against rank; -1 when out of range. */
int pr_dim(int64_t d, int rank);

#endif
