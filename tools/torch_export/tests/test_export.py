"""The exporter, end to end. Skipped, with a message, when torch is not
installed (CI has no torch); with PASSRUN set (ctest sets it) the exported
programs are also run with passrun and compared with eager PyTorch."""
import os
import re
import sys
import tempfile
import unittest

from .common import HAVE_TORCH, NO_PASSRUN, SKIP, assert_match_eager, ready, run_cli

try:
    import torch
    from torch import nn
except ImportError:
    pass


if HAVE_TORCH:
    class CnnLayers(nn.Module):
        """The layers of torchvision's CNNs, with the arguments they vary:
        strided, padded, dilated, grouped and depthwise convs on a
        channels-last weight, eval batch norm with random statistics, max
        pooling with ceil_mode, average and adaptive pooling, relu6,
        hardswish, hardsigmoid and silu."""

        def __init__(self):
            super().__init__()
            torch.manual_seed(3)
            self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.dw = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8)
            self.gc = nn.Conv2d(8, 4, 1, groups=2)
            self.c4 = nn.Conv2d(4, 6, (3, 2), stride=(1, 2), padding=(1, 0))
            self.c4.weight.data = self.c4.weight.data.to(memory_format=torch.channels_last)
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            nn.init.uniform_(self.bn.weight, 0.5, 1.5)

        def forward(self, x):
            x = nn.functional.relu6(self.bn(self.c1(x)))
            x = nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True)
            x = nn.functional.hardswish(self.dw(x))
            x = self.c4(nn.functional.hardsigmoid(self.gc(x)) * x[:, :4])
            x = nn.functional.silu(nn.functional.avg_pool2d(x, 2, 1, 1, count_include_pad=False))
            return nn.functional.adaptive_avg_pool2d(x, (2, 3))

    class AudioStem(nn.Module):
        """A conv1d audio front end: strided conv, batch norm, gelu, a
        grouped conv, 1-d pooling."""

        def __init__(self):
            super().__init__()
            torch.manual_seed(4)
            self.c1 = nn.Conv1d(1, 8, 10, stride=5, bias=False)
            self.bn = nn.BatchNorm1d(8)
            self.c2 = nn.Conv1d(8, 8, 3, stride=2, padding=1, groups=2)
            self.bn.running_var.uniform_(0.5, 2)

        def forward(self, x):
            x = nn.functional.gelu(self.bn(self.c1(x)))
            x = nn.functional.max_pool1d(nn.functional.silu(self.c2(x)), 2)
            return nn.functional.adaptive_avg_pool1d(nn.functional.avg_pool1d(x, 3, ceil_mode=True), 3)

    class UpsampleWithIndices(nn.Module):
        """A transposed conv (stride, padding, output_padding, groups) after
        batch norm, and max pooling whose indices are returned too (the
        two-result op, read through getitems)."""

        def __init__(self):
            super().__init__()
            torch.manual_seed(5)
            self.bn = nn.BatchNorm2d(4)
            self.up = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)

        def forward(self, x):
            v, i = nn.functional.max_pool2d(self.up(self.bn(x)), 2, return_indices=True)
            return v, i


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
                return torch.flip(x, [0])   # cumsum, the op this used, has a kernel now
        with self.assertRaises(ExportError) as cm:
            self.export(M(), (torch.randn(4),))
        self.assertIn("aten::flip", str(cm.exception))
        self.assertIn("no kernel", str(cm.exception))

    def test_cnn_layers_are_single_kernel_calls(self):
        # conv (any padding, dilation, groups) is aten::convolution, not an
        # im2col lowering; eval batch norm and max pooling are their
        # single-result forms (no tuple, no getitem); the hard activations
        # and silu are kept whole
        text, _ = self.export(CnnLayers(), (torch.randn(1, 3, 12, 12),), mode="grouped")
        body = text[text.index("delegate @"):text.index("\n}\n")]
        for op in ("aten::convolution(", "aten::batch_norm(", "aten::max_pool2d(",
                   "aten::avg_pool2d(", "aten::_adaptive_avg_pool2d(", "aten::hardswish(",
                   "aten::hardsigmoid(", "aten::hardtanh(", "aten::silu("):
            self.assertIn(op, body)
        for op in ("_native_batch_norm_legit", "max_pool2d_with_indices", "getitem %", "aten::cat(",
                   "aten::clamp", "aten::sigmoid("):
            self.assertNotIn(op, body)
        self.assertEqual(body.count("aten::convolution("), 4)

    def test_single_result_forms_keep_an_op_whose_other_results_are_read(self):
        from torch_export import decomp

        class M(nn.Module):
            def forward(self, x):
                v, i = nn.functional.max_pool2d(x, 2, return_indices=True)
                return v, i, nn.functional.max_pool2d(x, 3, 1)
        ep = torch.export.export(M(), (torch.randn(1, 1, 4, 4),)).run_decompositions(decomp.table())
        self.assertEqual(decomp.single_result_forms(ep.graph_module), 1)
        ops = [n.target for n in ep.graph.nodes if n.op == "call_function"]
        self.assertEqual(ops.count(torch.ops.aten.max_pool2d_with_indices.default), 1)
        self.assertEqual(ops.count(torch.ops.aten.max_pool2d.default), 1)
        m = next(n for n in ep.graph.nodes if n.target is torch.ops.aten.max_pool2d.default)
        self.assertEqual(list(m.args[1:3]), [[3, 3], [1, 1]])
        self.assertEqual(tuple(m.meta["val"].shape), (1, 1, 2, 2))

    @unittest.skipUnless(os.environ.get("PASSRUN"), NO_PASSRUN)
    def test_cnn_layers_match_eager_through_passrun(self):
        assert_match_eager(self, [
            ("cnn_layers", ready(CnnLayers(), (torch.randn(1, 3, 12, 12),))),
            ("audio_stem", ready(AudioStem(), (torch.randn(2, 1, 160),))),
            ("upsample", ready(UpsampleWithIndices(), (torch.randn(1, 4, 5, 5),)))])

    @unittest.skipUnless(os.environ.get("PASSRUN"), NO_PASSRUN)
    def test_every_example_matches_eager_through_passrun(self):
        from torch_export import models
        assert_match_eager(self, models.EXAMPLES.items())


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Cli(unittest.TestCase):
    def test_cli_writes_a_program(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "t.pg")
            r = run_cli("examples:transposed_param", "-o", out, "--mode", "per-op")
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                self.assertTrue(f.read().startswith("# Exported by tools/torch_export"))

    def test_cli_names_a_missing_example(self):
        r = run_cli("examples:nope")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no example 'nope'", r.stderr)


if not HAVE_TORCH:
    print(SKIP, file=sys.stderr)
