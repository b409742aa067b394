"""export.py: an nn.Module -> a passrun program (.pg text).

Steps:
  1. torch.export.export(module, args), then run_decompositions with
     decomp.table(): a functional graph of ATen ops whose signature names
     parameters, buffers, lifted constants, user inputs and which outputs
     are write-backs of mutated buffers / user inputs.
  2. Drop aten::_assert_tensor_metadata (true by construction: shapes are
     static) and fold the subgraphs that depend on no input into constants
     (fold.py).
  3. Reinplace: the runtime has in-place kernels where PyTorch's functional
     graph has functional ops (index_put -> index_put_, auto_functionalized
     custom ops -> the op itself). A functional write whose first argument is
     the buffer it becomes (the signature says so) is done in place on that
     buffer; every other reader of the buffer's old value is ordered before
     the write. When a reader of the old value also depends on the write, it
     is refused (it would need a clone).
  4. Check every op against the runtime's kernels (supported.py): when any
     has none, one ExportError lists them all, each with the line of the
     model it came from (and, when one of decomp.py's decompositions
     declined the op there, why: decomposition_table keeps the reason and
     the op instead of stopping the export).
  5. Partition (partition.py) and schedule delegates and host nodes.
  6. Write the text: op schemas as str(op._schema) (PyTorch's own, with its
     alias annotations), blobs with each constant's storage bytes in storage
     order (real strides), method inputs with their kinds and names, delegate
     bodies whose inputs carry the layouts the values were traced with, and
     the return with "-> buffer"/"-> input" write-backs.
"""
import operator
import re
import types

import torch
from torch.export.graph_signature import InputKind, OutputKind

from . import decomp, partition as part, supported
from .fold import fold_constants

aten = torch.ops.aten

DTYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "bool",
}
# c10's enum values (the schema types ScalarType, MemoryFormat, Layout are ints)
SCALAR_TYPES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
                torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11,
                torch.bfloat16: 15}
MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1,
                  torch.channels_last: 2, torch.channels_last_3d: 3}

# functional op -> the in-place op the runtime has (same arguments)
REINPLACE = {aten.index_put.default: aten.index_put_.default,
             aten.add.Tensor: aten.add_.Tensor, aten.mul.Tensor: aten.mul_.Tensor,
             aten.copy.default: aten.copy_.default}


SCALAR_OVERLOAD = {aten.add.Tensor: aten.add.Scalar, aten.sub.Tensor: aten.sub.Scalar,
                   aten.mul.Tensor: aten.mul.Scalar, aten.div.Tensor: aten.div.Scalar,
                   aten.add_.Tensor: aten.add_.Scalar, aten.mul_.Tensor: aten.mul_.Scalar}
# the elementwise family's (kernels_elementwise.c): a traced number in a
# Tensor overload's second argument
SCALAR_OVERLOAD.update({
    aten.eq.Tensor: aten.eq.Scalar, aten.ne.Tensor: aten.ne.Scalar,
    aten.lt.Tensor: aten.lt.Scalar, aten.le.Tensor: aten.le.Scalar,
    aten.gt.Tensor: aten.gt.Scalar, aten.ge.Tensor: aten.ge.Scalar,
    aten.bitwise_and.Tensor: aten.bitwise_and.Scalar, aten.bitwise_or.Tensor: aten.bitwise_or.Scalar,
    aten.bitwise_xor.Tensor: aten.bitwise_xor.Scalar, aten.pow.Tensor_Tensor: aten.pow.Tensor_Scalar,
    aten.div.Tensor_mode: aten.div.Scalar_mode})


ASSERT_OPS = (aten._assert_tensor_metadata.default,)


class ExportError(Exception):
    """The module cannot be written as a passrun program (says why)."""


def unsupported_message(missing, refusals):
    """missing: (op, source line) -> node names; refusals: source line -> why
    the exporter's decomposition of the op on that line declined."""
    ops = sorted({what for what, _ in missing})
    out = [f"torch_export: passrun's runtime has no kernel for {len(ops)} "
           f"op{'s' if len(ops) != 1 else ''} of this model: {', '.join(ops)}"]
    for (what, line), nodes in sorted(missing.items()):
        names = ", ".join(f"'{x}'" for x in nodes[:3]) + (", ..." if len(nodes) > 3 else "")
        count = f"{len(nodes)} nodes: {names}" if len(nodes) > 1 else f"node {names}"
        out.append(f"  {what} ({count})")
        out.append(f"    from: {line or 'no source line recorded'}")
        if line in refusals:
            out.append(f"    why: {refusals[line]}")
    out.append("(add a decomposition in torch_export/decomp.py, or a kernel in "
               "runtime/kernel_registry.c and supported.py)")
    return "\n".join(out)


def decomposition_table(refusals):
    """decomp.table() with the exporter's own decompositions (those not
    from torch) wrapped: one that declines (raises NotImplementedError)
    leaves its op in the graph, where the kernel check reports it with the
    others, and its reason is kept in refusals by source line, instead of
    aborting the export at the first."""
    import torch.fx.traceback as fx_traceback
    table = decomp.table()

    def wrap(fn):
        def declining(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except NotImplementedError as e:
                meta = fx_traceback.get_current_meta() or {}
                refusals[source_line(meta.get("stack_trace"))] = str(e).removeprefix(
                    "torch_export: ")
                return NotImplemented
        return declining

    for op, fn in list(table.items()):
        if isinstance(fn, types.FunctionType) and not fn.__module__.startswith("torch."):
            table[op] = wrap(fn)
    return table


def op_name(op):
    s = op._schema
    return f"{s.name}.{s.overload_name}" if s.overload_name else s.name


def source_line(trace):
    """The innermost frame of a stack trace as 'FILE:LINE in FUNC: CODE'
    (the line of the model an op came from); "" when there is none."""
    lines = (trace or "").strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        m = re.match(r'\s*File "([^"]+)", line (\d+), in (\S+)', lines[i])
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            where = f"{m.group(1)}:{m.group(2)} in {m.group(3)}"
            return f"{where}: {code}" if code else where
    return ""


def _where(node):
    line = source_line(node.meta.get("stack_trace"))
    return f" (from: {line})" if line else ""


def _contiguous_strides(shape):
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(d, 1)
    return list(reversed(st))


def spec_text(t):
    """A FakeTensor/Tensor -> 'f32[2,3]{strides=[1,2]}' (strides only when not
    contiguous by PyTorch's rule: dimensions of size 1 do not count)."""
    if t.dtype not in DTYPES:
        raise ExportError(f"torch_export: dtype {t.dtype} has no passrun equivalent")
    shape = [int(d) for d in t.shape]
    strides = [int(s) for s in t.stride()]
    text = f"{DTYPES[t.dtype]}[{','.join(map(str, shape))}]"
    want = _contiguous_strides(shape)
    if any(d != 1 and s != w for d, s, w in zip(shape, strides, want)):
        text += "{strides=[" + ",".join(map(str, strides)) + "]}"
    return text


def storage_bytes(t):
    """The bytes of t's storage span, in storage order (what a blob holds)."""
    t = t.detach().cpu()
    if t.numel() == 0:
        return b""
    span = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.stride()))
    flat = torch.as_strided(t, (span,), (1,), t.storage_offset()).contiguous()
    if t.dtype == torch.bfloat16:
        flat = flat.view(torch.int16)
    return flat.numpy().tobytes()


def _quote(s):
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class Program:
    """The functional graph of one exported module, made ready to write."""

    def __init__(self, ep, method="forward", refusals=None, fold=True):
        self.ep = ep
        self.method = method
        self.gm = ep.graph_module
        self.graph = self.gm.graph
        self.sig = ep.graph_signature
        self.alias = {}          # fx node -> the fx node whose value it is (reinplaced)
        self.inplace = {}        # fx node -> (op, args, kwargs) to emit instead
        self.order_deps = {}     # fx node -> extra nodes it must come after
        self.refusals = refusals or {}   # source line -> why a decomposition declined
        self.input_specs = {s.arg.name: s for s in self.sig.input_specs}
        self._drop_asserts()
        decomp.single_result_forms(self.gm)
        if fold:
            specs, _ = fold_constants(ep)
            self.input_specs.update({s.arg.name: s for s in specs})
        self.writeback = {}      # output index -> ("buffer"|"input", name)
        for i, s in enumerate(self.sig.output_specs):
            if s.kind == OutputKind.BUFFER_MUTATION:
                self.writeback[i] = ("buffer", s.target)
            elif s.kind == OutputKind.USER_INPUT_MUTATION:
                self.writeback[i] = ("input", s.target)
        self._reinplace()
        self._scalar_overloads()
        self.calls = [n for n in self.graph.nodes if n.op == "call_function"
                      and n not in self.alias]
        self._check_kernels()

    # ---- reinplacing -------------------------------------------------------

    def _mutated_target(self, node):
        """The placeholder whose write-back is node's value, if any."""
        out = next(n for n in self.graph.nodes if n.op == "output")
        for i, v in enumerate(out.args[0]):
            if v is node and i in self.writeback:
                kind, name = self.writeback[i]
                for ph in self.graph.nodes:
                    s = self.input_specs.get(ph.name) if ph.op == "placeholder" else None
                    if s is None:
                        continue
                    if kind == "buffer" and s.kind == InputKind.BUFFER and s.target == name:
                        return ph
                    if kind == "input" and s.kind == InputKind.USER_INPUT and ph.name == name:
                        return ph
        return None

    def _reinplace(self):
        for n in list(self.graph.nodes):
            if n.op != "call_function":
                continue
            if n.target in REINPLACE:
                base = n.args[0]
                if self._mutated_target(n) is base:
                    self._make_inplace(n, base, REINPLACE[n.target], n.args, n.kwargs)
            elif "auto_functionalized" in str(n.target):
                self._reinplace_auto_functionalized(n)

    def _reinplace_auto_functionalized(self, n):
        op = n.args[0]
        kw = dict(n.kwargs)
        bases = kw.pop("_all_bases", None)
        if bases is None:
            raise ExportError(f"torch_export: {n.target} without _all_bases is not supported{_where(n)}")
        args = {}
        for a in op._schema.arguments:
            if a.name in kw:
                args[a.name] = kw.pop(a.name)
            elif f"_{a.name}_base_index" in kw:
                if f"_{a.name}_size" in kw or f"_{a.name}_stride" in kw:
                    raise ExportError(f"torch_export: {op_name(op)} mutates a view of a buffer; "
                                      f"only whole buffers are supported{_where(n)}")
                args[a.name] = bases[kw.pop(f"_{a.name}_base_index")]
        # the result is (the op's returns, or one None for an op returning (),
        # then the new value of each base)
        n_returns = max(len(op._schema.returns), 1)
        for u in list(n.users):
            if u.target is not operator.getitem or u.args[1] < n_returns:
                raise ExportError(f"torch_export: {op_name(op)} returns values; only custom ops "
                                  f"returning () are reinplaced{_where(n)}")
            base = bases[u.args[1] - n_returns]
            self.alias[u] = base
            self.order_deps.setdefault(u, set()).add(n)
        for b in bases:
            self._order_readers_before(n, b)
        pos = [args.get(a.name) for a in op._schema.arguments]
        self.inplace[n] = (op, tuple(pos), {})

    def _make_inplace(self, n, base, op, args, kwargs):
        self._order_readers_before(n, base)
        self.inplace[n] = (op, args, kwargs)
        self.alias_result = getattr(self, "alias_result", {})
        self.alias_result[n] = base

    def _order_readers_before(self, w, base):
        """Readers of base's old value run before the write w."""
        after = self._downstream(w)
        for r in base.users:
            if r is w or r.op == "output":
                continue
            if r in after:
                raise ExportError(f"torch_export: node '{r.name}' reads '{base.name}' before and "
                                  f"after it is written in place by '{w.name}'; not supported")
            self.order_deps.setdefault(w, set()).add(r)

    def _downstream(self, n):
        seen, todo = set(), [n]
        while todo:
            x = todo.pop()
            for u in x.users:
                if u not in seen:
                    seen.add(u)
                    todo.append(u)
        return seen

    # ---- ops ---------------------------------------------------------------

    def _scalar_overloads(self):
        """add.Tensor(x, 0.5) -> add.Scalar(x, 0.5): PyTorch's functional graph
        passes Python numbers as Tensor arguments (wrapped numbers); the
        verifier wants the overload whose schema says Scalar."""
        for n in self.graph.nodes:
            if n.op != "call_function":
                continue
            op = self.target_op(n)
            args, kwargs = (self.inplace[n][1], self.inplace[n][2]) if n in self.inplace \
                else (n.args, n.kwargs)
            if op in SCALAR_OVERLOAD and len(args) > 1 and isinstance(args[1], (int, float)) \
                    and not isinstance(args[1], bool):
                self.inplace[n] = (SCALAR_OVERLOAD[op], args, kwargs)

    def target_op(self, n):
        return self.inplace[n][0] if n in self.inplace else n.target

    def _drop_asserts(self):
        """aten::_assert_tensor_metadata checks a dtype or shape that
        torch.export fixed when it traced (shapes are static): true by
        construction, so it is dropped, not given a kernel."""
        for n in list(self.graph.nodes):
            if n.op == "call_function" and n.target in ASSERT_OPS and not n.users:
                self.graph.erase_node(n)

    def _check_kernels(self):
        """Refuses the program when any op has no kernel: one message listing
        every such op once per line of the model it came from (a getitem
        reads its op's results and is not listed apart)."""
        missing = {}             # (what, source line) -> node names
        for n in self.calls:
            op = self.target_op(n)
            if op is operator.getitem:
                continue
            if not isinstance(op, torch._ops.OpOverload):
                what = f"{op} (not an operator)"
            elif op_name(op) in supported.SUPPORTED_OPS:
                continue
            else:
                what = op_name(op)
            line = source_line(n.meta.get("stack_trace"))
            missing.setdefault((what, line), []).append(n.name)
        if missing:
            raise ExportError(unsupported_message(missing, self.refusals))

    def resolve(self, v):
        """The node whose value v is, after reinplacing."""
        while isinstance(v, torch.fx.Node):
            if v in self.alias:
                v = self.alias[v]
            elif getattr(self, "alias_result", {}).get(v) is not None:
                v = self.alias_result[v]
            else:
                break
        return v

    def deps(self, n):
        ds = set()
        args = self.inplace[n][1:] if n in self.inplace else (n.args, n.kwargs)
        torch.fx.node.map_arg(args, lambda a: ds.add(a))
        ds |= self.order_deps.get(n, set())
        out = set()
        for d in ds:
            # a use of a reinplaced value depends on the write itself
            if d in self.alias:
                out |= self.order_deps.get(d, set())
            out.add(d if d not in self.alias else self.alias[d])
        return out


def args_text(p, n, name_of):
    op = p.target_op(n)
    args, kwargs = (p.inplace[n][1], p.inplace[n][2]) if n in p.inplace else (n.args, n.kwargs)
    schema = op._schema.arguments
    vals = []
    for i, a in enumerate(schema):
        if i < len(args):
            vals.append((True, args[i]))
        elif a.name in kwargs:
            vals.append((True, kwargs[a.name]))
        else:
            vals.append((False, a.default_value if a.has_default_value() else None))
    while vals and not vals[-1][0]:
        vals.pop()                  # trailing defaults: the schema fills them
    return "(" + ", ".join(value_text(v, p, name_of) for _, v in vals) + ")"


def value_text(v, p, name_of):
    if isinstance(v, torch.fx.Node):
        return "%" + name_of(p.resolve(v))
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if v == v and v not in (float("inf"), float("-inf")) else \
            ("nan" if v != v else ("inf" if v > 0 else "-inf"))
    if isinstance(v, str):
        return _quote(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value_text(x, p, name_of) for x in v) + "]"
    if isinstance(v, torch.dtype):
        return str(SCALAR_TYPES[v])
    if isinstance(v, torch.memory_format):
        return str(MEMORY_FORMATS[v])
    if isinstance(v, torch.layout):
        return "0"
    if isinstance(v, torch.device):
        return _quote(str(v))
    raise ExportError(f"torch_export: cannot write the argument {v!r} ({type(v).__name__})")
