"""Programs straight from PyTorch, through the project's exporter
(tools/torch_export: torch.export, decompositions, partitioning into
delegates). The exporter is imported as `torch_export`: from the Python path
when it is there, else from the source tree this package sits in, else from
$PASSRUN_TORCH_EXPORT (the folder that holds the torch_export package)."""
import importlib
import os
import sys
from pathlib import Path

from .errors import PassrunError


def _exporter():
    try:
        return importlib.import_module("torch_export")
    except ImportError:
        pass
    here = Path(__file__).resolve().parent.parent.parent / "tools" / "torch_export"
    for d in (os.environ.get("PASSRUN_TORCH_EXPORT"), here):
        if d and (Path(d) / "torch_export" / "__init__.py").exists():
            sys.path.insert(0, str(d))
            return importlib.import_module("torch_export")
    raise PassrunError("the exporter (torch_export) is not importable: run from the source "
                       "tree, or set PASSRUN_TORCH_EXPORT to tools/torch_export")


def from_torch(module, args, name=None, **export_options):
    """A Program from an nn.Module and its example inputs (a tuple), exported
    with torch_export.export_module (mode="grouped", ops=None,
    target_device="cuda:0", backend="CudaBackend", fold=True). The
    exporter's info ({"n_delegates", "exported_program"}) is kept as
    program.export_info."""
    from .program import Program
    text, info = _exporter().export_module(module, tuple(args), **export_options)
    label = name or f"<torch {type(module).__name__}>"
    prog = Program.from_text(text, label)
    prog.export_info = info
    return prog
