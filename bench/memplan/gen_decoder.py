#!/usr/bin/env python3
"""Writes a decoder-like passrun program with about N nodes, for the
memory-planning benchmark (bench/memplan).

Each layer: a norm, q/k/v projections on the host, a KV-cache update (mutable
buffers, written back), attention through a transposed view of the cache, an
output projection and residual add, then a feed-forward block in a cuda:0
delegate fed and read through copies (its weights device-resident, as
device-constants makes them), an in-place relu_ on the host and a second
residual. Sizes vary with the layer (a seeded choice of widths and sequence
lengths), so that the planner has different sizes to fit together.

With a third argument `nocache` the layers have no KV cache (attention reads
k and v directly), so that nothing is live for the whole method and every
byte of the plan comes from the planner's packing of temporaries.

usage: gen_decoder.py N_NODES [SEED [nocache]] > out.pg
"""
import random
import sys

HEADER = """passrun 1

op aten::add.Tensor(Tensor self, Tensor other) -> Tensor
op aten::mul.Tensor(Tensor self, Tensor other) -> Tensor
op aten::mm(Tensor self, Tensor mat2) -> Tensor
op aten::softmax.int(Tensor self, int dim) -> Tensor
op aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)
op aten::relu_(Tensor(a!) self) -> Tensor(a!)
op custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ()
op et_copy::_h2d_copy(Tensor self) -> Tensor {h2d}
op et_copy::_d2h_copy(Tensor self) -> Tensor {d2h}
"""

NODES_PER_LAYER = 31


def ffn_delegate(name, s, d, f):
    return f"""
delegate @{name} backend="CudaBackend" target_device="cuda:0" {{
  %x: f32[{s},{d}]@cuda:0 = input
  %w1: f32[{d},{f}]@cuda:0 = input
  %w2: f32[{f},{d}]@cuda:0 = input
  %h: f32[{s},{f}]@cuda:0 = aten::mm(%x, %w1)
  %o: f32[{s},{d}]@cuda:0 = aten::mm(%h, %w2)
  return %o
}}
"""


def main():
    n_nodes = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    cache = not (len(sys.argv) > 3 and sys.argv[3] == "nocache")
    layers = max(1, n_nodes // NODES_PER_LAYER)
    d = 64
    shapes = [(s, f) for s in (4, 8, 16) for f in (128, 256)]
    out = [HEADER]
    for s, f in shapes:
        out.append(ffn_delegate(f"ffn_{s}_{f}", s, d, f))
    out.append("\nmethod @forward {\n")
    s0 = 8
    out.append(f"  %x: f32[{s0},{d}] = input user \"x\"\n")
    plan = [rng.choice(shapes) for _ in range(layers)]
    body, rets = [], []
    h, hs = "x", s0
    for i, (s, f) in enumerate(plan):
        c = 32
        out.append(f"  %wq{i}: f32[{d},{d}] = input parameter \"wq{i}\" data=zeros\n")
        out.append(f"  %wk{i}: f32[{d},{d}] = input parameter \"wk{i}\" data=zeros\n")
        out.append(f"  %wv{i}: f32[{d},{d}] = input parameter \"wv{i}\" data=zeros\n")
        out.append(f"  %wo{i}: f32[{d},{d}] = input parameter \"wo{i}\" data=zeros\n")
        out.append(f"  %w1_{i}: f32[{d},{f}]@cuda:0 = input parameter \"w1_{i}\" data=zeros\n")
        out.append(f"  %w2_{i}: f32[{f},{d}]@cuda:0 = input parameter \"w2_{i}\" data=zeros\n")
        if cache:
            out.append(f"  %kc{i}: f32[{c},{d}] = input buffer \"k_cache{i}\" data=zeros\n")
            out.append(f"  %vc{i}: f32[{c},{d}] = input buffer \"v_cache{i}\" data=zeros\n")
        b = body.append
        if hs != s:  # change the sequence length: project through a [s, hs] constant
            out.append(f"  %rs{i}: f32[{s},{hs}] = input constant \"rs{i}\" data=ones\n")
            b(f"  %h{i}: f32[{s},{d}] = aten::mm(%rs{i}, %{h})\n")
            h = f"h{i}"
        b(f"  %sq{i}: f32[{s},{d}] = aten::mul.Tensor(%{h}, %{h})\n")
        b(f"  %n{i}: f32[{s},{d}] = aten::add.Tensor(%sq{i}, %{h})\n")
        b(f"  %q{i}: f32[{s},{d}] = aten::mm(%n{i}, %wq{i})\n")
        b(f"  %k{i}: f32[{s},{d}] = aten::mm(%n{i}, %wk{i})\n")
        b(f"  %v{i}: f32[{s},{d}] = aten::mm(%n{i}, %wv{i})\n")
        if cache:
            b(f"  custom::kv_update(%kc{i}, %k{i}, 0)\n")
            b(f"  custom::kv_update(%vc{i}, %v{i}, 0)\n")
            kv, vv = f"kc{i}", f"vc{i}"
        else:
            c, kv, vv = s, f"k{i}", f"v{i}"
        b(f"  %kt{i}: f32[{d},{c}]{{strides=[1,{d}]}} = aten::transpose.int(%{kv}, 0, 1)\n")
        b(f"  %sc{i}: f32[{s},{c}] = aten::mm(%q{i}, %kt{i})\n")
        b(f"  %p{i}: f32[{s},{c}] = aten::softmax.int(%sc{i}, 1)\n")
        b(f"  %a{i}: f32[{s},{d}] = aten::mm(%p{i}, %{vv})\n")
        b(f"  %o{i}: f32[{s},{d}] = aten::mm(%a{i}, %wo{i})\n")
        b(f"  %r{i}: f32[{s},{d}] = aten::add.Tensor(%{h}, %o{i})\n")
        b(f"  %rd{i}: f32[{s},{d}]@cuda:0 = et_copy::_h2d_copy(%r{i})\n")
        b(f"  %dl{i}: (f32[{s},{d}]@cuda:0) = delegate @ffn_{s}_{f}(%rd{i}, %w1_{i}, %w2_{i})\n")
        b(f"  %g{i}: f32[{s},{d}]@cuda:0 = getitem %dl{i}, 0\n")
        b(f"  %gh{i}: f32[{s},{d}] = et_copy::_d2h_copy(%g{i})\n")
        b(f"  %ga{i}: f32[{s},{d}] = aten::relu_(%gh{i})\n")
        b(f"  %y{i}: f32[{s},{d}] = aten::add.Tensor(%r{i}, %ga{i})\n")
        if cache:
            rets.append(f"%kc{i} -> buffer \"k_cache{i}\"")
            rets.append(f"%vc{i} -> buffer \"v_cache{i}\"")
        h, hs = f"y{i}", s
    out.extend(body)
    out.append("  return " + ", ".join([f"%{h}"] + rets) + "\n}\n")
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
