#!/usr/bin/env python3
"""gen_chain.py: a program of exactly N nodes for the pass-manager benchmark.

    gen_chain.py [--nodes N] [-o FILE]        (default 1,000,000 nodes, stdout)

One method: a user input, then a chain of aten::add.Tensor where every other
node is dead (nothing reads it), so that the dce pass has half the program to
remove, then the return. No value has more than three readers: a value read
by half the program makes each erase scan its use list (see README). Streamed; the same N always gives the same text.
Python 3 standard library only.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    if args.nodes < 3:
        ap.error("--nodes must be at least 3")
    out = open(args.output, "w") if args.output else sys.stdout
    w = out.write
    w("passrun 1\n")
    w("op aten::add.Tensor(Tensor self, Tensor other) -> Tensor\n\n")
    w("method @forward {\n")
    w('  %x: f32[4] = input user "x"\n')
    live = "x"
    for i in range(args.nodes - 2):
        if i % 2 == 0:
            w(f"  %v{i}: f32[4] = aten::add.Tensor(%{live}, %{live})\n")
            live = f"v{i}"
        else:
            w(f"  %d{i}: f32[4] = aten::add.Tensor(%{live}, %{live})\n")
    w(f"  return %{live}\n")
    w("}\n")
    if args.output:
        out.close()


if __name__ == "__main__":
    main()
