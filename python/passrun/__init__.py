"""passrun from Python: programs, pipelines, runs and sweeps in-process.

    import passrun
    prog = passrun.Program.load("examples/f8_copy_reuse.pg")
    res = passrun.run(prog, "cuda", options={"skip_h2d_for_method_inputs": True},
                      device="sim", check=True)
    res.stats.methods["forward"].h2d_bytes_per_call
    for node in res.program.method("forward"): ...
    rows = passrun.sweep(["examples/*.pg"], ["baseline", "cuda", "ablate/*"],
                         grid={"skip_h2d_for_constants": [False, True]}, jobs=2)

See docs/python.md."""
from .errors import (LibraryNotFoundError, MismatchError, PassError, PassrunError,
                     PipelineError, ProgramError, RuntimeFailure)
from .pipeline import Pipeline, Registry, registry, shipped_pipelines
from .program import Delegate, Graph, Node, Program, Spec
from .run import Diagnostic, MethodStats, PassRecord, Result, RunReport, Stats, has_cuda, run
from .sweep import Row, read_csv, sweep, write_csv
from . import plot  # noqa: F401  (imports matplotlib only when drawing)
from .torch import from_torch

__version__ = "0.1.0"

__all__ = ["Program", "Graph", "Node", "Spec", "Delegate", "Pipeline", "Registry", "registry",
           "shipped_pipelines", "run", "Result", "Stats", "MethodStats", "Diagnostic",
           "PassRecord", "RunReport", "has_cuda", "sweep", "Row", "write_csv", "read_csv",
           "from_torch", "PassrunError", "PassError", "PipelineError", "ProgramError",
           "MismatchError", "RuntimeFailure", "LibraryNotFoundError", "__version__"]
