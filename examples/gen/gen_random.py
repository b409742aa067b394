#!/usr/bin/env python3
"""gen_random.py: small random valid programs (.pg text) for differential testing.

    gen_random.py --seed S [--steps N]                  one program on stdout
    gen_random.py --seed S --count C --out-dir DIR      DIR/random_S.pg ... random_{S+C-1}.pg
    --no-refusals: never pass a mutable buffer to a device delegate (see below)

Program number S is the same whichever way it is written (each program's
generator is seeded with its own number), so a failing random_S.pg can be
made again with --seed S alone. Python 3 standard library only.

Each program is one method, @forward, that mixes what the placement rules of
docs/placement-rules.md talk about:
  - delegates on cuda:0 (most), cuda:1, target_device="cpu" and with no
    target_device; results read with getitem (one or two outputs) or, for a
    single result, with no getitem (F3);
  - host ops, and in-place host ops (relu_, add_, mul_) writing delegate
    outputs, host results and mutable buffers, before or after delegates
    read them (F2, F8);
  - custom::accumulate writing through aten::view (a write to the base),
    custom::kv_update writing a row of a KV-cache buffer from a slice, and
    delegates that read that cache;
  - aten::sym_size.int (shape_only) readers;
  - parameters and constants, some transposed ({strides=[1,2]}: F1, F5);
  - mutable buffers written on the host and written back;
  - user inputs read by many readers (F6), outputs returned and also read (F4),
    now and then a user input returned as it is.

Every program verifies: values are defined before use, in-place results have
the type of what they write, views are taken only of contiguous tensors.
What the generator never makes: a user input written in place, or several
methods. With skip_h2d_for_method_inputs, a mutable buffer that a device
delegate reads and a host op writes is refused (E-INPUT-WRITTEN-ON-HOST, F6);
about 40% of the programs have one. --no-refusals passes mutable buffers
only to host code, so that every program places with every skip flag. With
error_on_per_call_copies, F9's errors are expected.
"""
import argparse
import os
import random
import sys

SHAPE = "f32[2,3]"
STRIDED = "f32[2,3]{strides=[1,2]}"    # a transpose of a contiguous [3,2]
CACHE = "f32[4,3]"
ROW = "f32[1,3]"
FLAT = "f32[6]"

SCHEMAS = {
    "add": "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "sub": "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "mul": "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor",
    "mul_s": "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor",
    "div_s": "aten::div.Scalar(Tensor self, Scalar other) -> Tensor",
    "neg": "aten::neg(Tensor self) -> Tensor",
    "relu": "aten::relu(Tensor self) -> Tensor",
    "sin": "aten::sin(Tensor self) -> Tensor",
    "cos": "aten::cos(Tensor self) -> Tensor",
    "tanh": "aten::tanh(Tensor self) -> Tensor",
    "sigmoid": "aten::sigmoid(Tensor self) -> Tensor",
    "clone": "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
    "relu_": "aten::relu_(Tensor(a!) self) -> Tensor(a!)",
    "add_": "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "mul_": "aten::mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    "view": "aten::view(Tensor(a) self, int[] size) -> Tensor(a)",
    "slice": "aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
    "sym_size": "aten::sym_size.int(Tensor self, int dim) -> int {shape_only}",
    "accumulate": "custom::accumulate(Tensor(a!) x, Tensor y) -> ()",
    "kv_update": "custom::kv_update(Tensor(a!) cache, Tensor value, int pos) -> ()",
}
UNARY = ["neg", "relu", "sin", "cos", "tanh", "sigmoid"]
BINARY = ["add", "sub", "mul"]


class Value:
    """A tensor of shape [2,3] that later statements may read."""

    def __init__(self, name, typ, kind, base=None):
        self.name = name
        self.type = typ            # SHAPE or STRIDED
        self.kind = kind           # user, parameter, constant, buffer, host, devout
        self.base = base or name   # the tensor whose storage it is (aliases share it)

    @property
    def contiguous(self):
        return self.type == SHAPE

    @property
    def writable(self):
        # User inputs and constants are never written in place (see the top).
        return self.kind in ("host", "devout", "buffer")


class Gen:
    def __init__(self, seed, steps, no_refusals=False):
        self.rng = random.Random(seed)
        self.no_refusals = no_refusals
        self.seed = seed
        self.steps = steps
        self.used_ops = set()
        self.delegates = []        # text of each delegate definition
        self.lines = []            # method statements
        self.values = []           # readable [2,3] tensors
        self.written_buffers = []  # buffer Values written in place, in order
        self.cache = None          # the KV-cache buffer's name, if any
        self.n = 0

    def fresh(self, stem):
        self.n += 1
        return "%s%d" % (stem, self.n)

    def op(self, key):
        self.used_ops.add(key)
        return SCHEMAS[key].split("(", 1)[0]

    def pick(self, pred=lambda v: True):
        cands = [v for v in self.values if pred(v)]
        return self.rng.choice(cands) if cands else None

    # ---- placeholders --------------------------------------------------

    def inputs(self):
        r = self.rng
        for i in range(r.randint(1, 3)):
            name = "x%d" % i
            self.lines.append('%%%s: %s = input user "%s"' % (name, SHAPE, name))
            self.values.append(Value(name, SHAPE, "user"))
        for i in range(r.randint(0, 2)):
            name = "w%d" % i
            typ = STRIDED if r.random() < 0.4 else SHAPE
            self.lines.append('%%%s: %s = input parameter "weight%d" data=random(%d)'
                              % (name, typ, i, r.randrange(1, 1 << 20)))
            self.values.append(Value(name, typ, "parameter"))
        if r.random() < 0.4:
            typ = STRIDED if r.random() < 0.3 else SHAPE
            data = r.choice(["arange", "ones", "fill(0.25)", "[0.5, -1.0, 2.0, 0.0, 1.5, -0.5]"])
            self.lines.append('%%k0: %s = input constant "lifted_k0" data=%s' % (typ, data))
            self.values.append(Value("k0", typ, "constant"))
        for i in range(r.randint(0, 2)):
            name = "b%d" % i
            self.lines.append('%%%s: %s = input buffer "buf%d" data=zeros' % (name, SHAPE, i))
            self.values.append(Value(name, SHAPE, "buffer"))
        if r.random() < 0.35:
            self.cache = "cache"
            self.lines.append('%%cache: %s = input buffer "kv_cache" data=zeros' % CACHE)

    # ---- statements ----------------------------------------------------

    def delegate_call(self):
        r = self.rng
        device = r.choice(["cuda:0"] * 5 + ["cuda:1"] * 2 + ["cpu", None])
        on_device = device not in (None, "cpu")
        pool = self.values
        if self.no_refusals and on_device:
            pool = [v for v in self.values if v.kind != "buffer"]
        args = r.sample(pool, min(len(pool), r.randint(1, 3)))
        read_cache = self.cache is not None and r.random() < 0.3
        if self.no_refusals and on_device:
            read_cache = False
        dname = self.fresh("d")
        body = []
        for i, a in enumerate(args):
            body.append("%%a%d: %s = input" % (i, a.type))
        if read_cache:
            body.append("%%c: %s = input" % CACHE)
        acc = "a0"
        for i in range(1, len(args)):
            body.append("%%t%d: %s = %s(%%%s, %%a%d)" % (i, SHAPE, self.op(r.choice(BINARY)), acc, i))
            acc = "t%d" % i
        if read_cache:
            start = r.randrange(3)
            body.append("%%cs: %s = %s(%%c, 0, %d, %d)" % (SHAPE, self.op("slice"), start, start + 2))
            body.append("%%tc: %s = %s(%%%s, %%cs)" % (SHAPE, self.op("add"), acc))
            acc = "tc"
        body.append("%%r0: %s = %s(%%%s)" % (SHAPE, self.op(r.choice(UNARY)), acc))
        results = ["r0"]
        if r.random() < 0.35:
            body.append("%%r1: %s = %s(%%%s, %%a0)" % (SHAPE, self.op(r.choice(BINARY)), acc))
            results.append("r1")
        specs = 'backend="%s"' % ("CudaBackend" if device and device != "cpu" else "XnnpackBackend")
        if device:
            specs += ' target_device="%s"' % device
        text = "delegate @%s %s {\n" % (dname, specs)
        text += "".join("  %s\n" % b for b in body)
        text += "  return %s\n}\n" % ", ".join("%" + x for x in results)
        self.delegates.append(text)
        argv = [a.name for a in args] + (["cache"] if read_cache else [])
        call = "delegate @%s(%s)" % (dname, ", ".join("%" + x for x in argv))
        if len(results) == 1 and r.random() < 0.35:
            out = self.fresh("z")
            self.lines.append("%%%s: %s = %s" % (out, SHAPE, call))
            self.values.append(Value(out, SHAPE, "devout"))
            return
        tup = self.fresh("t")
        self.lines.append("%%%s: (%s) = %s" % (tup, ", ".join([SHAPE] * len(results)), call))
        for i in range(len(results)):
            out = self.fresh("y")
            self.lines.append("%%%s: %s = getitem %%%s, %d" % (out, SHAPE, tup, i))
            self.values.append(Value(out, SHAPE, "devout"))

    def host_op(self):
        r = self.rng
        kind = r.choice(["unary", "unary", "binary", "binary", "scalar", "clone"])
        x = self.pick()
        out = self.fresh("h")
        if kind == "unary":
            rhs = "%s(%%%s)" % (self.op(r.choice(UNARY)), x.name)
        elif kind == "binary":
            rhs = "%s(%%%s, %%%s)" % (self.op(r.choice(BINARY)), x.name, self.pick().name)
        elif kind == "scalar":
            key = r.choice(["mul_s", "div_s"])
            rhs = "%s(%%%s, %s)" % (self.op(key), x.name, r.choice(["0.5", "2.0", "-1.5"]))
        else:
            rhs = "%s(%%%s)" % (self.op("clone"), x.name)
        self.lines.append("%%%s: %s = %s" % (out, SHAPE, rhs))
        self.values.append(Value(out, SHAPE, "host"))

    def note_write(self, v):
        if v.kind == "buffer":
            buf = next(b for b in self.values if b.name == v.base)
            if buf not in self.written_buffers:
                self.written_buffers.append(buf)

    def inplace_op(self):
        r = self.rng
        t = self.pick(lambda v: v.writable)
        if t is None:
            return self.host_op()
        out = self.fresh("ip")
        key = r.choice(["relu_", "add_", "mul_"])
        if key == "relu_":
            rhs = "%s(%%%s)" % (self.op(key), t.name)
        elif key == "add_":
            other = self.pick(lambda v: v.base != t.base)
            if other is None:
                return self.host_op()
            rhs = "%s(%%%s, %%%s)" % (self.op(key), t.name, other.name)
        else:
            rhs = "%s(%%%s, %s)" % (self.op(key), t.name, r.choice(["0.5", "2.0"]))
        self.lines.append("%%%s: %s = %s" % (out, t.type, rhs))
        self.values.append(Value(out, t.type, t.kind, base=t.base))
        self.note_write(t)

    def accumulate(self):
        """custom::accumulate, through views when both tensors allow it."""
        t = self.pick(lambda v: v.writable and v.contiguous)
        if t is None:
            return self.host_op()
        other = self.pick(lambda v: v.base != t.base)
        if other is None:
            return self.host_op()
        if other.contiguous and self.rng.random() < 0.7:
            tv, ov = self.fresh("v"), self.fresh("v")
            self.lines.append("%%%s: %s = %s(%%%s, [6])" % (tv, FLAT, self.op("view"), t.name))
            self.lines.append("%%%s: %s = %s(%%%s, [6])" % (ov, FLAT, self.op("view"), other.name))
            self.lines.append("%s(%%%s, %%%s)" % (self.op("accumulate"), tv, ov))
        else:
            self.lines.append("%s(%%%s, %%%s)" % (self.op("accumulate"), t.name, other.name))
        self.note_write(t)

    def kv_update(self):
        src = self.pick(lambda v: v.contiguous)
        if self.cache is None or src is None:
            return self.host_op()
        row = self.fresh("row")
        start = self.rng.randrange(2)
        self.lines.append("%%%s: %s = %s(%%%s, 0, %d, %d)" % (row, ROW, self.op("slice"), src.name,
                                                             start, start + 1))
        self.lines.append("%s(%%cache, %%%s, %d)" % (self.op("kv_update"), row, self.rng.randrange(4)))
        if "cache" not in [b.name for b in self.written_buffers]:
            self.written_buffers.append(Value("cache", CACHE, "buffer"))

    def shape_only(self):
        v = self.pick()
        self.lines.append("%%%s: int = %s(%%%s, %d)" % (self.fresh("n"), self.op("sym_size"), v.name,
                                                        self.rng.randrange(2)))

    def body(self):
        r = self.rng
        actions = [(self.delegate_call, 5), (self.host_op, 3), (self.inplace_op, 2),
                   (self.accumulate, 1.5), (self.kv_update, 1), (self.shape_only, 1)]
        funcs, weights = zip(*actions)
        for _ in range(self.steps):
            r.choices(funcs, weights)[0]()
        # Every program calls at least one delegate.
        if not any("delegate @" in s for s in self.lines):
            self.delegate_call()
        # Every mutable buffer is written at least once.
        for b in [v for v in self.values if v.kind == "buffer" and v.base == v.name]:
            if b not in self.written_buffers:
                other = self.pick(lambda v: v.base != b.name)
                self.lines.append("%s(%%%s, %%%s)" % (self.op("accumulate"), b.name, other.name))
                self.written_buffers.append(b)

    def returns(self):
        r = self.rng
        # Results of this method (not constants), one per storage, newest first
        # more often; a user input now and then (F6's returned input).
        cands = [v for v in self.values if v.kind in ("host", "devout")
                 or (v.kind == "user" and r.random() < 0.15)]
        seen, picked, k = set(), [], r.randint(1, 3)
        for v in sorted(cands, key=lambda v: -r.random() * (1 + self.values.index(v))):
            if v.base not in seen and len(picked) < k:
                seen.add(v.base)
                picked.append(v)
        if not picked:
            picked = [self.values[-1]]
        rets = ["%" + v.name for v in picked]
        for b in self.written_buffers:
            name = "kv_cache" if b.name == "cache" else "buf" + b.name[1:]
            rets.append('%%%s -> buffer "%s"' % (b.name, name))
        self.lines.append("return " + ", ".join(rets))

    def text(self):
        self.inputs()
        self.body()
        self.returns()
        out = ["passrun 1",
               "# Generated by examples/gen/gen_random.py --seed %d --steps %d%s"
               % (self.seed, self.steps, " --no-refusals" if self.no_refusals else ""),
               "# A random mix of the placement rules B1-B5, F1-F10 and M1.",
               "# Run: passrun --pipeline cuda --verify-each --run --check FILE", ""]
        out += ["op " + SCHEMAS[k] for k in sorted(self.used_ops)]
        out.append("")
        out += self.delegates
        out.append("method @forward {")
        out += ["  " + s for s in self.lines]
        out.append("}")
        return "\n".join(out) + "\n"


def program(seed, steps, no_refusals=False):
    return Gen(seed, steps if steps else random.Random(seed).randint(4, 12), no_refusals).text()


def main():
    ap = argparse.ArgumentParser(description="Write small random valid .pg programs.")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--steps", type=int, default=0, help="statements to draw (default: 4 to 12)")
    ap.add_argument("--count", type=int, default=1, help="programs seed .. seed+count-1")
    ap.add_argument("--out-dir", help="write DIR/random_SEED.pg files (needed with --count > 1)")
    ap.add_argument("--no-refusals", action="store_true",
                    help="pass mutable buffers only to host code (no F6 refusal with the input skip)")
    a = ap.parse_args()
    if a.count > 1 and not a.out_dir:
        raise SystemExit("gen_random.py: --count needs --out-dir")
    if not a.out_dir:
        sys.stdout.write(program(a.seed, a.steps, a.no_refusals))
        return
    for s in range(a.seed, a.seed + a.count):
        with open(os.path.join(a.out_dir, "random_%d.pg" % s), "w") as f:
            f.write(program(s, a.steps, a.no_refusals))


if __name__ == "__main__":
    main()
