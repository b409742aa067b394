"""The zoo harness without torch: CMake's list of zoo tests is the zoo, and
zoo.py's comparison rule is max |err| <= 1e-4 x max(1, max |output|)
(skipped without numpy)."""
import ast
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

try:
    import numpy as np
except ImportError:
    np = None


def zoo_keys():
    """The keys of ZOO in examples/models/zoo.py, read with ast (no torch)."""
    with open(os.path.join(ROOT, "examples", "models", "zoo.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ZOO" for t in node.targets):
            return [k.value for k in node.value.keys]
    raise AssertionError("zoo.py has no ZOO = {...}")


class ZooList(unittest.TestCase):
    def test_cmake_registers_every_model(self):
        # the regex tests/torch/CMakeLists.txt applies to zoo.py's lines
        with open(os.path.join(ROOT, "examples", "models", "zoo.py"), encoding="utf-8") as f:
            seen = re.findall(r'^    "([a-z0-9_]+)": ', f.read(), re.M)
        self.assertEqual(seen, zoo_keys())
        self.assertGreaterEqual(len(seen), 16)

    def test_every_attention_model_has_both_implementations(self):
        keys = zoo_keys()
        for family in ("gpt2", "bert", "llama", "vit"):
            self.assertIn(f"{family}_sdpa", keys)
            self.assertIn(f"{family}_eager", keys)


@unittest.skipUnless(np is not None, "numpy is not installed: zoo.py's comparison is not tested")
class Tolerance(unittest.TestCase):
    def compare(self, want, got):
        import tempfile
        import zoo
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            np.save(os.path.join(a, "forward.0.npy"), np.array(want, dtype=np.float32))
            np.save(os.path.join(b, "forward.0.npy"), np.array(got, dtype=np.float32))
            return zoo.compare(a, b)

    def test_bound_scales_with_the_largest_value(self):
        self.assertIsNone(self.compare([1000.0, 0.0], [1000.0, 0.09]))
        self.assertIn("max abs error", self.compare([1000.0, 0.0], [1000.0, 0.11]))

    def test_small_outputs_use_an_absolute_bound(self):
        self.assertIsNone(self.compare([0.001, 0.0], [0.001, 0.00009]))
        self.assertIsNotNone(self.compare([0.001, 0.0], [0.001, 0.00011]))

    def test_nan(self):
        self.assertIsNone(self.compare([float("nan"), 1.0], [float("nan"), 1.0]))
        self.assertIsNotNone(self.compare([1.0, 1.0], [float("nan"), 1.0]))

    def test_shape_and_missing_output(self):
        self.assertIn("expected", self.compare([1.0, 2.0], [1.0, 2.0, 3.0]))
        import tempfile
        import zoo
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            np.save(os.path.join(a, "forward.0.npy"), np.zeros(2, np.float32))
            self.assertIn("no such output", zoo.compare(a, b))


if __name__ == "__main__":
    unittest.main()
