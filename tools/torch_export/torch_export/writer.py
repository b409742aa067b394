"""writer.py: a reinplaced, partitioned Program -> .pg text.

Layout of the file: header comment lines, `passrun 1`, the op schemas in
first-use order, one blob per constant (parameter, buffer, lifted constant),
the delegates, then the method. Method-level values have no @device: where
they live is the placement passes' business. A delegate body declares each
input with the spec (shape, dtype, strides) its value was traced with.
"""
import operator

from torch.export.graph_signature import InputKind

from . import partition as part
from . import supported
from .export import ExportError, args_text, op_name, spec_text, storage_bytes, value_text


def _val(n):
    v = n.meta.get("val")
    if v is None:
        raise ExportError(f"torch_export: node '{n.name}' has no traced value")
    return v


def _type_text(n):
    """A tensor's spec, or for an op with several results (split_with_sizes'
    Tensor[], native ops' (Tensor, Tensor)) the tuple of their specs, which
    getitems read."""
    v = _val(n)
    if isinstance(v, (list, tuple)):
        if any(x is None for x in v):
            raise ExportError(f"torch_export: node '{n.name}' returns an empty result; "
                              "not supported")
        return "(" + ", ".join(spec_text(x) for x in v) + ")"
    return spec_text(v)


def _name_of(p, n):
    """The op's full name for the partitioner; a getitem is 'getitem'."""
    op = p.target_op(n)
    return "getitem" if op is operator.getitem else op_name(op)


def _with_getitems(groups, calls):
    """Each getitem joins the unit of the op whose results it reads: a
    delegate returns tensors, never a tuple, so a tuple's readers are in the
    tuple's delegate (or all on the host with it)."""
    group_of = {n: gi for gi, g in enumerate(groups) for n in g}
    pos = {n: i for i, n in enumerate(calls)}
    for n in calls:
        if n.target is operator.getitem:
            g, src = group_of.get(n), group_of.get(n.args[0])
            if g != src:
                if g is not None:
                    groups[g].remove(n)
                if src is not None:
                    groups[src].append(n)
                    groups[src].sort(key=pos.get)
    return [g for g in groups if g]


class Writer:
    def __init__(self, program, ep, rule, mode, target_device, backend):
        self.p = program
        self.ep = ep
        self.rule = rule
        self.mode = mode
        self.target_device = target_device
        self.backend = backend
        self.ops = []                # OpOverloads in first-use order
        self.blobs = []

    def _use_op(self, op):
        if op not in self.ops:
            self.ops.append(op)

    def _call_line(self, n, indent="  "):
        op = self.p.target_op(n)
        if op is operator.getitem:
            src, i = n.args
            return f"{indent}%{n.name}: {spec_text(_val(n))} = getitem %{self.p.resolve(src).name}, {i}"
        self._use_op(op)
        call = op_name(op) + args_text(self.p, n, lambda x: x.name)
        if not op._schema.returns:
            return f"{indent}{call}"
        return f"{indent}%{n.name}: {_type_text(n)} = {call}"

    def _input_line(self, ph):
        s = self.p.input_specs[ph.name]
        v = _val(ph)
        if s.kind == InputKind.USER_INPUT:
            return f'  %{ph.name}: {spec_text(v)} = input user "{ph.name}"'
        kinds = {InputKind.PARAMETER: ("parameter", self.ep.state_dict),
                 InputKind.BUFFER: ("buffer", None),
                 InputKind.CONSTANT_TENSOR: ("constant", self.ep.constants)}
        if s.kind not in kinds:
            raise ExportError(f"torch_export: input '{ph.name}' of kind {s.kind} is not supported")
        kind, _ = kinds[s.kind]
        t = self.ep.state_dict.get(s.target)
        if t is None:
            t = self.ep.constants.get(s.target)
        if t is None:
            raise ExportError(f"torch_export: no data for {kind} '{s.target}'")
        self.blobs.append((ph.name, storage_bytes(t)))
        return f'  %{ph.name}: {spec_text(t)} = input {kind} "{s.target}" data=@{ph.name}'

    def _delegate(self, gi, group, lines_out):
        members = set(group)
        ext, outs = [], []
        for n in group:
            for d in sorted(self.p.deps(n), key=lambda x: x.name):
                pass
            for a in self._arg_nodes(n):
                if a not in members and a not in ext:
                    ext.append(a)
        for n in group:
            if any(u not in members for u in self._users(n)):
                outs.append(n)
        dname = f"d{gi}_{group[0].name}"
        body = [f'delegate @{dname} backend="{self.backend}" target_device="{self.target_device}" {{']
        for a in ext:
            body.append(f"  %{a.name}: {spec_text(_val(a))} = input")
        for n in group:
            body.append(self._call_line(n))
        body.append("  return " + ", ".join("%" + n.name for n in outs))
        body.append("}")
        self.delegates.append("\n".join(body))
        specs = ", ".join(spec_text(_val(n)) for n in outs)
        lines_out.append(f"  %{dname}: ({specs}) = delegate @{dname}(" +
                         ", ".join("%" + a.name for a in ext) + ")")
        for i, n in enumerate(outs):
            lines_out.append(f"  %{n.name}: {spec_text(_val(n))} = getitem %{dname}, {i}")

    def _arg_nodes(self, n):
        """The values n reads, after reinplacing, in argument order."""
        import torch
        args = self.p.inplace[n][1:] if n in self.p.inplace else (n.args, n.kwargs)
        seen = []
        torch.fx.node.map_arg(args, lambda a: seen.append(self.p.resolve(a)))
        out = []
        for a in seen:
            if a not in out:
                out.append(a)
        return out

    def _users(self, n):
        """The nodes that read n's value (through reinplacing aliases)."""
        users = set()
        for u in n.users:
            if u in self.p.alias:
                users |= self._users(u)
            else:
                users.add(u)
        return users

    def text(self, header=()):
        p = self.p
        calls = p.calls
        deps = {n: {p.resolve(d) if d in p.alias else d for d in p.deps(n)} for n in calls}
        deps = {n: {d for d in ds if d.op == "call_function"} for n, ds in deps.items()}

        def writes(n):
            op = p.target_op(n)
            return op is not operator.getitem and any(
                a.alias_info is not None and a.alias_info.is_write for a in op._schema.arguments)

        groups = part.partition(calls, deps, lambda n: _name_of(p, n), self.rule,
                                lambda name: name in supported.VIEW_OPS or name == "getitem",
                                writes, self.mode)
        groups = _with_getitems(groups, calls)
        order = part.schedule(calls, deps, groups)
        self.delegates = []
        body = [self._input_line(ph) for ph in p.graph.nodes if ph.op == "placeholder"]
        for kind, x in order:
            if kind == "group":
                self._delegate(x, groups[x], body)
            else:
                body.append(self._call_line(x))
        out = next(n for n in p.graph.nodes if n.op == "output")
        rets = []
        for i, v in enumerate(out.args[0]):
            r = "%" + p.resolve(v).name if v is not None else None
            if r is None:
                raise ExportError("torch_export: a None output is not supported")
            if i in p.writeback:
                kind, name = p.writeback[i]
                r += f' -> {kind} "{name}"'
            rets.append(r)
        body.append("  return " + ", ".join(rets))
        lines = [f"# {h}" if h else "#" for h in header]
        lines += ["passrun 1", ""]
        lines += ["op " + str(op._schema) for op in self.ops]
        if self.blobs:
            lines.append("")
            lines += [f'blob @{name} hex"{data.hex()}"' for name, data in self.blobs]
        for d in self.delegates:
            lines += ["", d]
        lines += ["", f"method @{p.method} {{"] + body + ["}", ""]
        self.n_delegates = len(groups)
        return "\n".join(lines)
