"""The exporter as a user meets it: every op without a kernel in one
message with the line of the model it came from; subgraphs that depend on
no input folded into constants; export_module and the CLI alike by default.
Skipped without torch."""
import inspect
import os
import re
import sys
import tempfile
import unittest

from .common import HAVE_TORCH, NO_PASSRUN, ROOT, SKIP, run_cli, run_one

try:
    import torch
    from torch import nn
except ImportError:
    pass


def line_of(fn, text):
    """'FILE:LINE' of the line of fn's source that contains text."""
    src, first = inspect.getsourcelines(fn)
    for i, ln in enumerate(src):
        if text in ln:
            return f"{inspect.getsourcefile(fn)}:{first + i}"
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def refusal(module, args, **kw):
    from torch_export import export_module
    from torch_export.export import ExportError
    try:
        export_module(module, args, **kw)
    except ExportError as e:
        return str(e)
    raise AssertionError("the export was not refused")


if HAVE_TORCH:
    class TwoMissing(nn.Module):
        def forward(self, x):
            a = torch.digamma(x)
            b = torch.lgamma(x + 1.0)
            c = torch.digamma(b)
            return a + c

    class Sorted(nn.Module):
        def forward(self, x):
            values, indices = torch.sort(x)
            return values * 2.0, indices

    class PositionsAndMask(nn.Module):
        """x + positions, masked by a lower-triangular mask built from
        constants (arange, comparison, casts): all folded."""

        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.tensor([0.5, 1.0, 1.5, 2.0]))

        def forward(self, x):
            pos = torch.arange(x.shape[-1], dtype=torch.float32) * self.scale
            keep = (torch.arange(4)[None, :] <= torch.arange(4)[:, None]).to(torch.float32)
            return (x + pos) * keep

    class WeightUse(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))

        def forward(self, x):
            return x + self.w * 2.0


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Report(unittest.TestCase):
    def test_every_missing_op_in_one_message_with_its_line(self):
        msg = refusal(TwoMissing(), (torch.rand(3) + 0.5,))
        self.assertEqual(msg.count("no kernel"), 1, msg)
        self.assertIn("2 ops of this model: aten::digamma, aten::lgamma", msg)
        # digamma on two lines: one entry per line, each with its source
        self.assertIn(line_of(TwoMissing.forward, "a = torch.digamma") + " in forward: "
                      "a = torch.digamma(x)", msg)
        self.assertIn(line_of(TwoMissing.forward, "c = torch.digamma"), msg)
        self.assertIn(line_of(TwoMissing.forward, "torch.lgamma"), msg)
        self.assertNotIn("While executing", msg)
        self.assertNotIn("Traceback", msg)

    def test_an_op_with_several_results_is_one_entry_not_one_per_getitem(self):
        msg = refusal(Sorted(), (torch.randn(5),))
        self.assertIn("aten::sort", msg)
        self.assertNotIn("getitem", msg)
        self.assertEqual(len(re.findall(r"^  aten::", msg, re.M)), 1, msg)

    def test_a_declining_decomposition_is_reported_with_the_others(self):
        # a decomposition of the exporter's that declines (raises
        # NotImplementedError, as decomp.py's do for cases they cannot
        # lower) used to stop the export there, inside torch's tracing
        # text, and leave every other op unsaid
        from unittest import mock
        from torch_export import decomp

        def lgamma_lowering(x):
            raise NotImplementedError("torch_export: lgamma of a test: declined")
        table = decomp.table()
        with mock.patch.object(decomp, "table",
                               lambda: {**table, torch.ops.aten.lgamma.default: lgamma_lowering}):
            msg = refusal(TwoMissing(), (torch.rand(3) + 0.5,))
        self.assertIn("aten::digamma", msg)
        self.assertRegex(msg, r"aten::lgamma \(node 'lgamma'\)\n    from: .*"
                         r"test_user_facing.py:\d+ in forward: b = torch.lgamma\(x \+ 1.0\)\n"
                         r"    why: lgamma of a test: declined\n")
        self.assertNotIn("While executing", msg)


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Fold(unittest.TestCase):
    def export(self, m, args, **kw):
        from torch_export import export_module
        return export_module(m, args, **kw)

    def test_input_independent_ops_become_one_constant(self):
        text, _ = self.export(PositionsAndMask(), (torch.randn(4, 4),))
        self.assertNotIn("aten::arange", text)
        self.assertNotIn("aten::le", text)
        self.assertNotIn("aten::_to_copy", text)
        self.assertNotIn('"scale"', text)           # read only by folded ops: gone
        consts = re.findall(r'^  %(c_folded_\w+): f32\[([0-9,]*)\] = input constant', text, re.M)
        self.assertEqual(sorted(s for _, s in consts), ["4", "4,4"], text)

    def test_the_folded_values_are_pytorchs(self):
        from torch_export import export_module
        m = PositionsAndMask()
        text, info = export_module(m, (torch.randn(4, 4),))
        ep = info["exported_program"]
        pos = next(v for k, v in ep.constants.items() if k.startswith("c_folded_") and v.dim() == 1)
        self.assertTrue(torch.equal(pos, torch.arange(4.0) * m.scale))
        mask = next(v for k, v in ep.constants.items() if k.startswith("c_folded_") and v.dim() == 2)
        self.assertTrue(torch.equal(mask, torch.tril(torch.ones(4, 4))))

    def test_fold_false_keeps_the_ops(self):
        from torch_export.export import ExportError
        try:
            text, _ = self.export(PositionsAndMask(), (torch.randn(4, 4),), fold=False)
        except ExportError as e:     # arange, le, _to_copy without kernels
            text = str(e)
        self.assertIn("aten::arange", text)
        self.assertNotIn("c_folded_", text)

    def test_parameters_are_not_folded(self):
        text, _ = self.export(WeightUse(), (torch.randn(4, 4),))
        self.assertIn('input parameter "w"', text)
        self.assertIn("aten::mul.Scalar(%p_w, 2.0)", text)
        self.assertNotIn("c_folded_", text)

    def test_a_written_buffer_is_not_folded(self):
        from torch_export import models
        text, _ = self.export(*models.llama_step())
        self.assertIn("aten::index_put_(%b_layers_0_k_cache", text)

    @unittest.skipUnless(os.environ.get("PASSRUN"), NO_PASSRUN)
    def test_a_folded_program_matches_eager_through_passrun(self):
        from torch_export.examples import write_example
        with tempfile.TemporaryDirectory() as d:
            write_example(d, PositionsAndMask(), (torch.randn(4, 4),), ["fold"])
            r = run_one(d)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Examples(unittest.TestCase):
    def test_nested_outputs_are_flattened_as_export_does(self):
        # nn.LSTM returns (output, (h, c)): eager_outputs read one level
        # only and ran out of values (StopIteration)
        import numpy as np
        from torch_export.examples import write_example

        class Nested(nn.Module):
            def forward(self, x):
                return x + 1.0, (x * 2.0, (x - 3.0,))
        x = torch.randn(2, 3)
        with tempfile.TemporaryDirectory() as d:
            write_example(d, Nested(), (x,), ["nested"])
            got = [np.load(os.path.join(d, "expected", f"forward.{i}.npy")) for i in range(3)]
            self.assertFalse(os.path.exists(os.path.join(d, "expected", "forward.3.npy")))
        for g, w in zip(got, (x + 1.0, x * 2.0, x - 3.0)):
            self.assertTrue(np.array_equal(g, w.numpy()))


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Defaults(unittest.TestCase):
    def test_export_module_write_example_and_cli_share_defaults(self):
        from torch_export import DEFAULTS, export_module
        from torch_export.__main__ import parser
        sig = inspect.signature(export_module).parameters
        cli = parser().parse_args(["m:f"])
        for name, value in DEFAULTS.items():
            self.assertEqual(sig[name].default, value, name)
            self.assertEqual(getattr(cli, name), value, name)

    def test_cli_and_export_module_write_the_same_program(self):
        from torch_export import export_module, models
        text, _ = export_module(*models.transposed())
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "t.pg")
            r = run_cli("examples:transposed_param", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, encoding="utf-8") as f:
                cli_text = f.read()
        strip = lambda t: [ln for ln in t.splitlines() if not ln.startswith("#")]  # noqa: E731
        self.assertEqual(strip(cli_text), strip(text))

    def test_cli_exports_a_zoo_model_by_name(self):
        zoo = os.path.join(ROOT, "examples", "models", "zoo.py")
        r = run_cli(f"{zoo}:transformer_encoder_layer")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("aten::layer_norm", r.stdout)

    def test_cli_reports_every_missing_op_and_exits_1(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "m.py")
            with open(src, "w", encoding="utf-8") as f:
                f.write("import torch\n"
                        "class M(torch.nn.Module):\n"
                        "    def forward(self, x):\n"
                        "        return torch.digamma(x) + torch.lgamma(x)\n"
                        "def make():\n"
                        "    return M(), (torch.rand(3) + 0.5,)\n")
            r = run_cli(f"{src}:make")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"{src}:4 in forward: return torch.digamma(x) + torch.lgamma(x)", r.stderr)
        self.assertIn("aten::digamma", r.stderr)
        self.assertIn("aten::lgamma", r.stderr)
        self.assertEqual(r.stdout, "")


if not HAVE_TORCH:
    print(SKIP, file=sys.stderr)
