#!/usr/bin/env python3
"""Writes a random passrun program for the memory-planning benchmark: harder
to pack than a decoder, because tensors of very different sizes live for very
different times.

  random: each op reads the previous value and one earlier value (mostly
          recent, sometimes far back: a long-lived tensor); sizes drawn
          from 16 B to 64 KiB; some ops are in place (relu_) or views.
  unet:   encoder stages halve the size and keep a skip tensor each; decoder
          stages double it back and read the mirrored skip (nested lifetimes
          of different sizes, as in a U-Net or a diffusion model).

usage: gen_random.py random|unet N_NODES [SEED] > out.pg
"""
import random
import sys

HEADER = """passrun 1

op aten::f(Tensor self, Tensor other) -> Tensor
op aten::g(Tensor self) -> Tensor
op aten::relu_(Tensor(a!) self) -> Tensor(a!)
op aten::view(Tensor(a) self, int[] size) -> Tensor(a)

method @forward {
"""


def gen_random(n, rng):
    out = [HEADER, '  %v0: f32[256] = input user "x"\n']
    sizes = {0: 256}
    for i in range(1, n):
        prev = i - 1
        r = rng.random()
        if r < 0.1:
            out.append(f"  %v{i}: f32[{sizes[prev]}] = aten::relu_(%v{prev})\n")
            sizes[i] = sizes[prev]
            continue
        if r < 0.15:
            out.append(f"  %v{i}: f32[{sizes[prev]}] = aten::view(%v{prev}, [{sizes[prev]}])\n")
            sizes[i] = sizes[prev]
            continue
        back = int(rng.expovariate(1 / 3)) + 1 if rng.random() < 0.9 else rng.randint(1, min(i, 500))
        other = max(0, i - 1 - back)
        size = 4 * int(2 ** rng.uniform(2, 14))
        out.append(f"  %v{i}: f32[{size}] = aten::f(%v{prev}, %v{other})\n")
        sizes[i] = size
    out.append(f"  return %v{n - 1}\n}}\n")
    return out


def gen_unet(n, rng):
    out = [HEADER, '  %v0: f32[65536] = input user "x"\n']
    count, size, cur = 1, 65536, "v0"
    while count < n:
        depth = rng.randint(3, 7)
        skips = []
        for _ in range(depth):
            for _ in range(rng.randint(1, 3)):
                out.append(f"  %v{count}: f32[{size}] = aten::g(%{cur})\n")
                cur, count = f"v{count}", count + 1
            skips.append((cur, size))
            size //= 2
            out.append(f"  %v{count}: f32[{size}] = aten::g(%{cur})\n")
            cur, count = f"v{count}", count + 1
        for skip, ssize in reversed(skips):
            size = ssize
            out.append(f"  %v{count}: f32[{size}] = aten::g(%{cur})\n")
            cur, count = f"v{count}", count + 1
            out.append(f"  %v{count}: f32[{size}] = aten::f(%{cur}, %{skip})\n")
            cur, count = f"v{count}", count + 1
    out.append(f"  return %{cur}\n}}\n")
    return out


def main():
    kind, n = sys.argv[1], int(sys.argv[2])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    gen = {"random": gen_random, "unet": gen_unet}[kind]
    sys.stdout.write("".join(gen(n, rng)))


if __name__ == "__main__":
    main()
