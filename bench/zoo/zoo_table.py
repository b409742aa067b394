#!/usr/bin/env python3
"""zoo_table.py: what placement does to each model of the zoo, as a table.

    PYTHON bench/zoo/zoo_table.py --passrun build/bin/passrun [--models a,b] [--calls N]

PYTHON is one with torch, torchvision and transformers
(tools/torch_export/setup_venv.sh prints it). For each model of
examples/models/zoo.py and each partition mode (grouped, per-op), the model
is exported with tools/torch_export's defaults, then

    passrun --pipeline P FILE --run=N --device=sim --stats=json --set ...

runs under three settings: baseline.yaml, cuda.yaml, and cuda.yaml with
skip_h2d_for_constants. Columns: the nodes and delegates of the exported
program; per setting the copies (h2d + d2h) and the bytes they move per
call (with skip_h2d_for_constants also the bytes loaded once); the cuda
pipeline's time (the sum of its passes, the best of the runs) and the time
of one call on the simulated device. A setting that refuses the program says
so with the first error code. Prints one markdown table (bench/README.md
holds the recorded one); nothing in ctest runs it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "examples", "models"), os.path.join(ROOT, "tools", "torch_export")]

SETTINGS = [("baseline", "baseline", []),
            ("cuda", "cuda", []),
            ("cuda + const", "cuda", ["--set", "skip_h2d_for_constants=true"])]


def passrun_stats(passrun, pg, pipeline, extra, calls):
    """(stats dict, None) or (None, why it was refused)."""
    cmd = [passrun, "--pipeline", pipeline, pg, f"--run={calls}", "--device=sim",
           "--stats=json"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        codes = [w for w in r.stderr.replace("[", " ").replace("]", " ").split() if w.startswith("E-")]
        if r.returncode == 5:   # the pipeline placed it; running it failed
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            return None, f"run failed: {lines[-1][-70:] if lines else 'exit 5'}"
        return None, f"refused ({codes[0] if codes else 'exit %d' % r.returncode})"
    return json.loads(r.stdout), None


def method_of(stats):
    m = stats.get("run", {}).get("method", "forward")
    return stats["methods"][m]


def copies_cell(stats, with_load=False):
    m = method_of(stats)
    cell = (f"{m['h2d_copies'] + m['d2h_copies']} "
            f"({m['h2d_bytes_per_call'] + m['d2h_bytes_per_call']} B)")
    return cell + (f", load {m['load_h2d_bytes']} B" if with_load else "")


def pipeline_ms(passrun, pg, best_of=3):
    best = None
    for _ in range(best_of):
        stats, _why = passrun_stats(passrun, pg, "cuda", [], 1)
        if stats is None:
            return None
        ms = sum(p["ms"] for p in stats.get("passes", []))
        best = ms if best is None else min(best, ms)
    return best


def row(passrun, name, mode, calls):
    import zoo
    from torch_export import export_module
    module, args = zoo.ZOO[name]()
    try:
        text, info = export_module(module, args, mode=mode)
    except Exception as e:   # the table says what the exporter said
        return f"| {name} | {mode} | export failed: {str(e).splitlines()[0][:80]} |" + " |" * 6
    with tempfile.TemporaryDirectory() as tmp:
        pg = os.path.join(tmp, "model.pg")
        with open(pg, "w") as f:
            f.write(text)
        nodes = sum(1 for line in text.splitlines() if line.strip().startswith("%"))
        cells, sim_ms = [], "-"
        for label, pipeline, extra in SETTINGS:
            stats, why = passrun_stats(passrun, pg, pipeline, extra, calls)
            if stats is None:
                cells.append(why)
                continue
            cells.append(copies_cell(stats, with_load=bool(extra)))
            if label == "cuda":
                sim_ms = f"{stats['run']['ms_per_call']:.3f}"
        ms = pipeline_ms(passrun, pg)
        ms_cell = f"{ms:.3f}" if ms is not None else "-"
    return (f"| {name} | {mode} | {nodes} | {info['n_delegates']} | "
            + " | ".join(cells) + f" | {ms_cell} | {sim_ms} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passrun", required=True)
    ap.add_argument("--models", help="comma-separated names (default: the whole zoo)")
    ap.add_argument("--calls", type=int, default=10, help="calls per run on sim")
    a = ap.parse_args()
    import zoo
    names = a.models.split(",") if a.models else list(zoo.ZOO)
    print("| model | mode | nodes | delegates | baseline: copies (bytes/call) | cuda | "
          "cuda + skip_h2d_for_constants | cuda pipeline ms | sim ms/call |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in names:
        for mode in ("grouped", "per-op"):
            print(row(a.passrun, name, mode, a.calls), flush=True)


if __name__ == "__main__":
    main()
