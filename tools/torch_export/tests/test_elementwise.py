"""The elementwise family through the exporter (issue 12): comparisons with
tensors and numbers, logical and bitwise ops, pow, sqrt/rsqrt, where,
masked_fill, casts, `1 - x` (rsub), `//` and rounding divisions, maximum,
minimum, every form of clamp and round (with decimals too), on f32,
int64, bool, f16 and bf16 values. Each module exports in both partition modes and,
with PASSRUN set (ctest sets it), runs under passrun --check and matches
eager PyTorch. Skipped, with a message, without torch."""
import os
import unittest

from .common import HAVE_TORCH, NO_PASSRUN, SKIP, assert_match_eager, ready

try:
    import torch
    from torch import nn
except ImportError:
    pass


if HAVE_TORCH:
    class Masks(nn.Module):
        """Attention-mask arithmetic as the HF models write it: comparisons of
        int64 positions, bool logic, where and masked_fill, a cast of the mask."""

        def forward(self, x, ids):
            pos = torch.arange(ids.shape[-1])
            causal = pos[None, :] <= pos[:, None]
            keep = causal & (ids != 0)[:, None, :] | (ids == 7)[:, None, :]
            scores = x.masked_fill(~keep, -1e9)
            scores = torch.where(keep, scores, torch.finfo(x.dtype).min)
            bias = (1 - keep.to(x.dtype)) * -10000.0
            return scores + bias, keep, (ids >= 3) ^ (ids < 5), torch.logical_not(x > 0)

    class Arith(nn.Module):
        """pow in every overload, sqrt/rsqrt, integer arithmetic that stays
        integer, true and floor division, mixed dtypes."""

        def forward(self, x, i):
            a = x ** 2 + torch.rsqrt(x.abs() + 1) + torch.sqrt(x * x) + 2 ** x
            b = i ** 2 + i * 3 - 1 + i // 2 + torch.div(i, -3, rounding_mode="trunc")
            c = i / 4 + x.pow(i.to(torch.float32)) + (x // 0.75)
            return a, b, c, (i & 6) | 1, ~i

    class Half(nn.Module):
        """f16 in and out, a cast up and back down."""

        def forward(self, h):
            y = (h * 2 + 0.5).float().sqrt()
            return y.half() - h, (h > 1).to(torch.int64) + 1

    class Clamps(nn.Module):
        """clamp with number and tensor bounds, one bound or two, in place,
        on floats and integers; maximum and minimum (T5 clamps its f16
        activations, detection heads their boxes)."""

        def forward(self, x, lo, i):
            a = x.clamp(-0.5, 0.5) + x.clamp(min=0) + x.clamp(max=0.25) + torch.clamp(x, lo)
            b = torch.clamp_min(x, 0.1) * torch.clamp_max(x, lo) + torch.clamp(x, lo, lo + 1)
            c = torch.maximum(x, lo) - torch.minimum(x, lo)
            y = x * 2
            y.clamp_(-1, 1)
            return a, b, c, y, i.clamp(-3, 4), i.clamp(0.5), torch.clamp(x, 2, 1)

    class Rounds(nn.Module):
        """round half to even and with decimals 0, 2 and -1 (quantizers and
        metrics round so), in place, on f32, f16 and bf16; integers as they
        are. The inputs hold halves, NaN, infinities and values whose scaled
        form is a half only in float (2.675 * 100); bf16 is made here (.npy
        has no bf16)."""

        def forward(self, x, h, i):
            b = x.bfloat16()
            a = torch.round(x), torch.round(x, decimals=2), x.round(decimals=-1)
            y = x * 3
            y.round_(decimals=1)
            z = x * 2
            z.round_()
            return (*a, y, z, torch.round(x, decimals=0), h.round(), h.round(decimals=2),
                    b.round(decimals=-1).float(), b.round().float(), torch.round(i))


@unittest.skipUnless(HAVE_TORCH, SKIP)
class Elementwise(unittest.TestCase):
    def cases(self):
        torch.manual_seed(11)
        ids = torch.tensor([[5, 0, 7, 3, 1, 0, 9, 4]])
        return (("masks", Masks(), (torch.randn(1, 8, 8), ids)),
                ("arith", Arith(), (torch.randn(3, 4) * 3, torch.tensor([[-7, -2, 0, 5]] * 3))),
                ("half", Half(), (torch.rand(2, 3).half() * 2,)),
                ("clamps", Clamps(), (torch.randn(3, 4), torch.randn(4) * 0.5,
                                      torch.tensor([[-7, -2, 0, 5]] * 3))),
                ("rounds", Rounds(), self.round_inputs()))

    def round_inputs(self):
        x = torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 2.675, 0.125, 12345.678, float("nan"),
                          float("inf"), -float("inf"), 3e38])
        x = torch.cat([x, torch.randn(12) * 40]).reshape(4, 6)
        return x, x.half().clamp(-60000, 60000), torch.tensor([[-7, 0, 5]] * 2)

    def test_round_exports_round_and_round_decimals(self):
        from torch_export import export_module
        text, _ = export_module(Rounds(), self.round_inputs())
        self.assertIn("aten::round(", text)
        self.assertIn("aten::round.decimals(", text)
        self.assertIn(", -1)", text)

    def test_every_op_exports_without_refusal(self):
        from torch_export import export_module
        for name, m, a in self.cases():
            text, _ = export_module(m, a)
            self.assertIn("passrun 1", text, name)

    def test_a_number_in_a_tensor_overload_becomes_the_scalar_overload(self):
        from torch_export import export_module
        text, _ = export_module(Arith(), self.cases()[1][2])
        self.assertIn("aten::div.Scalar_mode(", text)
        self.assertNotIn("aten::div.Tensor_mode(%i, 2", text)
        text, _ = export_module(Masks(), self.cases()[0][2])
        self.assertIn("aten::rsub.Scalar(", text)

    @unittest.skipUnless(os.environ.get("PASSRUN"), NO_PASSRUN)
    def test_matches_eager_through_passrun(self):
        assert_match_eager(self, [(name, ready(m, a)) for name, m, a in self.cases()])


if __name__ == "__main__":
    unittest.main()
