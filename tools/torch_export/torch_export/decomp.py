"""decomp.py: the decomposition table the exporter runs.

torch.export gives the training IR; run_decompositions(table) functionalizes
it (buffer mutations become graph outputs named in the signature) and
rewrites the ops the table names. The table is PyTorch's core-ATen table
with three changes:
  - ops passrun has kernels for are kept whole (linear, layer_norm,
    rms_norm, squeeze.dim, softmax): core ATen would split them into ops
    without kernels (native_layer_norm's three results, rsqrt, pow, ...);
  - scaled_dot_product_attention, silu and conv2d get decompositions written
    here in ops that have kernels (PyTorch's own SDPA decomposition makes its
    "safe softmax" of eq/any/where; ours counts a row's finite scores with
    sum and gt instead, and builds is_causal's mask from arange and ge; conv has no kernel at all, so it is
    lowered im2col-style: strided slices, cat, reshape and one addmm);
  - eval-mode dropout is the identity.
Anything else without a kernel is refused later (export.py), naming the op.
"""
import math

import torch

aten = torch.ops.aten

KEEP = [aten.linear.default, aten.layer_norm.default, aten.rms_norm.default,
        aten.squeeze.dim, aten.softmax.int]
# rsub.Scalar has a kernel; core ATen writes `1 - x` as sub.Tensor(1, x), a
# number where the schema says Tensor
KEEP += [aten.rsub.Scalar]


def _sdpa_kv_heads(t, hq, batch):
    """k or v seen with q's heads and batch dims: grouped-query attention
    (enable_gqa, fewer heads in k and v) repeats each kv head hq/hkv times,
    as repeat_interleave on dim -3 does; then batch dims broadcast."""
    shape = list(t.shape)
    if len(shape) >= 3 and shape[-3] != hq and hq % shape[-3] == 0:
        g, hkv = hq // shape[-3], shape[-3]
        t = aten.unsqueeze.default(t, len(shape) - 2)                # [..., hkv, 1, S, E]
        t = aten.expand.default(t, shape[:-3] + [hkv, g] + shape[-2:])
        t = aten.reshape.default(t, shape[:-3] + [hkv * g] + shape[-2:])
        shape = list(t.shape)
    if shape[:-2] != batch:
        t = aten.expand.default(t, batch + shape[-2:])
    return t


def _sdpa_causal(L, S):
    """is_causal's mask, aligned top-left as PyTorch's: query i sees keys j <= i."""
    i = aten.unsqueeze.default(aten.arange.default(L, dtype=torch.int64), 1)   # [L, 1]
    j = aten.arange.default(S, dtype=torch.int64)                              # [S]
    return aten.ge.Tensor(i, j)                                                # bool [L, S]


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
          enable_gqa=False):
    """PyTorch's math attention in bmm, softmax and where. A bool mask keeps
    the scores where it is true (-inf elsewhere), a float mask is added,
    is_causal adds the causal mask. Rows left with no finite score give 0,
    as PyTorch's safe softmax does (a plain softmax would give NaN): where a
    mask can empty a row, the row's count of finite scores picks the result."""
    if dropout_p != 0.0:
        raise NotImplementedError("torch_export: scaled_dot_product_attention with dropout "
                                  "is not supported; export the module in eval()")
    if is_causal and attn_mask is not None:
        raise NotImplementedError("torch_export: scaled_dot_product_attention with both "
                                  "attn_mask and is_causal (PyTorch refuses it too)")
    L, E = q.shape[-2], q.shape[-1]
    S, Ev = k.shape[-2], v.shape[-1]
    batch = list(q.shape[:-2])
    k = _sdpa_kv_heads(k, q.shape[-3] if q.dim() >= 3 else 1, batch)
    v = _sdpa_kv_heads(v, q.shape[-3] if q.dim() >= 3 else 1, batch)
    B = math.prod(batch)
    s = 1.0 / math.sqrt(E) if scale is None else scale
    q3 = aten.reshape.default(q, [B, L, E])
    k3 = aten.reshape.default(k, [B, S, E])
    v3 = aten.reshape.default(v, [B, S, Ev])
    scores = aten.bmm.default(aten.mul.Scalar(q3, s), aten.transpose.int(k3, 1, 2))
    keep = _sdpa_causal(L, S) if is_causal else None
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        keep = attn_mask
    if keep is not None or attn_mask is not None:
        scores = aten.view.default(scores, batch + [L, S])
        if keep is not None:
            ninf = aten.scalar_tensor.default(float("-inf"), dtype=scores.dtype)
            scores = aten.where.self(keep, scores, ninf)
        else:
            scores = aten.add.Tensor(scores, attn_mask)
        scores = aten.reshape.default(scores, [B, L, S])
    p = aten._softmax.default(scores, -1, False)
    if attn_mask is not None:
        finite = aten.gt.Scalar(scores, float("-inf"))
        n = aten.sum.dim_IntList(finite, [-1], True, dtype=torch.float32)
        zero = aten.scalar_tensor.default(0.0, dtype=p.dtype)
        p = aten.where.self(aten.gt.Scalar(n, 0.0), p, zero)
    out = aten.bmm.default(p, v3)
    return aten.view.default(out, batch + [L, Ev])


def _silu(x):
    return aten.mul.Tensor(x, aten.sigmoid.default(x))


def _pair(v):
    return list(v) * 2 if len(v) == 1 else list(v)


def _conv2d(x, w, b=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    if isinstance(padding[0], str) or any(padding) or any(d != 1 for d in dilation) or groups != 1:
        raise NotImplementedError(
            "torch_export: conv2d is lowered im2col-style only with padding=0, dilation=1, "
            "groups=1 (passrun's runtime has no conv or pad kernel)")
    N, C, H, W = x.shape
    O, _, KH, KW = w.shape
    sh, sw = stride
    Ho, Wo = (H - KH) // sh + 1, (W - KW) // sw + 1
    cols = []
    for i in range(KH):
        for j in range(KW):
            p = aten.slice.Tensor(x, 2, i, i + sh * (Ho - 1) + 1, sh)
            p = aten.slice.Tensor(p, 3, j, j + sw * (Wo - 1) + 1, sw)
            cols.append(aten.unsqueeze.default(p, 2))
    c = aten.cat.default(cols, 2)                           # [N, C, KH*KW, Ho, Wo]
    c = aten.reshape.default(c, [N, C * KH * KW, Ho * Wo])   # cat keeps channels-last
    c = aten.permute.default(c, [0, 2, 1])
    c = aten.reshape.default(c, [N * Ho * Wo, C * KH * KW])
    wm = aten.reshape.default(w, [O, C * KH * KW])          # copies a channels-last weight
    if b is None:
        y = aten.mm.default(c, aten.t.default(wm))
    else:
        y = aten.addmm.default(b, c, aten.t.default(wm))    # [N*Ho*Wo, O]
    y = aten.view.default(y, [N, Ho, Wo, O])
    return aten.permute.default(y, [0, 3, 1, 2])            # NCHW, channels-last strides


def _dropout(x, p, train):
    if train and p > 0:
        raise NotImplementedError("torch_export: training-mode dropout is not supported; "
                                  "export the module in eval()")
    return aten.alias.default(x)


def table():
    t = torch.export.default_decompositions()
    for op in KEEP:
        t.pop(op, None)
    t[aten.scaled_dot_product_attention.default] = _sdpa
    t[aten.silu.default] = _silu
    t[aten.conv2d.default] = _conv2d
    t[aten.dropout.default] = _dropout
    return t
