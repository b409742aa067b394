#!/usr/bin/env python3
"""gen_big.py: a decoder-like program of exactly N nodes, for the convert benchmark.

    gen_big.py [--nodes N] [-o FILE]        (default 1,000,000 nodes, stdout)

Each layer is 13 nodes and uses every feature the binary format carries:
parameters with random, arange (transposed strides), blob and list data, a
zeros buffer with a memory plan that a host op writes in place (written back
at the end), a delegate call on cuda:0 with a tuple result and two getitems, a
shape_only op with an int result, views with int-list arguments. Host ops pad
the method to exactly N nodes (N >= 15). The same N always gives the same
bytes; output is streamed, so memory does not grow with N. Python 3 standard
library only.
"""
import argparse
import sys

HEAD = """\
passrun 1
# A generated decoder-like program for bench/convert (gen_big.py).
op aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor
op aten::view(Tensor(a) self, int[] size) -> Tensor(a)
op aten::add.Tensor(Tensor self, Tensor other) -> Tensor
op custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ()
op aten::sym_size.int(Tensor self, int dim) -> int {shape_only}
blob @bias hex"0000803f000000400000404000008040"

delegate @proj backend="CudaBackend" target_device="cuda:0" {
  %x: f32[1,4]@cuda:0 = input
  %w: f32[4,4]@cuda:0 = input
  %y: f32[1,4]@cuda:0 = aten::linear(%x, %w)
  %z: f32[1,4]@cuda:0 = aten::add.Tensor(%y, %x)
  return %y, %z
}

method @forward {
  %h0: f32[1,4] = input user "x"
"""

LAYER = """\
  %w{i}: f32[4,4] = input parameter "layers.{i}.w" data=random({i})
  %wt{i}: f32[4,4]{{strides=[1,4]}} = input parameter "layers.{i}.wt" data=arange
  %b{i}: f32[4] = input parameter "layers.{i}.b" data=@bias
  %s{i}: f32[4] = input constant "layers.{i}.s" data=[0.5, 1.0, 1.5, 2.0]
  %c{i}: f32[4,4]{{mem=cpu:{off}}} = input buffer "layers.{i}.cache" data=zeros
  %d{i}: (f32[1,4], f32[1,4]) = delegate @proj(%h{i}, %w{i})
  %p{i}: f32[1,4] = getitem %d{i}, 0
  %q{i}: f32[1,4] = getitem %d{i}, 1
  custom::kv_update(%c{i}, %p{i}, {pos})
  %n{i}: int = aten::sym_size.int(%q{i}, 1)
  %v{i}: f32[4] = aten::view(%q{i}, [4])
  %a{i}: f32[4] = aten::add.Tensor(%v{i}, %s{i})
  %h{j}: f32[1,4] = aten::view(%a{i}, [1, 4])
"""
LAYER_NODES = 13


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000000)
    ap.add_argument("-o", dest="out")
    a = ap.parse_args()
    if a.nodes < 2 + LAYER_NODES:
        ap.error("--nodes must be at least %d" % (2 + LAYER_NODES))
    layers = (a.nodes - 2) // LAYER_NODES
    pad = a.nodes - 2 - layers * LAYER_NODES
    out = open(a.out, "w") if a.out else sys.stdout
    out.write(HEAD)
    chunk = []
    for i in range(layers):
        chunk.append(LAYER.format(i=i, j=i + 1, pos=i % 4, off=64 * i))
        if len(chunk) == 1000:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
    last = "h%d" % layers
    for k in range(pad):
        out.write("  %%e%d: f32[1,4] = aten::add.Tensor(%%%s, %%%s)\n" % (k, last, last))
        last = "e%d" % k
    rets = ["%" + last] + ['%%c%d -> buffer "layers.%d.cache"' % (i, i) for i in range(layers)]
    out.write("  return " + ", ".join(rets) + "\n}\n")
    if a.out:
        out.close()


if __name__ == "__main__":
    main()
