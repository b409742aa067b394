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

#define META PRT_KERNEL_META
const prt_kernel prt_host_kernels[] = {
	{"aten::add.Tensor", prt_k_add, NULL, 0},
	{"aten::add.Scalar", prt_k_add, NULL, 0},
	{"aten::add_.Tensor", prt_k_add, NULL, 0},
	{"aten::add_.Scalar", prt_k_add, NULL, 0},
	{"aten::sub.Tensor", prt_k_sub, NULL, 0},
	{"aten::sub.Scalar", prt_k_sub, NULL, 0},
	{"aten::sub_.Tensor", prt_k_sub, NULL, 0},
	{"aten::mul.Tensor", prt_k_mul, NULL, 0},
	{"aten::mul.Scalar", prt_k_mul, NULL, 0},
	{"aten::mul_.Tensor", prt_k_mul, NULL, 0},
	{"aten::mul_.Scalar", prt_k_mul, NULL, 0},
	{"aten::div.Tensor", prt_k_div, NULL, 0},
	{"aten::div.Scalar", prt_k_div, NULL, 0},
	{"aten::div_.Tensor", prt_k_div, NULL, 0},
	{"aten::neg", prt_k_neg, NULL, 0},
	{"aten::relu", prt_k_relu, NULL, 0},
	{"aten::relu_", prt_k_relu, NULL, 0},
	{"aten::sin", prt_k_sin, NULL, 0},
	{"aten::cos", prt_k_cos, NULL, 0},
	{"aten::exp", prt_k_exp, NULL, 0},
	{"aten::tanh", prt_k_tanh, NULL, 0},
	{"aten::gelu", prt_k_gelu, NULL, 0},
	{"aten::sigmoid", prt_k_sigmoid, NULL, 0},
	{"aten::mm", prt_k_mm, NULL, 0},
	{"aten::addmm", prt_k_addmm, NULL, 0},
	{"aten::linear", prt_k_linear, NULL, 0},
	{"aten::bmm", prt_k_bmm, NULL, 0},
	{"aten::_softmax", prt_k_softmax, NULL, 0},
	{"aten::softmax.int", prt_k_softmax, NULL, 0},
	{"aten::sum.dim_IntList", prt_k_sum_dim, NULL, 0},
	{"aten::mean.dim", prt_k_mean_dim, NULL, 0},
	{"aten::layer_norm", prt_k_layer_norm, NULL, 0},
	{"aten::rms_norm", prt_k_rms_norm, NULL, 0},
	{"aten::embedding", prt_k_embedding, NULL, 0},
	{"aten::index_select", prt_k_index_select, NULL, 0},
	{"aten::index_put_", prt_k_index_put_, NULL, 0},
	{"aten::cat", prt_k_cat, NULL, 0},
	{"aten::slice.Tensor", prt_k_slice, NULL, META},
	{"aten::select.int", prt_k_select, NULL, META},
	{"aten::view", prt_k_view, NULL, META},
	{"aten::_unsafe_view", prt_k_view, NULL, META},
	{"aten::reshape", prt_k_reshape, NULL, PRT_KERNEL_MAY_COPY},
	{"aten::permute", prt_k_permute, NULL, META},
	{"aten::transpose.int", prt_k_transpose, NULL, META},
	{"aten::t", prt_k_t, NULL, META},
	{"aten::as_strided", prt_k_as_strided, NULL, META},
	{"aten::expand", prt_k_expand, NULL, META},
	{"aten::unsqueeze", prt_k_unsqueeze, NULL, META},
	{"aten::squeeze.dim", prt_k_squeeze_dim, NULL, META},
	{"aten::alias", prt_k_alias, NULL, META},
	{"aten::clone", prt_k_clone, NULL, 0},
	{"aten::contiguous", prt_k_contiguous, NULL, PRT_KERNEL_MAY_COPY},
	{"aten::copy_", prt_k_copy_, NULL, 0},
	{"aten::sym_size.int", prt_k_sym_size, NULL, META},
	{"custom::accumulate", prt_k_accumulate, NULL, 0},
	{"custom::kv_update", prt_k_kv_update, NULL, 0},
	/* convolutional networks (kernels_nn.c) */
	{"aten::convolution", prt_k_convolution, NULL, 0},
	{"aten::batch_norm", prt_k_batch_norm, NULL, 0},
	{"aten::_native_batch_norm_legit_no_training", prt_k_native_batch_norm_legit_no_training, NULL, 0},
	{"aten::max_pool1d", prt_k_max_pool1d, NULL, 0},
	{"aten::max_pool2d", prt_k_max_pool2d, NULL, 0},
	{"aten::max_pool2d_with_indices", prt_k_max_pool2d_with_indices, NULL, 0},
	{"aten::avg_pool1d", prt_k_avg_pool1d, NULL, 0},
	{"aten::avg_pool2d", prt_k_avg_pool2d, NULL, 0},
	{"aten::adaptive_avg_pool1d", prt_k_adaptive_avg_pool1d, NULL, 0},
	{"aten::adaptive_avg_pool2d", prt_k_adaptive_avg_pool2d, NULL, 0},
	{"aten::_adaptive_avg_pool2d", prt_k_adaptive_avg_pool2d, NULL, 0},
	{"aten::hardtanh", prt_k_hardtanh, NULL, 0},
	{"aten::hardtanh_", prt_k_hardtanh, NULL, 0},
	{"aten::hardswish", prt_k_hardswish, NULL, 0},
	{"aten::hardswish_", prt_k_hardswish, NULL, 0},
	{"aten::hardsigmoid", prt_k_hardsigmoid, NULL, 0},
	{"aten::hardsigmoid_", prt_k_hardsigmoid, NULL, 0},
	{"aten::silu", prt_k_silu, NULL, 0},
	{"aten::silu_", prt_k_silu, NULL, 0},
	/* typed elementwise ops: comparisons, logic, pow, where, casts (kernels_elementwise.c) */
	{"aten::sqrt", prt_k_sqrt, NULL, 0},
	{"aten::rsqrt", prt_k_rsqrt, NULL, 0},
	{"aten::abs", prt_k_abs, NULL, 0},
	{"aten::pow.Tensor_Scalar", prt_k_pow, NULL, 0},
	{"aten::pow.Tensor_Tensor", prt_k_pow, NULL, 0},
	{"aten::pow.Scalar", prt_k_pow, NULL, 0},
	{"aten::eq.Tensor", prt_k_eq, NULL, 0},
	{"aten::eq.Scalar", prt_k_eq, NULL, 0},
	{"aten::ne.Tensor", prt_k_ne, NULL, 0},
	{"aten::ne.Scalar", prt_k_ne, NULL, 0},
	{"aten::lt.Tensor", prt_k_lt, NULL, 0},
	{"aten::lt.Scalar", prt_k_lt, NULL, 0},
	{"aten::le.Tensor", prt_k_le, NULL, 0},
	{"aten::le.Scalar", prt_k_le, NULL, 0},
	{"aten::gt.Tensor", prt_k_gt, NULL, 0},
	{"aten::gt.Scalar", prt_k_gt, NULL, 0},
	{"aten::ge.Tensor", prt_k_ge, NULL, 0},
	{"aten::ge.Scalar", prt_k_ge, NULL, 0},
	{"aten::logical_and", prt_k_logical_and, NULL, 0},
	{"aten::logical_or", prt_k_logical_or, NULL, 0},
	{"aten::logical_xor", prt_k_logical_xor, NULL, 0},
	{"aten::logical_not", prt_k_logical_not, NULL, 0},
	{"aten::bitwise_and.Tensor", prt_k_bitwise_and, NULL, 0},
	{"aten::bitwise_and.Scalar", prt_k_bitwise_and, NULL, 0},
	{"aten::bitwise_or.Tensor", prt_k_bitwise_or, NULL, 0},
	{"aten::bitwise_or.Scalar", prt_k_bitwise_or, NULL, 0},
	{"aten::bitwise_xor.Tensor", prt_k_bitwise_xor, NULL, 0},
	{"aten::bitwise_xor.Scalar", prt_k_bitwise_xor, NULL, 0},
	{"aten::bitwise_not", prt_k_bitwise_not, NULL, 0},
	{"aten::where.self", prt_k_where, NULL, 0},
	{"aten::where.ScalarSelf", prt_k_where, NULL, 0},
	{"aten::where.ScalarOther", prt_k_where, NULL, 0},
	{"aten::where.Scalar", prt_k_where, NULL, 0},
	{"aten::masked_fill.Scalar", prt_k_masked_fill, NULL, 0},
	{"aten::masked_fill.Tensor", prt_k_masked_fill, NULL, 0},
	{"aten::masked_fill_.Scalar", prt_k_masked_fill, NULL, 0},
	{"aten::masked_fill_.Tensor", prt_k_masked_fill, NULL, 0},
	{"aten::_to_copy", prt_k_to_copy, NULL, 0},
	{"aten::_assert_tensor_metadata", prt_k_assert_tensor_metadata, NULL, META},
	{"aten::div.Tensor_mode", prt_k_div_mode, NULL, 0},
	{"aten::div.Scalar_mode", prt_k_div_mode, NULL, 0},
	{"aten::rsub.Scalar", prt_k_rsub, NULL, 0},
	{"aten::maximum", prt_k_maximum, NULL, 0},
	{"aten::minimum", prt_k_minimum, NULL, 0},
	{"aten::clamp", prt_k_clamp, NULL, 0},
	{"aten::clamp.Tensor", prt_k_clamp, NULL, 0},
	{"aten::clamp_", prt_k_clamp, NULL, 0},
	{"aten::clamp_.Tensor", prt_k_clamp, NULL, 0},
	{"aten::clamp_min", prt_k_clamp_min, NULL, 0},
	{"aten::clamp_min.Tensor", prt_k_clamp_min, NULL, 0},
	{"aten::clamp_min_", prt_k_clamp_min, NULL, 0},
	{"aten::clamp_min_.Tensor", prt_k_clamp_min, NULL, 0},
	{"aten::clamp_max", prt_k_clamp_max, NULL, 0},
	{"aten::clamp_max.Tensor", prt_k_clamp_max, NULL, 0},
	{"aten::clamp_max_", prt_k_clamp_max, NULL, 0},
	{"aten::clamp_max_.Tensor", prt_k_clamp_max, NULL, 0},
	{"aten::round", prt_k_round, NULL, 0},
	{"aten::round_", prt_k_round, NULL, 0},
	{"aten::round.decimals", prt_k_round_decimals, NULL, 0},
	{"aten::round_.decimals", prt_k_round_decimals, NULL, 0},
	/* factories, cumsum, gather, indexing, ops with several results (kernels_tensor.c) */
	{"aten::arange", prt_k_arange, NULL, 0},
	{"aten::arange.start", prt_k_arange_start, NULL, 0},
	{"aten::arange.start_step", prt_k_arange_start_step, NULL, 0},
	{"aten::full", prt_k_full, NULL, 0},
	{"aten::full_like", prt_k_full_like, NULL, 0},
	{"aten::zeros", prt_k_zeros, NULL, 0},
	{"aten::ones", prt_k_ones, NULL, 0},
	{"aten::scalar_tensor", prt_k_scalar_tensor, NULL, 0},
	{"aten::cumsum", prt_k_cumsum, NULL, 0},
	{"aten::gather", prt_k_gather, NULL, 0},
	{"aten::index.Tensor", prt_k_index, NULL, 0},
	{"aten::split.Tensor", prt_k_split, NULL, META},
	{"aten::split_with_sizes", prt_k_split_with_sizes, NULL, META},
	{"aten::unbind.int", prt_k_unbind, NULL, META},
};
const int prt_n_host_kernels = (int)(sizeof prt_host_kernels / sizeof prt_host_kernels[0]);

/* The merged entry: the host kernel with its CUDA twin, if any. */
static prt_kernel merged[sizeof prt_host_kernels / sizeof prt_host_kernels[0]];
static bool merged_ready;
static bool merged_with_cuda;   /* the CUDA backend was loaded when it was merged */

static void merge(void)
{
	int nc = 0;
	merged_with_cuda = prt_cuda_loaded();
	const prt_cuda_kernel *ck = prt_cuda_kernels(&nc);
	for (int i = 0; i < prt_n_host_kernels; i++) {
		merged[i] = prt_host_kernels[i];
		for (int j = 0; j < nc; j++)
			if (strcmp(ck[j].op, merged[i].op) == 0)
				merged[i].cuda = ck[j].fn;
		if (merged_with_cuda && !merged[i].cuda && !(merged[i].flags & PRT_KERNEL_META))
			merged[i].cuda = prt_k_staged;   /* no CUDA kernel yet: staged through the host */
	}
	merged_ready = true;
}

const prt_kernel *prt_kernel_find(const char *full_name)
{
	if (!merged_ready || merged_with_cuda != prt_cuda_loaded())
		merge();   /* again once the CUDA backend has been loaded */
	for (int i = 0; i < prt_n_host_kernels; i++)
		if (strcmp(merged[i].op, full_name) == 0)
			return &merged[i];
	return NULL;
}
