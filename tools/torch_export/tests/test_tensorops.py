"""The tensor ops transformers and RNNs export (issue 12): the attention
decomposition (bool and float masks, is_causal, grouped-query attention, rows
with every key masked), ops with several results (split_with_sizes read by
getitems), factories, cumsum, gather and index.Tensor. The decomposition is
checked against eager PyTorch in PyTorch itself; with PASSRUN set (ctest sets
it) each module is also exported in both partition modes, run with passrun
on sim and compared with eager. Skipped, with a message, without torch."""
import os
import unittest

from .common import HAVE_TORCH, NO_PASSRUN, SKIP, assert_match_eager, ready

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:
    pass


if HAVE_TORCH:
    class Attention(nn.Module):
        """SDPA as transformers call it: a bool padding mask, or is_causal,
        with fewer kv heads than query heads (enable_gqa)."""

        def __init__(self, causal, gqa):
            super().__init__()
            self.causal, self.gqa = causal, gqa
            self.q = nn.Linear(16, 16)
            self.kv = nn.Linear(16, 16 if not gqa else 8)

        def forward(self, x, keep):
            q = self.q(x).view(1, 6, 4, 4).transpose(1, 2)
            hk = 2 if self.gqa else 4
            k = self.kv(x).view(1, 6, hk, 4).transpose(1, 2)
            mask = None if self.causal else keep[:, None, None, :]
            return F.scaled_dot_product_attention(q, k, k * 0.5, attn_mask=mask,
                                                  is_causal=self.causal, enable_gqa=self.gqa)

    class Indexing(nn.Module):
        """Position ids as HF builds them (cumsum of a mask), a gather, an
        advanced index with a none, arange and full."""

        def forward(self, x, ids):
            pos = torch.cumsum(ids != 0, dim=1) - 1                  # i64
            g = torch.gather(x, 1, pos[:, :, None].expand(-1, -1, x.shape[2]))
            rows = torch.arange(2, -1, -1)
            y = g[:, rows] + torch.full((1, 3, 4), 0.5)
            return y, x[:, :, ids[0, :2]]

    class Splits(nn.Module):
        def forward(self, x):
            a, b, c = torch.split(x, [1, 2, 3], dim=1)
            p, q = x.t().split(4)
            u = torch.unbind(x, 0)
            return a * 2, c.sum(1), b + 1, q, p.relu(), u[1]


def _cases():
    torch.manual_seed(0)
    keep = torch.tensor([[True, True, False, True, False, True]])
    x = torch.randn(1, 6, 16)
    return {
        "sdpa_bool_mask": (Attention(False, False), (x, keep)),
        "sdpa_causal_gqa": (Attention(True, True), (x, keep)),
        "sdpa_bool_mask_gqa": (Attention(False, True), (x, keep)),
        "indexing": (Indexing(), (torch.randn(1, 3, 4), torch.tensor([[3, 0, 2]]))),
        "splits": (Splits(), (torch.randn(2, 6),)),
        "gru": (nn.GRU(4, 6, num_layers=2, batch_first=True), (torch.randn(1, 3, 4),)),
        "lstm": (nn.LSTM(4, 6, batch_first=True), (torch.randn(1, 3, 4),)),
        "decoder_layer": (nn.TransformerDecoderLayer(8, 2, 16, batch_first=True),
                          (torch.randn(1, 3, 8), torch.randn(1, 4, 8))),
    }


@unittest.skipUnless(HAVE_TORCH, SKIP)
class AttentionDecomposition(unittest.TestCase):
    def check(self, q, k, v, **kw):
        from torch_export import decomp
        want = F.scaled_dot_product_attention(q, k, v, **kw)
        got = decomp._sdpa(q, k, v, **kw)
        self.assertFalse(torch.isnan(got).any(), kw)
        self.assertLess((want - got).abs().max().item(), 1e-5, kw)

    def test_masks_causal_and_gqa_match_eager(self):
        torch.manual_seed(1)
        q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 3)
        m = torch.rand(5, 6) > 0.5
        m[2] = False                                   # a row with every key masked: 0
        fm = torch.randn(2, 1, 5, 6)
        fm[0, 0, 3] = float("-inf")
        self.check(q, k, v, attn_mask=m)
        self.check(q, k, v, attn_mask=fm)
        self.check(q, k, v, is_causal=True)
        self.check(q, k, v, scale=0.3)
        self.check(q[0], k[0], v[0], attn_mask=m)
        k2, v2 = torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 3)
        self.check(q, k2, v2, enable_gqa=True)
        self.check(q, k2, v2, enable_gqa=True, is_causal=True)
        self.check(q, k2, v2, enable_gqa=True, attn_mask=m)

    def test_a_fully_masked_row_gives_zeros_as_pytorch_does(self):
        from torch_export import decomp
        q = k = v = torch.ones(1, 1, 2, 2)
        m = torch.tensor([[True, True], [False, False]])
        out = decomp._sdpa(q, k, v, attn_mask=m)
        self.assertEqual(out[0, 0, 1].tolist(), [0.0, 0.0])
        self.assertEqual(out[0, 0, 0].tolist(), [1.0, 1.0])

    def test_dropout_is_still_refused(self):
        from torch_export import decomp
        q = torch.ones(1, 2, 2)
        with self.assertRaises(NotImplementedError):
            decomp._sdpa(q, q, q, dropout_p=0.1)


@unittest.skipUnless(HAVE_TORCH, SKIP)
class SeveralResults(unittest.TestCase):
    def test_split_with_sizes_is_a_tuple_read_by_getitems(self):
        from torch_export import export_module
        for mode in ("per-op", "grouped"):
            text, _ = export_module(*_cases()["splits"], mode=mode)
            self.assertRegex(text, r"%split_with_sizes: \(f32\[2,1\]\{strides=\[6,1\]\}, "
                                   r"f32\[2,2\]\{strides=\[6,1\]\}, f32\[2,3\]\{strides=\[6,1\]\}\) "
                                   r"= aten::split_with_sizes\(%x, \[1, 2, 3\], 1\)", mode)
            self.assertRegex(text, r"= getitem %split_with_sizes, 2\n", mode)

    def test_a_tuple_and_its_getitems_share_one_unit(self):
        # the grouped partitioner may put a split in a delegate; its getitems
        # go with it, so no delegate returns a tuple
        from torch_export import export_module
        text, _ = export_module(*_cases()["gru"], mode="grouped")
        body = None
        for line in text.splitlines():
            if line.startswith("delegate @"):
                body = set()
            elif line == "}":
                body = None
            elif body is not None and "= aten::split_with_sizes(" in line:
                body.add(line.split(":")[0].strip())
            elif body is not None and "= getitem %" in line:
                self.assertIn("%" + line.split("getitem %")[1].split(",")[0], body, line)


@unittest.skipUnless(HAVE_TORCH, SKIP)
@unittest.skipUnless(os.environ.get("PASSRUN"), NO_PASSRUN)
class ThroughPassrun(unittest.TestCase):
    def test_each_module_matches_eager_in_both_modes(self):
        assert_match_eager(self, [(name, ready(m, a)) for name, (m, a) in _cases().items()])


if __name__ == "__main__":
    unittest.main()
