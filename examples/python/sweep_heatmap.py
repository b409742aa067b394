"""Sweep pipelines x skip flags over an exported model and a few examples,
check every cell on the simulated device, and draw the bytes-per-call heatmap.

    python examples/python/sweep_heatmap.py --out docs/images/sweep_heatmap.png

Run with a Python that has torch and matplotlib (the project's venv:
tools/torch_export/setup_venv.sh); from the source tree, or with passrun
installed (PASSRUN_LIB_DIR names the library's folder otherwise). Exits 77
(skipped) when torch or matplotlib is missing."""
import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))    # the in-tree package, when not installed

import passrun  # noqa: E402

try:
    import matplotlib  # noqa: F401
    import torch
except ImportError as e:
    print(f"sweep_heatmap.py: skipped: {e.name} is not installed in {sys.executable}")
    sys.exit(77)

from passrun import plot  # noqa: E402

EXAMPLES = ["f1_transposed_weight", "f2_relu_between_delegates", "f5_transposed_constant_refused",
            "f6_shared_input", "f8_copy_reuse", "f9_per_call_copies", "f10_device_constants"]
PIPELINES = ["baseline", "cuda", "ablate/*"]
GRID = {"skip_h2d_for_method_inputs": [False, True], "skip_h2d_for_constants": [False, True]}


class Tiny(torch.nn.Module):
    """Two linear layers around a ReLU, with random weights (seeded)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="sweep_heatmap.png", help="the heatmap (PNG)")
    ap.add_argument("--bars", help="also the copies-per-pipeline bar chart (PNG)")
    ap.add_argument("--csv", help="also the rows as CSV")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    a = ap.parse_args()

    torch.manual_seed(0)
    model = passrun.from_torch(Tiny(), (torch.randn(2, 8),), name="tiny_mlp (torch)")
    programs = [("tiny_mlp (torch)", model)]
    programs += [(name, str(ROOT / "examples" / f"{name}.pg")) for name in EXAMPLES]

    rows = passrun.sweep(programs, PIPELINES, GRID, check=True, device="sim", jobs=a.jobs)
    bad = [r for r in rows if r.status == "error"]
    for r in bad:
        print(f"{r.program} {r.pipeline} {r.options}: {r.message}", file=sys.stderr)
    counts = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    print(f"{len(rows)} rows: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))

    plot.heatmap(rows, reference="cuda", path=a.out)
    print(f"wrote {a.out}")
    if a.bars:
        plot.copies_bars(rows, path=a.bars)
        print(f"wrote {a.bars}")
    if a.csv:
        passrun.write_csv(rows, a.csv)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
