"""torch_export: PyTorch nn.Module -> passrun program (.pg).

    from torch_export import export_module
    text, info = export_module(model, (x,), mode="grouped", target_device="cuda:0")

export_module runs torch.export, the decompositions in decomp.py,
reinplacing and the kernel check (export.py), partitions the graph
(partition.py) and writes the text (writer.py). torch is imported lazily so
that `import torch_export` works without it (the tests skip then).
"""


def rule_from(ops):
    """A delegation rule: None -> the compute ops (supported.COMPUTE_OPS); a
    string of comma-separated op names or prefixes ("aten::add,aten::mul"),
    or a set of names; a callable is used as is."""
    from . import supported
    if ops is None:
        return lambda name: name in supported.COMPUTE_OPS
    if callable(ops):
        return ops
    names = [s.strip() for s in ops.split(",")] if isinstance(ops, str) else list(ops)
    return lambda name: any(name == s or name.split(".")[0] == s for s in names)


# The defaults of export_module, write_example and the command line (one
# place, so that `python3 -m torch_export` and a script export alike).
DEFAULTS = {"mode": "grouped", "ops": None, "target_device": "cuda:0",
            "backend": "CudaBackend", "fold": True}


def export_module(module, args, mode=DEFAULTS["mode"], ops=DEFAULTS["ops"],
                  target_device=DEFAULTS["target_device"], backend=DEFAULTS["backend"],
                  header=(), fold=DEFAULTS["fold"]):
    """Returns (text, info); info has 'exported_program' (after the
    decompositions and constant folding), 'n_delegates'. fold=False keeps
    the input-independent subgraphs (fold.py) as ops."""
    import torch
    from .export import Program, decomposition_table
    from .writer import Writer
    module = module.eval()
    ep = torch.export.export(module, tuple(args))
    refusals = {}
    ep = ep.run_decompositions(decomposition_table(refusals))
    prog = Program(ep, refusals=refusals, fold=fold)
    w = Writer(prog, ep, rule_from(ops), mode, target_device, backend)
    text = w.text(header)
    return text, {"exported_program": ep, "n_delegates": w.n_delegates}
