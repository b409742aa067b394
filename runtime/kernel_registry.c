/* kernel_registry.c: op full name -> kernels (host, and CUDA once its backend is loaded).
 *
 * The executor looks every op up here when it loads a program, so a program
 * with an op that has no kernel is refused at load, naming the op. Several
 * overloads share one kernel: the kernel reads its arguments by position and
 * the schema's defaults fill the rest (add.Tensor and add.Scalar differ only
 * in whether argument 1 is a tensor or a number). */
#include <string.h>

#include "kernels.h"
#include "rt_cuda.h"

#define META PR_KERNEL_META
const pr_kernel pr_host_kernels[] = {
	{"aten::add.Tensor", pr_k_add, NULL, 0},
	{"aten::add.Scalar", pr_k_add, NULL, 0},
	{"aten::add_.Tensor", pr_k_add, NULL, 0},
	{"aten::add_.Scalar", pr_k_add, NULL, 0},
	{"aten::sub.Tensor", pr_k_sub, NULL, 0},
	{"aten::sub.Scalar", pr_k_sub, NULL, 0},
	{"aten::sub_.Tensor", pr_k_sub, NULL, 0},
	{"aten::mul.Tensor", pr_k_mul, NULL, 0},
	{"aten::mul.Scalar", pr_k_mul, NULL, 0},
	{"aten::mul_.Tensor", pr_k_mul, NULL, 0},
	{"aten::mul_.Scalar", pr_k_mul, NULL, 0},
	{"aten::div.Tensor", pr_k_div, NULL, 0},
	{"aten::div.Scalar", pr_k_div, NULL, 0},
	{"aten::div_.Tensor", pr_k_div, NULL, 0},
	{"aten::neg", pr_k_neg, NULL, 0},
	{"aten::relu", pr_k_relu, NULL, 0},
	{"aten::relu_", pr_k_relu, NULL, 0},
	{"aten::sin", pr_k_sin, NULL, 0},
	{"aten::cos", pr_k_cos, NULL, 0},
	{"aten::exp", pr_k_exp, NULL, 0},
	{"aten::tanh", pr_k_tanh, NULL, 0},
	{"aten::gelu", pr_k_gelu, NULL, 0},
	{"aten::sigmoid", pr_k_sigmoid, NULL, 0},
	{"aten::mm", pr_k_mm, NULL, 0},
	{"aten::addmm", pr_k_addmm, NULL, 0},
	{"aten::linear", pr_k_linear, NULL, 0},
	{"aten::bmm", pr_k_bmm, NULL, 0},
	{"aten::_softmax", pr_k_softmax, NULL, 0},
	{"aten::softmax.int", pr_k_softmax, NULL, 0},
	{"aten::sum.dim_IntList", pr_k_sum_dim, NULL, 0},
	{"aten::mean.dim", pr_k_mean_dim, NULL, 0},
	{"aten::layer_norm", pr_k_layer_norm, NULL, 0},
	{"aten::rms_norm", pr_k_rms_norm, NULL, 0},
	{"aten::embedding", pr_k_embedding, NULL, 0},
	{"aten::index_select", pr_k_index_select, NULL, 0},
	{"aten::index_put_", pr_k_index_put_, NULL, 0},
	{"aten::cat", pr_k_cat, NULL, 0},
	{"aten::slice.Tensor", pr_k_slice, NULL, META},
	{"aten::select.int", pr_k_select, NULL, META},
	{"aten::view", pr_k_view, NULL, META},
	{"aten::_unsafe_view", pr_k_view, NULL, META},
	{"aten::reshape", pr_k_reshape, NULL, PR_KERNEL_MAY_COPY},
	{"aten::permute", pr_k_permute, NULL, META},
	{"aten::transpose.int", pr_k_transpose, NULL, META},
	{"aten::t", pr_k_t, NULL, META},
	{"aten::as_strided", pr_k_as_strided, NULL, META},
	{"aten::expand", pr_k_expand, NULL, META},
	{"aten::unsqueeze", pr_k_unsqueeze, NULL, META},
	{"aten::squeeze.dim", pr_k_squeeze_dim, NULL, META},
	{"aten::alias", pr_k_alias, NULL, META},
	{"aten::clone", pr_k_clone, NULL, 0},
	{"aten::contiguous", pr_k_contiguous, NULL, PR_KERNEL_MAY_COPY},
	{"aten::copy_", pr_k_copy_, NULL, 0},
	{"aten::sym_size.int", pr_k_sym_size, NULL, META},
	{"custom::accumulate", pr_k_accumulate, NULL, 0},
	{"custom::kv_update", pr_k_kv_update, NULL, 0},
	/* convolutional networks (kernels_nn.c) */
	{"aten::convolution", pr_k_convolution, NULL, 0},
	{"aten::batch_norm", pr_k_batch_norm, NULL, 0},
	{"aten::_native_batch_norm_legit_no_training", pr_k_native_batch_norm_legit_no_training, NULL, 0},
	{"aten::max_pool1d", pr_k_max_pool1d, NULL, 0},
	{"aten::max_pool2d", pr_k_max_pool2d, NULL, 0},
	{"aten::max_pool2d_with_indices", pr_k_max_pool2d_with_indices, NULL, 0},
	{"aten::avg_pool1d", pr_k_avg_pool1d, NULL, 0},
	{"aten::avg_pool2d", pr_k_avg_pool2d, NULL, 0},
	{"aten::adaptive_avg_pool1d", pr_k_adaptive_avg_pool1d, NULL, 0},
	{"aten::adaptive_avg_pool2d", pr_k_adaptive_avg_pool2d, NULL, 0},
	{"aten::_adaptive_avg_pool2d", pr_k_adaptive_avg_pool2d, NULL, 0},
	{"aten::hardtanh", pr_k_hardtanh, NULL, 0},
	{"aten::hardtanh_", pr_k_hardtanh, NULL, 0},
	{"aten::hardswish", pr_k_hardswish, NULL, 0},
	{"aten::hardswish_", pr_k_hardswish, NULL, 0},
	{"aten::hardsigmoid", pr_k_hardsigmoid, NULL, 0},
	{"aten::hardsigmoid_", pr_k_hardsigmoid, NULL, 0},
	{"aten::silu", pr_k_silu, NULL, 0},
	{"aten::silu_", pr_k_silu, NULL, 0},
	/* typed elementwise ops: comparisons, logic, pow, where, casts (kernels_elementwise.c) */
	{"aten::sqrt", pr_k_sqrt, NULL, 0},
	{"aten::rsqrt", pr_k_rsqrt, NULL, 0},
	{"aten::abs", pr_k_abs, NULL, 0},
	{"aten::pow.Tensor_Scalar", pr_k_pow, NULL, 0},
	{"aten::pow.Tensor_Tensor", pr_k_pow, NULL, 0},
	{"aten::pow.Scalar", pr_k_pow, NULL, 0},
	{"aten::eq.Tensor", pr_k_eq, NULL, 0},
	{"aten::eq.Scalar", pr_k_eq, NULL, 0},
	{"aten::ne.Tensor", pr_k_ne, NULL, 0},
	{"aten::ne.Scalar", pr_k_ne, NULL, 0},
	{"aten::lt.Tensor", pr_k_lt, NULL, 0},
	{"aten::lt.Scalar", pr_k_lt, NULL, 0},
	{"aten::le.Tensor", pr_k_le, NULL, 0},
	{"aten::le.Scalar", pr_k_le, NULL, 0},
	{"aten::gt.Tensor", pr_k_gt, NULL, 0},
	{"aten::gt.Scalar", pr_k_gt, NULL, 0},
	{"aten::ge.Tensor", pr_k_ge, NULL, 0},
	{"aten::ge.Scalar", pr_k_ge, NULL, 0},
	{"aten::logical_and", pr_k_logical_and, NULL, 0},
	{"aten::logical_or", pr_k_logical_or, NULL, 0},
	{"aten::logical_xor", pr_k_logical_xor, NULL, 0},
	{"aten::logical_not", pr_k_logical_not, NULL, 0},
	{"aten::bitwise_and.Tensor", pr_k_bitwise_and, NULL, 0},
	{"aten::bitwise_and.Scalar", pr_k_bitwise_and, NULL, 0},
	{"aten::bitwise_or.Tensor", pr_k_bitwise_or, NULL, 0},
	{"aten::bitwise_or.Scalar", pr_k_bitwise_or, NULL, 0},
	{"aten::bitwise_xor.Tensor", pr_k_bitwise_xor, NULL, 0},
	{"aten::bitwise_xor.Scalar", pr_k_bitwise_xor, NULL, 0},
	{"aten::bitwise_not", pr_k_bitwise_not, NULL, 0},
	{"aten::where.self", pr_k_where, NULL, 0},
	{"aten::where.ScalarSelf", pr_k_where, NULL, 0},
	{"aten::where.ScalarOther", pr_k_where, NULL, 0},
	{"aten::where.Scalar", pr_k_where, NULL, 0},
	{"aten::masked_fill.Scalar", pr_k_masked_fill, NULL, 0},
	{"aten::masked_fill.Tensor", pr_k_masked_fill, NULL, 0},
	{"aten::masked_fill_.Scalar", pr_k_masked_fill, NULL, 0},
	{"aten::masked_fill_.Tensor", pr_k_masked_fill, NULL, 0},
	{"aten::_to_copy", pr_k_to_copy, NULL, 0},
	{"aten::_assert_tensor_metadata", pr_k_assert_tensor_metadata, NULL, META},
	{"aten::div.Tensor_mode", pr_k_div_mode, NULL, 0},
	{"aten::div.Scalar_mode", pr_k_div_mode, NULL, 0},
	{"aten::rsub.Scalar", pr_k_rsub, NULL, 0},
	/* factories, cumsum, gather, indexing, ops with several results (kernels_tensor.c) */
	{"aten::arange", pr_k_arange, NULL, 0},
	{"aten::arange.start", pr_k_arange_start, NULL, 0},
	{"aten::arange.start_step", pr_k_arange_start_step, NULL, 0},
	{"aten::full", pr_k_full, NULL, 0},
	{"aten::full_like", pr_k_full_like, NULL, 0},
	{"aten::zeros", pr_k_zeros, NULL, 0},
	{"aten::ones", pr_k_ones, NULL, 0},
	{"aten::scalar_tensor", pr_k_scalar_tensor, NULL, 0},
	{"aten::cumsum", pr_k_cumsum, NULL, 0},
	{"aten::gather", pr_k_gather, NULL, 0},
	{"aten::index.Tensor", pr_k_index, NULL, 0},
	{"aten::split.Tensor", pr_k_split, NULL, META},
	{"aten::split_with_sizes", pr_k_split_with_sizes, NULL, META},
	{"aten::unbind.int", pr_k_unbind, NULL, META},
};
const int pr_n_host_kernels = (int)(sizeof pr_host_kernels / sizeof pr_host_kernels[0]);

/* The merged entry: the host kernel with its CUDA twin, if any. */
static pr_kernel merged[sizeof pr_host_kernels / sizeof pr_host_kernels[0]];
static bool merged_ready;
static bool merged_with_cuda;   /* the CUDA backend was loaded when it was merged */

static void merge(void)
{
	int nc = 0;
	merged_with_cuda = pr_cuda_loaded();
	const pr_cuda_kernel *ck = pr_cuda_kernels(&nc);
	for (int i = 0; i < pr_n_host_kernels; i++) {
		merged[i] = pr_host_kernels[i];
		for (int j = 0; j < nc; j++)
			if (strcmp(ck[j].op, merged[i].op) == 0)
				merged[i].cuda = ck[j].fn;
		if (merged_with_cuda && !merged[i].cuda && !(merged[i].flags & PR_KERNEL_META))
			merged[i].cuda = pr_k_staged;   /* no CUDA kernel yet: staged through the host */
	}
	merged_ready = true;
}

const pr_kernel *pr_kernel_find(const char *full_name)
{
	if (!merged_ready || merged_with_cuda != pr_cuda_loaded())
		merge();   /* again once the CUDA backend has been loaded */
	for (int i = 0; i < pr_n_host_kernels; i++)
		if (strcmp(merged[i].op, full_name) == 0)
			return &merged[i];
	return NULL;
}
