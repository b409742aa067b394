"""decomp.py: the decomposition table the exporter runs.

torch.export gives the training IR; run_decompositions(table) functionalizes
it (buffer mutations become graph outputs named in the signature) and
rewrites the ops the table names. The table is PyTorch's core-ATen table
with these changes:
  - ops passrun has kernels for are kept whole (linear, layer_norm,
    rms_norm, squeeze.dim, softmax, hardswish, hardsigmoid, silu): core
    ATen would split them into ops without kernels (native_layer_norm's
    three results, rsqrt, pow, clamp, ...);
  - convolutions are left to core ATen, which writes conv1d, conv2d and
    conv_transpose as aten::convolution: the runtime has that kernel;
  - scaled_dot_product_attention gets a decomposition written
    here in ops that have kernels (PyTorch's own SDPA decomposition makes its
    "safe softmax" of eq/any/where; ours counts a row's finite scores with
    sum and gt instead, and builds is_causal's mask from arange and ge);
  - eval-mode dropout is the identity.
After the decompositions, single_result_forms() writes an op with several
results of which only the first is read as the single-result op that
computes it (eval-mode batch norm as batch_norm, max_pool2d_with_indices as
max_pool2d): one node instead of a tuple, getitems and unread tensors.
Anything else without a kernel is refused later (export.py), naming the op.
"""
import math
import operator

import torch

aten = torch.ops.aten

KEEP = [aten.linear.default, aten.layer_norm.default, aten.rms_norm.default,
        aten.squeeze.dim, aten.softmax.int,
        aten.hardswish.default, aten.hardsigmoid.default, aten.silu.default]
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


def _dropout(x, p, train):
    if train and p > 0:
        raise NotImplementedError("torch_export: training-mode dropout is not supported; "
                                  "export the module in eval()")
    return aten.alias.default(x)


# op with several results -> (the single-result op computing its first result
# from the same arguments by name, values for the arguments the source lacks)
SINGLE_RESULT = {
    aten._native_batch_norm_legit_no_training.default:
        (aten.batch_norm.default, {"training": False, "cudnn_enabled": True}),
    aten.max_pool2d_with_indices.default: (aten.max_pool2d.default, {}),
}


def _single_result_args(n, op, extra):
    given = dict(zip((a.name for a in n.target._schema.arguments), n.args), **n.kwargs)
    args = []
    for a in op._schema.arguments:
        if a.name in given:
            args.append(given[a.name])
        elif a.name in extra:
            args.append(extra[a.name])
        else:
            args.append(a.default_value)
    return tuple(args)


def single_result_forms(gm):
    """Rewrites, in place, each call of a SINGLE_RESULT op whose readers are
    all getitem 0 as the single-result op; returns how many."""
    graph, done = gm.graph, 0
    for n in list(graph.nodes):
        if n.op != "call_function" or n.target not in SINGLE_RESULT or not n.users:
            continue
        if any(u.target is not operator.getitem or u.args[1] != 0 for u in n.users):
            continue
        op, extra = SINGLE_RESULT[n.target]
        with graph.inserting_before(n):
            m = graph.call_function(op, _single_result_args(n, op, extra))
        m.meta = dict(n.meta, val=n.meta["val"][0])
        for u in list(n.users):
            u.replace_all_uses_with(m)
            graph.erase_node(u)
        graph.erase_node(n)
        done += 1
    if done:
        gm.recompile()
    return done


def table():
    t = torch.export.default_decompositions()
    for op in KEEP:
        t.pop(op, None)
    t[aten.scaled_dot_product_attention.default] = _sdpa
    t[aten.dropout.default] = _dropout
    return t
