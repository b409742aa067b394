"""passrun.from_torch and passrun.plot, with the project's torch venv
(skipped, saying why, under a Python without torch or matplotlib)."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import passrun  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
try:
    import matplotlib
except ImportError:
    matplotlib = None


@unittest.skipUnless(torch, f"torch is not installed in {sys.executable}")
class FromTorch(unittest.TestCase):
    def test_exported_module_runs_and_matches(self):
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
        prog = passrun.from_torch(m, (torch.randn(2, 4),), name="seq")
        self.assertEqual(prog.source, "seq")
        self.assertGreaterEqual(prog.export_info["n_delegates"], 1)
        self.assertTrue(any(d.target_device == "cuda:0" for d in prog.delegates))
        res = passrun.run(prog, "cuda", device="sim", check=True)
        self.assertEqual(res.status, 0, res.error)
        self.assertTrue(res.run.match)


@unittest.skipUnless(matplotlib, f"matplotlib is not installed in {sys.executable}")
class Plots(unittest.TestCase):
    def test_png_files(self):
        ex = Path(__file__).resolve().parents[2] / "examples"
        rows = passrun.sweep([str(ex / "f8_copy_reuse.pg")], ["baseline", "cuda"],
                             {"skip_h2d_for_constants": [False, True]})
        with tempfile.TemporaryDirectory() as d:
            passrun.plot.heatmap(rows, path=Path(d) / "h.png")
            passrun.plot.copies_bars(rows, path=Path(d) / "b.png")
            for f in ("h.png", "b.png"):
                self.assertEqual((Path(d) / f).read_bytes()[:8], b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
