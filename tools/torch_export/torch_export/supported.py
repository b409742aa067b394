"""supported.py: the ops passrun's runtime has kernels for.

The exporter emits only these (after its decompositions); anything else is
refused with a message naming the op and where it came from. The list
mirrors runtime/kernel_registry.c; tests/test_supported.py checks that every
entry here is registered there, so the list cannot claim a kernel that does
not exist (it runs without torch).
"""
import os
import re

# Typed elementwise ops: comparisons, logic, pow, where, casts, maximum,
# minimum, clamp and round (kernels_elementwise.c). All compute, so COMPUTE_OPS
# has them all; the in-place masked_fill_, clamp_ and round_ are not among them
# (SUPPORTED_OPS adds them), as add_ and mul_ are not compute ops.
TYPED_ELEMENTWISE_OPS = frozenset("""
aten::sqrt aten::rsqrt aten::abs aten::pow.Tensor_Scalar aten::pow.Tensor_Tensor
aten::pow.Scalar aten::eq.Tensor aten::eq.Scalar aten::ne.Tensor aten::ne.Scalar
aten::lt.Tensor aten::lt.Scalar aten::le.Tensor aten::le.Scalar aten::gt.Tensor
aten::gt.Scalar aten::ge.Tensor aten::ge.Scalar aten::logical_and aten::logical_or
aten::logical_xor aten::logical_not aten::bitwise_and.Tensor aten::bitwise_and.Scalar
aten::bitwise_or.Tensor aten::bitwise_or.Scalar aten::bitwise_xor.Tensor
aten::bitwise_xor.Scalar aten::bitwise_not aten::where.self aten::where.ScalarSelf
aten::where.ScalarOther aten::where.Scalar aten::masked_fill.Scalar aten::masked_fill.Tensor
aten::_to_copy aten::div.Tensor_mode aten::div.Scalar_mode aten::rsub.Scalar
aten::maximum aten::minimum aten::clamp aten::clamp.Tensor aten::clamp_min
aten::clamp_min.Tensor aten::clamp_max aten::clamp_max.Tensor aten::round aten::round.decimals
""".split())

SUPPORTED_OPS = frozenset("""
aten::add.Tensor aten::add.Scalar aten::add_.Tensor aten::add_.Scalar
aten::sub.Tensor aten::sub.Scalar aten::sub_.Tensor
aten::mul.Tensor aten::mul.Scalar aten::mul_.Tensor aten::mul_.Scalar
aten::div.Tensor aten::div.Scalar aten::div_.Tensor
aten::neg aten::relu aten::relu_ aten::sin aten::cos aten::exp aten::tanh
aten::gelu aten::sigmoid
aten::mm aten::addmm aten::linear aten::bmm
aten::_softmax aten::softmax.int aten::sum.dim_IntList aten::mean.dim
aten::layer_norm aten::rms_norm
aten::embedding aten::index_select aten::index_put_ aten::cat
aten::slice.Tensor aten::select.int aten::view aten::_unsafe_view aten::reshape
aten::permute aten::transpose.int aten::t aten::as_strided aten::expand
aten::unsqueeze aten::squeeze.dim aten::alias aten::clone aten::contiguous
aten::copy_ aten::sym_size.int
custom::accumulate custom::kv_update
""".split()) | frozenset(
    # factories, cumsum, gather, indexing, ops with several results (kernels_tensor.c)
    """
aten::arange aten::arange.start aten::arange.start_step aten::full aten::full_like
aten::zeros aten::ones aten::scalar_tensor aten::cumsum aten::gather aten::index.Tensor
aten::split.Tensor aten::split_with_sizes aten::unbind.int
""".split()) | frozenset(
    # typed elementwise ops, the in-place masked_fill_, clamps and rounds, and the metadata
    # assertion
    """
aten::masked_fill_.Scalar aten::masked_fill_.Tensor aten::_assert_tensor_metadata
aten::clamp_ aten::clamp_.Tensor aten::clamp_min_ aten::clamp_min_.Tensor
aten::clamp_max_ aten::clamp_max_.Tensor aten::round_ aten::round_.decimals
""".split()) | TYPED_ELEMENTWISE_OPS | frozenset(
    # convolutional networks (kernels_nn.c)
    """
aten::convolution aten::batch_norm aten::_native_batch_norm_legit_no_training
aten::max_pool1d aten::max_pool2d aten::max_pool2d_with_indices aten::avg_pool1d
aten::avg_pool2d aten::adaptive_avg_pool1d aten::adaptive_avg_pool2d
aten::_adaptive_avg_pool2d aten::hardtanh aten::hardtanh_ aten::hardswish
aten::hardswish_ aten::hardsigmoid aten::hardsigmoid_ aten::silu aten::silu_
""".split())

# Ops that only re-describe their argument's memory (no element is read):
# the grouped partitioner lets them join a group, never start one.
VIEW_OPS = frozenset("""
aten::slice.Tensor aten::select.int aten::view aten::_unsafe_view aten::reshape
aten::permute aten::transpose.int aten::t aten::as_strided aten::expand
aten::unsqueeze aten::squeeze.dim aten::alias aten::clone aten::contiguous
aten::split.Tensor aten::split_with_sizes aten::unbind.int
""".split())

# The default delegation rule: ops that compute (what a GPU backend takes).
COMPUTE_OPS = frozenset("""
aten::add.Tensor aten::add.Scalar aten::sub.Tensor aten::sub.Scalar
aten::mul.Tensor aten::mul.Scalar aten::div.Tensor aten::div.Scalar
aten::neg aten::relu aten::sin aten::cos aten::exp aten::tanh aten::gelu
aten::sigmoid aten::mm aten::addmm aten::linear aten::bmm aten::_softmax
aten::softmax.int aten::sum.dim_IntList aten::mean.dim aten::layer_norm
aten::rms_norm aten::cat
aten::cumsum aten::gather aten::index.Tensor
""".split()) | TYPED_ELEMENTWISE_OPS | frozenset(
    # convolutional networks (kernels_nn.c); the in-place activations stay out
    """
aten::convolution aten::batch_norm aten::_native_batch_norm_legit_no_training
aten::max_pool1d aten::max_pool2d aten::max_pool2d_with_indices aten::avg_pool1d
aten::avg_pool2d aten::adaptive_avg_pool1d aten::adaptive_avg_pool2d
aten::_adaptive_avg_pool2d aten::hardtanh aten::hardswish aten::hardsigmoid aten::silu
""".split())


def registry_ops(registry_path):
    """The op names registered in runtime/kernel_registry.c."""
    with open(registry_path, encoding="utf-8") as f:
        text = f.read()
    return set(re.findall(r'\{"([A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_.]+)"', text))


def default_registry_path():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "runtime", "kernel_registry.c"))
