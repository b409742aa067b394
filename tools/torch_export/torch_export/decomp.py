"""decomp.py: the decomposition table the exporter runs.

torch.export gives the training IR; run_decompositions(table) functionalizes
it (buffer mutations become graph outputs named in the signature) and
rewrites the ops the table names. The table is PyTorch's core-ATen table
with three changes:
  - ops passrun has kernels for are kept whole (linear, layer_norm,
    rms_norm, squeeze.dim, softmax): core ATen would split them into ops
    without kernels (native_layer_norm's three results, rsqrt, pow, ...);
  - scaled_dot_product_attention, silu and conv2d get decompositions written
    here in ops that have kernels (PyTorch's own SDPA decomposition adds a
    "safe softmax" of eq/any/where; conv has no kernel at all, so it is
    lowered im2col-style: strided slices, cat, reshape and one addmm);
  - eval-mode dropout is the identity.
Anything else without a kernel is refused later (export.py), naming the op.
"""
import math

import torch

aten = torch.ops.aten

KEEP = [aten.linear.default, aten.layer_norm.default, aten.rms_norm.default,
        aten.squeeze.dim, aten.softmax.int]


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
          enable_gqa=False):
    if dropout_p != 0.0 or is_causal or enable_gqa:
        raise NotImplementedError("torch_export: scaled_dot_product_attention with dropout, "
                                  "is_causal or enable_gqa is not supported; pass an explicit mask")
    L, E = q.shape[-2], q.shape[-1]
    S, Ev = k.shape[-2], v.shape[-1]
    batch = list(q.shape[:-2])
    B = math.prod(batch)
    s = 1.0 / math.sqrt(E) if scale is None else scale
    q3 = aten.reshape.default(q, [B, L, E])
    k3 = aten.reshape.default(k, [B, S, E])
    v3 = aten.reshape.default(v, [B, S, Ev])
    scores = aten.bmm.default(aten.mul.Scalar(q3, s), aten.transpose.int(k3, 1, 2))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            raise NotImplementedError("torch_export: boolean attention masks are not supported "
                                      "(no kernel for where); use an additive float mask")
        scores = aten.view.default(scores, batch + [L, S])
        scores = aten.add.Tensor(scores, attn_mask)
        scores = aten.reshape.default(scores, [B, L, S])
    p = aten._softmax.default(scores, -1, False)
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
