"""fold.py: constant folding of the subgraphs that depend on no input.

Models build tensors from constants at every call: position ids
(arange, unsqueeze), causal and padding masks (full, comparisons, where,
logical ops), rotary tables (a buffer of frequencies times arange, cos,
sin). None of it depends on a user input or a weight, so it is computed
once here, at export time, with PyTorch's eager kernels, and the program
gets the result as a constant, as ExecuTorch's constant_prop_pass does.
Those ops then need no kernel in passrun's runtime and cost nothing per
call.

What counts as constant: lifted constants and buffers that the method does
not write (BatchNorm's statistics, position-id tables, non-persistent
rotary buffers), and ops with no tensor argument at all (arange, full).
Parameters do not: they are the model's weights, which a user may replace,
and folding would bake copies derived from them into the program. An op is
folded when every tensor it reads is constant and it is deterministic (not
tagged nondeterministic_seeded) and writes nothing.

A folded value that an unfolded node reads becomes a new constant input
(contiguous). A value that is only a view of a constant input (a slice of a
position-id buffer) is left as it is: folding it would copy the buffer's
data and compute nothing. Folded nodes and the constant inputs nobody reads
any more are removed from the graph.
"""
import operator

import torch
from torch.export.graph_signature import InputKind, InputSpec, OutputKind, TensorArgument

from . import supported


def _op_name(op):
    s = op._schema
    return f"{s.name}.{s.overload_name}" if s.overload_name else s.name


def _is_view(n):
    return isinstance(n.target, torch._ops.OpOverload) and _op_name(n.target) in supported.VIEW_OPS


def _foldable_op(n):
    if n.target is operator.getitem:
        return True
    op = n.target
    if not isinstance(op, torch._ops.OpOverload):
        return False
    if torch.Tag.nondeterministic_seeded in op.tags or not op._schema.returns:
        return False
    return not any(a.alias_info is not None and a.alias_info.is_write
                   for a in op._schema.arguments)


def _constant_inputs(ep):
    """placeholder name -> its tensor, for the inputs that count as constant."""
    written = {s.target for s in ep.graph_signature.output_specs
               if s.kind == OutputKind.BUFFER_MUTATION}
    out = {}
    for s in ep.graph_signature.input_specs:
        if s.kind == InputKind.BUFFER and s.target not in written:
            t = ep.state_dict.get(s.target, ep.constants.get(s.target))
        elif s.kind == InputKind.CONSTANT_TENSOR:
            t = ep.constants.get(s.target)
        else:
            continue
        if isinstance(t, torch.Tensor):
            out[s.arg.name] = t
    return out


def _evaluate(graph, consts):
    """Computes every foldable node; returns (values, computes): values[node]
    its eager value, computes[node] whether it (or what it reads) does any
    arithmetic rather than re-describing a constant input's memory."""
    values, computes = {}, {}
    for n in graph.nodes:
        if n.op == "placeholder" and n.name in consts:
            values[n], computes[n] = consts[n.name], False
            continue
        if n.op != "call_function" or not _foldable_op(n):
            continue
        reads = []
        torch.fx.node.map_arg((n.args, n.kwargs), reads.append)
        if any(r not in values for r in reads):
            continue
        args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda r: values[r])
        try:
            with torch.no_grad():
                v = n.target(*args, **kwargs)
        except Exception:       # an op eager PyTorch cannot run here stays in the graph
            continue
        values[n] = v
        computes[n] = (n.target is not operator.getitem and not _is_view(n)) or \
            any(computes[r] for r in reads)
    return values, computes


def _replace(ep, graph, n, value, first_call):
    name = f"c_folded_{n.name}"
    with graph.inserting_before(first_call):
        ph = graph.placeholder(name)
    value = value.detach().contiguous().clone()
    ph.meta["val"] = value
    ep.constants[name] = value
    n.replace_all_uses_with(ph)
    return InputSpec(kind=InputKind.CONSTANT_TENSOR, arg=TensorArgument(name=name),
                     target=name, persistent=None)


def fold_constants(ep):
    """Folds ep's input-independent subgraphs in place (its graph and
    constants). Returns (new input specs, removed placeholder names)."""
    graph = ep.graph_module.graph
    consts = _constant_inputs(ep)
    values, computes = _evaluate(graph, consts)
    folded = {n for n in values if n.op == "call_function"}
    frontier = [n for n in graph.nodes if n in folded and computes[n]
                and isinstance(values[n], torch.Tensor)
                and any(u not in folded for u in n.users)]
    first_call = next((n for n in graph.nodes if n.op != "placeholder"), None)
    specs = [_replace(ep, graph, n, values[n], first_call) for n in frontier]
    for n in reversed(list(graph.nodes)):
        if n in folded and not n.users:
            graph.erase_node(n)
    removed = []
    for n in list(graph.nodes):
        if n.op == "placeholder" and n.name in consts and not n.users:
            removed.append(n.name)
            graph.erase_node(n)
    return specs, removed
