"""Running a pipeline over a program, and the program on a device.

run() does what one `passrun [OPTIONS] PROGRAM` does, in the same order
(tools/passrun.c): verify the program, run the pipeline, execute it
(execute/check/device), and derive --stats=json. Bad input raises (a program
that cannot be parsed: ProgramError; a bad pipeline, option or --set:
PipelineError); what the passes, the verifier and the runtime find is the
Result, whose .status is the tool's exit status (0, 1 refused, 4 mismatch,
5 runtime) and whose raise_for_status() raises it. Nothing is printed:
diagnostics are in .diagnostics (and .diagnostics_text, in the §5 format)."""
import ctypes
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Optional

from . import _lib
from ._lib import libs
from .errors import BY_STATUS, PipelineError
from .pipeline import as_pipeline, registry
from .program import Program, as_program


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    code: str
    pass_: str
    method: Optional[str]
    node: Optional[str]
    bytes: Optional[int]
    message: str

    @classmethod
    def from_json(cls, d):
        b = d.get("bytes")
        return cls(d["severity"], d["code"], d["pass"], d.get("method"), d.get("node"),
                   None if b is None or b < 0 else b, d["message"])


@dataclass(frozen=True)
class MethodStats:
    name: str
    nodes: int
    h2d_copies: int
    d2h_copies: int
    h2d_bytes_per_call: int
    d2h_bytes_per_call: int
    load_h2d_bytes: int
    inputs: list
    outputs: list
    planned_bytes: dict
    planned_lower_bound_bytes: dict

    @property
    def copies(self):
        return self.h2d_copies + self.d2h_copies

    @property
    def bytes_per_call(self):
        return self.h2d_bytes_per_call + self.d2h_bytes_per_call


@dataclass(frozen=True)
class PassRecord:
    name: str
    ms: float
    changed: bool


@dataclass(frozen=True)
class RunReport:
    device: str
    method: str
    iterations: int
    match: Optional[bool]     # None when not checked
    max_abs_err: Optional[float]
    max_rel_err: Optional[float]
    h2d_bytes_per_call: int
    d2h_bytes_per_call: int
    load_h2d_bytes: int
    ms_per_call: float


@dataclass(frozen=True)
class Stats:
    """--stats=json (docs/stats-json.md) as objects; raw is the parsed JSON as
    it came, keys this version does not model included."""
    methods: dict
    diagnostics: list
    passes: list
    run: Optional[RunReport]
    raw: dict = field(repr=False)

    @classmethod
    def from_json(cls, text):
        raw = json.loads(text)
        methods = {}
        for name, m in raw.get("methods", {}).items():
            known = {k: m.get(k, 0) for k in MethodStats.__dataclass_fields__ if k != "name"}
            methods[name] = MethodStats(name, **known)
        run = raw.get("run")
        report = None
        if run is not None:
            report = RunReport(run["device"], run.get("method", ""), run["iterations"],
                               run.get("match"), run.get("max_abs_err"), run.get("max_rel_err"),
                               run["h2d_bytes_per_call"], run["d2h_bytes_per_call"],
                               run["load_h2d_bytes"], run["ms_per_call"])
        return cls(methods, [Diagnostic.from_json(d) for d in raw.get("diagnostics", [])],
                   [PassRecord(p["name"], p["ms"], p["changed"]) for p in raw.get("passes", [])],
                   report, raw)


class Diags:
    """A C pr_diags, freed on exit."""

    def __init__(self, file, werror=False):
        self.c = _lib.Diags()
        libs.core.pr_diags_init(ctypes.byref(self.c), os.fsencode(str(file)))
        self.c.werror = werror
        self.ref = ctypes.byref(self.c)

    def items(self):
        sev = ("note", "warning", "error")
        return [Diagnostic(sev[d.severity], _lib.cstr(d.code), _lib.cstr(d.pass_),
                           _lib.cstr(d.method), _lib.cstr(d.node),
                           None if d.bytes < 0 else d.bytes, _lib.cstr(d.message))
                for d in (self.c.items[i] for i in range(self.c.n))]

    def text(self):
        m = _lib.MemStream()
        libs.core.pr_diags_print(self.ref, 0, m.fp)
        return m.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        libs.core.pr_diags_free(self.ref)


class Report:
    """A C pr_pass_report, freed on exit."""

    def __init__(self):
        self.c = _lib.PassReport()
        self.ref = ctypes.byref(self.c)
        libs.core.pr_pass_report_init(self.ref)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        libs.core.pr_pass_report_free(self.ref)


@dataclass
class Result:
    status: int                  # the tool's exit status: 0, 1, 4 or 5
    error: Optional[str]         # why it is not 0, as the tool prints it
    program: Program             # the program after the passes (partly placed when refused)
    original: Program            # the program as given (before any pass)
    pipeline_yaml: str           # the canonical pipeline after the overrides
    stats: Stats
    diagnostics_text: str        # the diagnostics in the §5 one-line format
    printed: str = ""            # what --print-after*/ print_after wrote

    @property
    def ok(self):
        return self.status == 0

    @property
    def diagnostics(self):
        return self.stats.diagnostics

    @property
    def passes(self):
        return self.stats.passes

    @property
    def run(self):
        return self.stats.run

    def raise_for_status(self):
        if self.status:
            raise BY_STATUS[self.status](self.error)
        return self


def _instrument(print_after_all, print_after, verify_each, stream):
    names = [p.encode() for p in print_after]
    arr = (ctypes.c_char_p * max(1, len(names)))(*names)
    o = _lib.InstrumentOpts(print_after_all, arr, len(names), verify_each,
                            stream.fp if stream else None, None)
    return o, arr


def _verify(prog, diags, cpl, label):
    core = libs.core
    bad = core.pr_verify(prog.handle, diags.ref, b"verifier")
    bad += core.pr_plan_check(prog.handle, diags.ref, b"verifier")
    core.pr_pipeline_check_methods(cpl.handle, prog.handle, diags.ref)
    if bad:
        return f"{label}: the program fails verification ({bad} error{'s' if bad > 1 else ''})"
    if core.pr_diags_errors(diags.ref):
        return f"{label}: warnings are errors (--werror)"
    return None


def run(program, pipeline=None, *, passes=None, sets=(), options=None, werror=False,
        verify_each=False, print_after=(), print_after_all=False, execute=False,
        iterations=1, device=None, check=False, seed=0, inputs=None, method=None,
        atol=0.0, rtol=0.0, plugins=(), plugin_dirs=(), no_default_plugins=False):
    """Runs a pipeline over a copy of program (a Program or a path) and
    returns a Result; program itself is not changed.

    pipeline: a shipped name ("cuda"), a .yaml path or a Pipeline; passes: an
    inline pipeline instead ('a,b{opt=1}'); sets: --set strings; options: a
    dict of the same ({"skip_h2d_for_constants": True}). execute, device,
    check, seed, iterations and inputs ({name: path.npy or numpy array}) run
    the result as --run/--device/--check/--seed/--input do (check and device
    imply execute)."""
    if passes is not None and pipeline is not None:
        raise PipelineError("give pipeline or passes, not both")
    from .pipeline import Pipeline
    recipe = Pipeline.inline(passes) if passes is not None else as_pipeline(pipeline)
    recipe = recipe.with_sets(*sets).with_options(options or {})
    reg = registry(plugins, plugin_dirs, no_default_plugins)
    given = as_program(program)
    label = given.source
    with recipe.build(reg) as cpl:
        if print_after:
            _check_print_after(cpl, print_after, reg)
        prog = given.copy()
        with Diags(label, werror) as diags, Report() as rep:
            stream = _lib.MemStream() if (print_after or print_after_all) else None
            status, error = 0, _verify(prog, diags, cpl, label)
            if error:
                status = 1
            else:
                instr, _keep = _instrument(print_after_all, print_after, verify_each, stream)
                err = libs.core.pr_pipeline_run(cpl.handle, reg.handle, prog.handle, diags.ref,
                                                ctypes.byref(instr), rep.ref)
                if err:
                    status = 1
                    error = f"{label}: {_take_err(err)}"
            run_json = None
            if not status and (execute or check or device or inputs):
                status, error, run_json = _execute(given, prog, method, iterations, device,
                                                   check, seed, inputs, atol, rtol, label)
            printed = stream.close() if stream else ""
            stats = _lib.take_string(libs.core.pr_stats_json(
                prog.handle, diags.ref, rep.ref, run_json.encode() if run_json else None))
            result = Result(status, error, prog, given, cpl.yaml(), Stats.from_json(stats),
                            diags.text(), printed)
    return result


def _check_print_after(cpl, names, reg):
    known = set(cpl.passes())
    for n in names:
        if n not in known:
            raise PipelineError(f"print_after={n}: no pass '{n}' in this pipeline "
                                f"({', '.join(sorted(known))})")


def _take_err(err):
    msg = libs.core.pr_err_message(err).decode("utf-8", "replace")
    libs.core.pr_err_free(err)
    return msg


def _input_files(inputs, tmp):
    """{name: path or array} -> [(name, path)]; arrays are saved as .npy in tmp."""
    out = []
    for i, (name, v) in enumerate((inputs or {}).items()):
        if not isinstance(v, (str, os.PathLike)):
            import numpy as np
            path = os.path.join(tmp, f"input{i}.npy")
            np.save(path, np.ascontiguousarray(v))
            v = path
        out.append((name, str(v)))
    return out


def _execute(original, placed, method, iterations, device, check, seed, inputs, atol, rtol,
             label):
    rt = libs.runtime
    with tempfile.TemporaryDirectory(prefix="passrun-inputs-") as tmp:
        files = _input_files(inputs, tmp)
        enc = [(n.encode(), os.fsencode(p)) for n, p in files]
        arr = (_lib.RunInput * max(1, len(enc)))(*[_lib.RunInput(n, p) for n, p in enc])
        ro = _lib.RunOptions(method.encode() if method else None, max(1, int(iterations)),
                             device.encode() if device else None, bool(check), int(seed),
                             len(enc), arr, None, atol, rtol)
        rr = _lib.RunReport()
        err = rt.prt_runtime_execute(original.handle if check else None, placed.handle,
                                    ctypes.byref(ro), ctypes.byref(rr))
    m = _lib.MemStream()
    rt.prt_run_report_json(ctypes.byref(rr), m.fp)
    run_json = m.close()
    status = rr.exit_status or (5 if err else 0)
    error = None
    if err:
        error = f"{label}: {_take_err(err)}"
    elif rr.checked and not rr.match:
        error = f"{label}: --check: {rr.mismatch.decode('utf-8', 'replace')}"
    return status, error, run_json


def has_cuda():
    return bool(libs.runtime.prt_runtime_has_cuda())
