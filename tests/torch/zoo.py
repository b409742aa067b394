#!/usr/bin/env python3
"""zoo.py: one model of the zoo (examples/models/zoo.py), end to end.

    zoo.py --passrun PASSRUN MODEL [--modes grouped,per-op] [--keep DIR]
           [--device sim|cuda]

For each partition mode: export MODEL with tools/torch_export (its
defaults otherwise), run it with

    passrun --pipeline cuda --device=sim --verify-each --run --check
            --input NAME=NAME.npy ... --output-dir OUT model.pg

(--device=cuda with --device cuda, as tests/gpu/run.sh does) and compare
every output with eager PyTorch's: the largest absolute error must be at
most 1e-4 x max(1, the largest |value| of that output), and the bytes the
run moved (--stats=json's run block) must be the static numbers of the
method (copies per call, constants loaded once). One line per mode says
what happened; a failure says where (export, passrun
and its exit status, which output). Exit status: 0 every mode matches, 1
one failed, 2 a bad command line. Needs torch, torchvision and
transformers (tests/torch/zoo.sh skips the test without them).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "examples", "models"), os.path.join(ROOT, "tools", "torch_export")]

TOLERANCE = 1e-4
PASSRUN_FLAGS = ["--pipeline", "cuda", "--verify-each", "--run", "--check", "--stats=json"]
BYTE_KEYS = ("h2d_bytes_per_call", "d2h_bytes_per_call", "load_h2d_bytes")


def max_error(want, got):
    """(largest |got - want|, the bound it must stay under); NaN against NaN
    is equal, NaN against a number is an infinite error."""
    import numpy as np
    w, g = want.astype(np.float64), got.astype(np.float64)
    err = np.abs(g - w)
    err[np.isnan(w) & np.isnan(g)] = 0.0
    err[np.isnan(err)] = np.inf
    finite = np.abs(w[np.isfinite(w)])
    bound = TOLERANCE * max(1.0, float(finite.max()) if finite.size else 1.0)
    return (float(err.max()) if err.size else 0.0), bound


def compare(expected_dir, got_dir):
    """None when every output matches, else the first problem, in words."""
    import numpy as np
    for name in sorted(os.listdir(expected_dir)):
        got_path = os.path.join(got_dir, name)
        if not os.path.exists(got_path):
            return f"{name}: passrun wrote no such output"
        want, got = np.load(os.path.join(expected_dir, name)), np.load(got_path)
        if want.shape != got.shape or want.dtype != got.dtype:
            return f"{name}: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
        err, bound = max_error(want, got)
        if not err <= bound:
            return f"{name}: max abs error {err:.3g} > {bound:.3g}"
    return None


def run_passrun(passrun, d, device="sim"):
    inputs = []
    for f in sorted(os.listdir(os.path.join(d, "inputs"))):
        inputs += ["--input", f"{f[:-4]}={os.path.join(d, 'inputs', f)}"]
    out = os.path.join(d, "out")
    os.makedirs(out, exist_ok=True)
    cmd = [passrun, *PASSRUN_FLAGS, f"--device={device}", *inputs, "--output-dir", out, os.path.join(d, "model.pg")]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r, out


def first_lines(text, n=12):
    lines = [ln for ln in text.splitlines() if "W-CONSTANT-COPY" not in ln
             and "W-LAYOUT-CHANGED" not in ln]
    return "\n".join(lines[:n] + (["..."] if len(lines) > n else []))


def check(passrun, name, mode, d, device="sim"):
    """One model in one mode; returns None or why it failed."""
    from torch_export.examples import write_example
    from torch_export.export import ExportError
    from zoo import ZOO
    module, args = ZOO[name]()
    try:
        write_example(d, module, args, [f"zoo {name}, mode {mode}"], mode=mode)
    except (ExportError, NotImplementedError) as e:
        return f"export refused:\n{e}"
    except Exception as e:          # torch.export's own failures, or the exporter's bugs
        import traceback
        return f"export failed: {type(e).__name__}: {e}\n{traceback.format_exc(limit=-3)}"
    r, out = run_passrun(passrun, d, device)
    if r.returncode != 0:
        return f"passrun exited with {r.returncode}:\n{first_lines(r.stderr)}"
    return compare(os.path.join(d, "expected"), out) or static_bytes_differ(r.stdout)


def static_bytes_differ(stats_text):
    """None when the bytes the device layer moved (the run block of
    --stats=json) are the static numbers of the method that ran."""
    import json
    stats = json.loads(stats_text)
    run = stats["run"]
    static = stats["methods"][run["method"]]
    for key in BYTE_KEYS:
        if run[key] != static[key]:
            return f"{key}: the run moved {run[key]}, --stats=json says {static[key]}"
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passrun", required=True)
    ap.add_argument("--modes", default="grouped,per-op")
    ap.add_argument("--keep", help="keep each mode's files in KEEP/MODEL_MODE/")
    ap.add_argument("--device", default="sim", choices=["sim", "cuda"],
                    help="the device passrun runs the model on (default sim)")
    ap.add_argument("model")
    a = ap.parse_args(argv)
    from zoo import ZOO
    if a.model not in ZOO:
        print(f"zoo.py: no model {a.model!r}; choose from {', '.join(ZOO)}", file=sys.stderr)
        return 2
    status = 0
    for mode in a.modes.split(","):
        tmp = tempfile.mkdtemp(prefix=f"passrun-zoo-{a.model}-")
        try:
            why = check(a.passrun, a.model, mode, tmp, a.device)
        finally:
            if a.keep:
                shutil.copytree(tmp, os.path.join(a.keep, f"{a.model}_{mode}"), dirs_exist_ok=True)
            shutil.rmtree(tmp)
        print(f"{a.model} ({mode}): " + ("matches eager PyTorch" if why is None else f"FAILED: {why}"),
              flush=True)
        status |= why is not None
    return status


if __name__ == "__main__":
    sys.exit(main())
