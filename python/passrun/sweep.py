"""Sweeps: programs x pipelines x an option grid -> one Row per cell.

A cell is one run() of one program under one pipeline with one combination
of the grid's options; it never stops the sweep: a pipeline that refuses the
program, an option the pipeline does not know, a mismatch under check are
that cell's status and message. The figures of a cell whose status is not
"ok" are left empty (None): a partly placed program's copy counts would sit
next to real ones and mislead. Every row carries its provenance: the program's
hash, the canonical pipeline after overrides, the options and seed, and the
package version. Cells run in worker processes when jobs > 1."""
import csv
import glob
import itertools
import json
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from typing import Optional

from .errors import PassrunError
from .pipeline import Pipeline, as_pipeline, shipped_pipelines
from .program import Program

STATUS = {0: "ok", 1: "refused", 2: "error", 3: "error", 4: "mismatch", 5: "runtime-error"}


@dataclass
class Row:
    program: str
    pipeline: str
    options: dict
    status: str                 # ok, refused, mismatch, runtime-error, error
    exit_status: int
    message: str = ""
    nodes: Optional[int] = None
    h2d_copies: Optional[int] = None
    d2h_copies: Optional[int] = None
    h2d_bytes_per_call: Optional[int] = None
    d2h_bytes_per_call: Optional[int] = None
    load_h2d_bytes: Optional[int] = None
    diagnostics: dict = field(default_factory=dict)   # code -> count
    checked: bool = False
    match: Optional[bool] = None
    max_abs_err: Optional[float] = None
    program_hash: str = ""
    pipeline_yaml: str = ""
    seed: int = 0
    passrun_version: str = ""

    @property
    def copies(self):
        return None if self.h2d_copies is None else self.h2d_copies + self.d2h_copies

    @property
    def bytes_per_call(self):
        if self.h2d_bytes_per_call is None:
            return None
        return self.h2d_bytes_per_call + self.d2h_bytes_per_call


def _programs(programs):
    """[(label, Program or path)]: paths (globs expand), Programs, (label, x) pairs,
    or a dict {label: x}."""
    items = programs.items() if isinstance(programs, dict) else programs
    out = []
    for x in items:
        if isinstance(x, tuple):
            out.append(x)
        elif isinstance(x, Program):
            out.append((x.source, x))
        elif any(c in str(x) for c in "*?["):
            out.extend((p, p) for p in sorted(glob.glob(str(x))))
        else:
            out.append((str(x), str(x)))
    return out


def _pipelines(pipelines):
    """[(label, Pipeline)]; a name with a glob ("ablate/*") matches the shipped ones."""
    out = []
    for p in pipelines:
        if isinstance(p, str) and any(c in p for c in "*?[") and not p.endswith((".yaml", ".yml")):
            names = shipped_pipelines(p)
            if not names:
                raise PassrunError(f"--pipelines {p}: matches no shipped pipeline")
            out.extend((n, Pipeline.load(n)) for n in names)
        elif isinstance(p, tuple):
            out.append((p[0], as_pipeline(p[1])))
        else:
            pl = as_pipeline(p)
            out.append((pl.label, pl))
    return out


def grid_cells(grid):
    """{name: [v, ...]} -> every combination as a dict (one empty one for no grid)."""
    grid = grid or {}
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def _cell(task):
    (plabel, prog), (llabel, pipe), options, kw = task
    from . import __version__
    from .run import run
    row = Row(plabel, llabel, dict(options), "error", 2, seed=kw.get("seed", 0),
              passrun_version=__version__)
    try:
        p = prog if isinstance(prog, Program) else Program.load(prog)
        row.program_hash = p.hash
        res = run(p, pipe, options=options, **kw)
    except PassrunError as e:
        row.exit_status, row.message = e.status, e.message
        row.status = STATUS.get(e.status, "error")
        return row
    row.exit_status, row.status = res.status, STATUS[res.status]
    row.message = res.error or ""
    row.pipeline_yaml = res.pipeline_yaml
    for d in res.diagnostics:
        row.diagnostics[d.code] = row.diagnostics.get(d.code, 0) + 1
    if res.run is not None:
        row.checked = kw.get("check", False)
        row.match = res.run.match if row.checked else None
        row.max_abs_err = res.run.max_abs_err
    if res.ok:
        _figures(row, res.stats.methods.values())
    return row


def _figures(row, methods):
    """Totals over the methods."""
    keys = ("nodes", "h2d_copies", "d2h_copies", "h2d_bytes_per_call", "d2h_bytes_per_call",
            "load_h2d_bytes")
    for k in keys:
        setattr(row, k, sum(getattr(m, k) for m in methods))


def sweep(programs, pipelines, grid=None, *, sets=(), jobs=1, execute=False, check=False,
          device=None, seed=0, iterations=1, mp_context=None, **run_options):
    """Rows for every program x pipeline x grid cell, in that order.

    programs: paths (globs expand), Programs, (label, program) pairs or a
    dict; pipelines: shipped names (globs match them: "ablate/*"), .yaml
    paths, Pipelines or (label, pipeline) pairs; grid: {option: [values]}
    (pipeline options or PASS.OPTION); sets: --set strings for every cell.
    check/device/execute run every cell's result (on "sim" unless device says
    otherwise). jobs > 1 runs cells in that many processes."""
    pipes = _pipelines(pipelines)
    pipes = [(label, p.with_sets(*sets)) for label, p in pipes]
    kw = dict(run_options, execute=execute, check=check, seed=seed, iterations=iterations)
    if execute or check or device:
        kw["device"] = device or "sim"
    tasks = [(prog, pipe, cell, kw) for prog in _programs(programs) for pipe in pipes
             for cell in grid_cells(grid)]
    if jobs <= 1 or len(tasks) <= 1:
        return [_cell(t) for t in tasks]
    if mp_context is None:
        import multiprocessing
        methods = multiprocessing.get_all_start_methods()
        mp_context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=mp_context) as ex:
        return list(ex.map(_cell, tasks, chunksize=max(1, len(tasks) // (4 * jobs))))


# ---- CSV -------------------------------------------------------------------

COLUMNS = [f.name for f in fields(Row)]


def _csv_value(k, v):
    if k == "options":
        return json.dumps(v, sort_keys=True)
    if k == "diagnostics":
        return ";".join(f"{c}({n})" for c, n in sorted(v.items()))
    return "" if v is None else v


def write_csv(rows, out):
    """Rows as CSV (a path or a text file): options as JSON, diagnostics as
    CODE(count);..., empty cells for None."""
    f = open(out, "w", newline="") if isinstance(out, (str, os.PathLike)) else out
    try:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            d = asdict(r)
            w.writerow([_csv_value(k, d[k]) for k in COLUMNS])
    finally:
        if f is not out:
            f.close()


def _parse(k, text, ftype):
    if k == "options":
        return json.loads(text)
    if k == "diagnostics":
        out = {}
        for part in filter(None, text.split(";")):
            code, n = part[:-1].split("(")
            out[code] = int(n)
        return out
    if text == "":
        return None if k not in ("message", "program_hash", "pipeline_yaml",
                                 "passrun_version") else ""
    if ftype in (int, Optional[int]) or k in ("exit_status", "seed"):
        return int(text)
    if k == "max_abs_err":
        return float(text)
    if k in ("checked", "match"):
        return text == "True"
    return text


def read_csv(path):
    """The rows write_csv wrote."""
    types = {f.name: f.type for f in fields(Row)}
    with open(path, newline="") as f:
        return [Row(**{k: _parse(k, v, types[k]) for k, v in rec.items()})
                for rec in csv.DictReader(f)]
