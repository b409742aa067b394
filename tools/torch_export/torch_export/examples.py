"""examples.py: write an example directory: the exported program, its fixed
inputs and eager PyTorch's outputs.

    DIR/model.pg                the program (header: what it is, how to run it)
    DIR/inputs/NAME.npy         one file per user input (passrun --input NAME=...)
    DIR/expected/forward.I.npy  eager PyTorch's value of output I, in the order
                                of the program's return (write-backs of mutated
                                buffers and inputs are the values after the call),
                                the names passrun --output-dir writes
"""
import copy
import os

import numpy as np
import torch
from torch.export.graph_signature import InputKind, OutputKind

from . import export_module


def _np(t):
    t = t.detach().cpu().contiguous()
    return t.view(torch.int16).numpy() if t.dtype == torch.bfloat16 else t.numpy()


def eager_outputs(module, args, ep):
    """Output values in the exported program's output order, from eager."""
    m = copy.deepcopy(module).eval()
    with torch.no_grad():
        outs = m(*[a.clone() for a in args])
    flat = torch.utils._pytree.tree_leaves(outs)   # LSTM: (out, (h, c)), as export flattens
    user = iter(flat)
    named = dict(m.named_buffers())
    user_inputs = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    res = []
    for s in ep.graph_signature.output_specs:
        if s.kind == OutputKind.BUFFER_MUTATION:
            res.append(named[s.target])
        elif s.kind == OutputKind.USER_OUTPUT:
            res.append(next(user))
        else:
            raise ValueError(f"output kind {s.kind} has no eager value here")
    return res, user_inputs


def write_example(directory, module, args, header, **options):
    """options: export_module's (mode, ops, target_device, backend, fold)."""
    module = module.eval()
    ref = copy.deepcopy(module)
    text, info = export_module(module, args, header=header, **options)
    ep = info["exported_program"]
    outs, names = eager_outputs(ref, args, ep)
    os.makedirs(os.path.join(directory, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(directory, "expected"), exist_ok=True)
    with open(os.path.join(directory, "model.pg"), "w", encoding="utf-8") as f:
        f.write(text)
    for name, a in zip(names, args):
        np.save(os.path.join(directory, "inputs", name + ".npy"), _np(a))
    for i, o in enumerate(outs):
        np.save(os.path.join(directory, "expected", f"forward.{i}.npy"), _np(o))
    return info
