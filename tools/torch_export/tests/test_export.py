"""The exporter, end to end. Skipped, with a message, when torch is not
installed (CI has no torch); with PASSRUN set (ctest sets it) the exported
programs are also run with passrun and compared with eager PyTorch."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
    from torch import nn
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP = "torch is not installed: the exporter tests are skipped (pip install torch to run them)"
HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "tests", "torch", "run_one.sh"))


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Export(unittest.TestCase):
    def export(self, m, args, **kw):
        from torch_export import export_module
        text, info = export_module(m, args, **kw)
        return text, info

    def test_op_schemas_are_pytorchs_own(self):
        from torch_export import models
        text, _ = self.export(*models.accumulator())
        self.assertIn("op " + str(torch.ops.aten.linear.default._schema), text)
        self.assertIn("op custom::accumulate(Tensor(a0!) x, Tensor y) -> ()", text)

    def test_per_op_puts_each_matching_op_in_its_own_delegate(self):
        class M(nn.Module):
            def forward(self, x, y):
                return torch.relu(x + y) * y
        text, info = self.export(M(), (torch.randn(2, 3), torch.randn(2, 3)), mode="per-op")
        self.assertEqual(info["n_delegates"], 3)
        self.assertEqual(len(re.findall(r"^delegate @", text, re.M)), 3)
        text, info = self.export(M(), (torch.randn(2, 3), torch.randn(2, 3)), mode="grouped")
        self.assertEqual(info["n_delegates"], 1, text)

    def test_rule_and_target_device(self):
        class M(nn.Module):
            def forward(self, x, y):
                return torch.relu(x + y) * y
        text, info = self.export(M(), (torch.randn(2), torch.randn(2)), mode="per-op",
                                 ops="aten::mul", target_device="cuda:1")
        self.assertEqual(info["n_delegates"], 1)
        self.assertIn('target_device="cuda:1"', text)
        self.assertRegex(text, r"\n  %relu: f32\[2\] = aten::relu\(")   # on the host

    def test_grouped_never_makes_a_cycle(self):
        # a = x + 1 (delegated); b = index_select(a) (host); c = a * b: c may
        # not join a's delegate, which would then both feed and read b.
        class M(nn.Module):
            def forward(self, x, i):
                a = x + 1.0
                b = torch.index_select(a, 0, i)
                return a * b
        text, info = self.export(M(), (torch.randn(3, 2), torch.tensor([1, 1, 0])), mode="grouped")
        self.assertEqual(info["n_delegates"], 2, text)

    def test_transposed_parameter_keeps_its_strides_and_bytes(self):
        from torch_export.export import storage_bytes
        from torch_export import models
        m, a = models.transposed()
        text, _ = self.export(m, a)
        self.assertIn('f32[4,5]{strides=[1,4]} = input parameter "w"', text)
        blob = re.search(r'blob @p_w hex"([0-9a-f]*)"', text).group(1)
        self.assertEqual(bytes.fromhex(blob), m.w.detach().t().contiguous().numpy().tobytes())
        self.assertEqual(storage_bytes(m.w), bytes.fromhex(blob))

    def test_mutated_buffer_is_written_in_place_and_written_back(self):
        from torch_export import models
        text, _ = self.export(*models.llama_step())
        self.assertIn("aten::index_put_(%b_layers_0_k_cache, [%input_pos]", text)
        self.assertIn('%b_layers_0_k_cache -> buffer "layers.0.k_cache"', text)
        # the non-persistent tables are buffers too, and only read
        self.assertNotIn('-> buffer "freqs_cos"', text)

    def test_op_without_kernel_is_refused_with_its_name(self):
        from torch_export.export import ExportError

        class M(nn.Module):
            def forward(self, x):
                return torch.cumsum(x, 0)
        with self.assertRaises(ExportError) as cm:
            self.export(M(), (torch.randn(4),))
        self.assertIn("aten::cumsum", str(cm.exception))
        self.assertIn("no kernel", str(cm.exception))

    def test_conv_with_padding_is_refused(self):
        m = nn.Conv2d(1, 1, 3, padding=1)
        with self.assertRaises(Exception) as cm:
            self.export(m, (torch.randn(1, 1, 4, 4),))
        self.assertIn("padding=0", str(cm.exception))

    @unittest.skipUnless(os.environ.get("PASSRUN"), "PASSRUN is not set: not running passrun")
    def test_every_example_matches_eager_through_passrun(self):
        from torch_export import models
        from torch_export.examples import write_example
        tmp = tempfile.mkdtemp()
        try:
            for name, factory in models.EXAMPLES.items():
                for mode in ("per-op", "grouped"):
                    d = os.path.join(tmp, f"{name}_{mode}")
                    m, a = factory()
                    write_example(d, m, a, [name], mode=mode)
                    r = subprocess.run(["sh", COMPARE, os.environ["PASSRUN"], d, "sim"],
                                       capture_output=True, text=True)
                    self.assertEqual(r.returncode, 0, f"{name} {mode}:\n{r.stdout}{r.stderr}")
        finally:
            shutil.rmtree(tmp)


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Cli(unittest.TestCase):
    def test_cli_writes_a_program(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "t.pg")
            r = subprocess.run([sys.executable, "-m", "torch_export", "examples:transposed_param",
                                "-o", out, "--mode", "per-op"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": os.path.dirname(HERE)})
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                self.assertTrue(f.read().startswith("# Exported by tools/torch_export"))

    def test_cli_names_a_missing_example(self):
        r = subprocess.run([sys.executable, "-m", "torch_export", "examples:nope"],
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": os.path.dirname(HERE)})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no example 'nope'", r.stderr)


if not HAVE_TORCH:
    print(SKIP, file=sys.stderr)
