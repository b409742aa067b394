#!/usr/bin/env python3
"""gen_decoder.py: write a decoder-like program (.pg text) of exactly N nodes.

    gen_decoder.py --nodes N [--seed S] [--unique-delegates] [-o FILE]

The shape the placement and planning benchmarks need (issues 4 and 5), as a
partitioned Llama-style decoder step would look:

  - many delegate calls on cuda:0 per layer (attention norm, q/k/v
    projections, attention, output projection, MLP), their weights parameters
    outside the delegates;
  - host ops writing between them: custom::kv_update writes each layer's KV
    caches (mutable buffers, written back at the end) with the k/v delegate
    outputs, and the attention residual is written in place on the host into
    the output projection's result (aten::add_ or custom::accumulate) before
    the MLP delegate reads it;
  - user inputs read by several delegates: "attn_mask" is read by every
    layer's attention delegate, so it has one reader per layer;
  - one delegate output (the normed hidden state) read by three delegates.

The method has exactly N nodes (inputs, ops, delegate calls, getitems and the
return all count): 9 fixed nodes, 28 per layer, and up to 27 host ops that
scale the logits to make up the rest. N must be at least 9.

Delegate definitions are shared by all layers unless --unique-delegates gives
each layer its own (as ExecuTorch's lowered modules are), so a 1,000,000-node
program stays a few tens of megabytes. Output is streamed: memory does not
grow with N. The same seed always gives the same bytes; the seed picks the
weights' data seeds, each layer's cache position and its residual op.
Python 3 standard library only.
"""
import argparse
import random
import sys

FIXED_NODES = 9    # tokens, attn_mask, tok_emb, final_norm, out_w, embedding, head call+getitem, return
LAYER_NODES = 28   # 11 inputs + 17 statements, see write_layer
D, FFN, VOCAB, MAX_SEQ = 4, 8, 8, 4

SCHEMAS = """\
op aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor
op aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor
op aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
op aten::t(Tensor(a) self) -> Tensor(a)
op aten::mm(Tensor self, Tensor mat2) -> Tensor
op aten::mul.Scalar(Tensor self, Scalar other) -> Tensor
op aten::mul.Tensor(Tensor self, Tensor other) -> Tensor
op aten::div.Scalar(Tensor self, Scalar other) -> Tensor
op aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
op aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
op aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor
op aten::sigmoid(Tensor self) -> Tensor
op custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ()
op custom::accumulate(Tensor(a!) x, Tensor y) -> ()
"""

H = "f32[1,%d]" % D


def delegate(name, inputs, body, result):
    """One cuda:0 delegate definition: inputs are (name, type) pairs."""
    lines = ['delegate @%s backend="CudaBackend" target_device="cuda:0" {' % name]
    lines += ["  %%%s: %s = input" % (n, t) for n, t in inputs]
    lines += ["  " + s for s in body]
    lines += ["  return %" + result, "}", ""]
    return "\n".join(lines) + "\n"


def layer_delegates(p):
    """The delegate definitions one layer calls, named with prefix p."""
    w = "f32[%d,%d]" % (D, D)
    out = [delegate(p + "attn_norm", [("x", H), ("w", "f32[%d]" % D)],
                    ["%%n: %s = aten::rms_norm(%%x, [%d], %%w, 0.00001)" % (H, D)], "n")]
    for proj in ("q", "k", "v", "o"):
        out.append(delegate(p + proj + "_proj", [("x", H), ("w", w)],
                            ["%%y: %s = aten::linear(%%x, %%w)" % H], "y"))
    c = "f32[%d,%d]" % (MAX_SEQ, D)
    s = "f32[1,%d]" % MAX_SEQ
    out.append(delegate(p + "attention",
                        [("q", H), ("k", c), ("v", c), ("mask", s)],
                        ["%%kt: f32[%d,%d]{strides=[1,%d]} = aten::t(%%k)" % (D, MAX_SEQ, D),
                         "%%s: %s = aten::mm(%%q, %%kt)" % s,
                         "%%ss: %s = aten::mul.Scalar(%%s, 0.5)" % s,
                         "%%sm: %s = aten::add.Tensor(%%ss, %%mask)" % s,
                         "%%p: %s = aten::_softmax(%%sm, 1, false)" % s,
                         "%%o: %s = aten::mm(%%p, %%v)" % H], "o"))
    g = "f32[1,%d]" % FFN
    out.append(delegate(p + "mlp",
                        [("x", H), ("nw", "f32[%d]" % D), ("w1", "f32[%d,%d]" % (FFN, D)),
                         ("w3", "f32[%d,%d]" % (FFN, D)), ("w2", "f32[%d,%d]" % (D, FFN))],
                        ["%%n: %s = aten::rms_norm(%%x, [%d], %%nw, 0.00001)" % (H, D),
                         "%%g: %s = aten::linear(%%n, %%w1)" % g,
                         "%%sg: %s = aten::sigmoid(%%g)" % g,
                         "%%act: %s = aten::mul.Tensor(%%g, %%sg)" % g,
                         "%%u: %s = aten::linear(%%n, %%w3)" % g,
                         "%%gu: %s = aten::mul.Tensor(%%act, %%u)" % g,
                         "%%down: %s = aten::linear(%%gu, %%w2)" % H,
                         "%%y: %s = aten::add.Tensor(%%x, %%down)" % H], "y"))
    return "".join(out)


def head_delegate():
    logits = "f32[1,%d]" % VOCAB
    return delegate("head", [("x", H), ("nw", "f32[%d]" % D), ("w", "f32[%d,%d]" % (VOCAB, D))],
                    ["%%n: %s = aten::rms_norm(%%x, [%d], %%nw, 0.00001)" % (H, D),
                     "%%logits: %s = aten::linear(%%n, %%w)" % logits], "logits")


class Seeds:
    """Data seeds for the weights: distinct, and all derived from --seed."""

    def __init__(self, rng):
        self.next = rng.randrange(1, 1 << 30)

    def take(self):
        self.next += 1
        return self.next


def layer_inputs(L, seeds):
    """The 11 placeholders of layer L."""
    p, P = "l%d_" % L, "layers.%d." % L
    w = "f32[%d,%d]" % (D, D)
    c = "f32[%d,%d]" % (MAX_SEQ, D)
    rows = ['  %%%sattn_norm: f32[%d] = input parameter "%sattention_norm.weight" data=ones' % (p, D, P)]
    for name in ("wq", "wk", "wv", "wo"):
        rows.append('  %%%s%s: %s = input parameter "%sattention.%s.weight" data=random(%d)'
                    % (p, name, w, P, name, seeds.take()))
    rows.append('  %%%sk_cache: %s = input buffer "%sattention.k_cache" data=zeros' % (p, c, P))
    rows.append('  %%%sv_cache: %s = input buffer "%sattention.v_cache" data=zeros' % (p, c, P))
    rows.append('  %%%sffn_norm: f32[%d] = input parameter "%sffn_norm.weight" data=ones' % (p, D, P))
    for name, shape in (("w1", (FFN, D)), ("w3", (FFN, D)), ("w2", (D, FFN))):
        rows.append('  %%%s%s: f32[%d,%d] = input parameter "%sfeed_forward.%s.weight" data=random(%d)'
                    % (p, name, shape[0], shape[1], P, name, seeds.take()))
    return "\n".join(rows) + "\n"


def layer_body(L, h, dp, rng):
    """The 17 statements of layer L reading hidden state %h; returns (text, new h).
    dp is the delegate-name prefix (shared or per layer)."""
    p = "l%d_" % L
    pos = rng.randrange(MAX_SEQ)
    rows = ["  %%%sdn: (%s) = delegate @%sattn_norm(%%%s, %%%sattn_norm)" % (p, H, dp, h, p),
            "  %%%sn: %s = getitem %%%sdn, 0" % (p, H, p)]
    for proj in ("q", "k", "v"):
        rows.append("  %%%sd%s: (%s) = delegate @%s%s_proj(%%%sn, %%%sw%s)" % (p, proj, H, dp, proj, p, p, proj))
        rows.append("  %%%s%s: %s = getitem %%%sd%s, 0" % (p, proj, H, p, proj))
    rows.append("  custom::kv_update(%%%sk_cache, %%%sk, %d)" % (p, p, pos))
    rows.append("  custom::kv_update(%%%sv_cache, %%%sv, %d)" % (p, p, pos))
    rows.append("  %%%sda: (%s) = delegate @%sattention(%%%sq, %%%sk_cache, %%%sv_cache, %%mask)" % (p, H, dp, p, p, p))
    rows.append("  %%%sattn: %s = getitem %%%sda, 0" % (p, H, p))
    rows.append("  %%%sdo: (%s) = delegate @%so_proj(%%%sattn, %%%swo)" % (p, H, dp, p, p))
    rows.append("  %%%so: %s = getitem %%%sdo, 0" % (p, H, p))
    if rng.random() < 0.5:
        rows.append("  %%%sres: %s = aten::add_.Tensor(%%%so, %%%s)" % (p, H, p, h))
    else:
        rows.append("  custom::accumulate(%%%so, %%%s)" % (p, h))
    rows.append("  %%%sdm: (%s) = delegate @%smlp(%%%so, %%%sffn_norm, %%%sw1, %%%sw3, %%%sw2)" % (p, H, dp, p, p, p, p, p))
    rows.append("  %%%sout: %s = getitem %%%sdm, 0" % (p, H, p))
    return "\n".join(rows) + "\n", p + "out"


def generate(n_nodes, seed, unique, out):
    if n_nodes < FIXED_NODES:
        raise SystemExit("gen_decoder.py: --nodes must be at least %d" % FIXED_NODES)
    layers = (n_nodes - FIXED_NODES) // LAYER_NODES
    filler = n_nodes - FIXED_NODES - layers * LAYER_NODES
    rng = random.Random(seed)
    seeds = Seeds(rng)
    w = out.write
    w("passrun 1\n")
    w("# Generated by examples/gen/gen_decoder.py --nodes %d --seed %d%s\n"
      % (n_nodes, seed, " --unique-delegates" if unique else ""))
    w("# A decoder-like program: %d layers of cuda:0 delegates with host writes\n" % layers)
    w("# (custom::kv_update, in-place residuals) between them. Rules: B1-B4, F2,\n")
    w("# F5, F6, F8, F10, M1. Run: passrun --pipeline cuda --stats=json FILE\n\n")
    w(SCHEMAS + "\n")
    if unique:
        for L in range(layers):
            w(layer_delegates("l%d_" % L))
    elif layers:
        w(layer_delegates(""))
    w(head_delegate())
    w("method @forward {\n")
    w('  %tokens: i64[1] = input user "tokens"\n')
    w('  %%mask: f32[1,%d] = input user "attn_mask"\n' % MAX_SEQ)
    w('  %%tok_emb: f32[%d,%d] = input parameter "tok_embeddings.weight" data=random(%d)\n'
      % (VOCAB, D, seeds.take()))
    for L in range(layers):
        w(layer_inputs(L, seeds))
    w('  %%final_norm: f32[%d] = input parameter "norm.weight" data=ones\n' % D)
    w('  %%out_w: f32[%d,%d] = input parameter "output.weight" data=random(%d)\n'
      % (VOCAB, D, seeds.take()))
    w("  %%h0: %s = aten::embedding(%%tok_emb, %%tokens)\n" % H)
    h = "h0"
    for L in range(layers):
        text, h = layer_body(L, h, "l%d_" % L if unique else "", rng)
        w(text)
    logits = "f32[1,%d]" % VOCAB
    w("  %%dh: (%s) = delegate @head(%%%s, %%final_norm, %%out_w)\n" % (logits, h))
    w("  %%logits: %s = getitem %%dh, 0\n" % logits)
    last = "logits"
    for i in range(filler):
        # Temperature scaling, split into steps: host ops after the last delegate.
        w("  %%scaled_%d: %s = aten::div.Scalar(%%%s, 1.0)\n" % (i, logits, last))
        last = "scaled_%d" % i
    w("  return %%%s" % last)
    for L in range(layers):
        for c in ("k", "v"):
            w(', %%l%d_%s_cache -> buffer "layers.%d.attention.%s_cache"' % (L, c, L, c))
    w("\n}\n")


def main():
    ap = argparse.ArgumentParser(description="Write a decoder-like .pg program of exactly N method nodes.")
    ap.add_argument("--nodes", type=int, required=True, help="method nodes (at least %d)" % FIXED_NODES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--unique-delegates", action="store_true",
                    help="one delegate definition per layer instead of shared ones")
    ap.add_argument("-o", "--output", help="write here instead of standard output")
    a = ap.parse_args()
    if a.output:
        with open(a.output, "w", buffering=1 << 20) as f:
            generate(a.nodes, a.seed, a.unique_delegates, f)
    else:
        generate(a.nodes, a.seed, a.unique_delegates, sys.stdout)


if __name__ == "__main__":
    main()
