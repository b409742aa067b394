"""models.py: the modules exported into examples/torch/ (and used by the
tests). Each factory returns (module, example_args); sizes are small so the
committed programs stay readable. Weights come from fixed seeds.
"""
import math

import torch
from torch import nn


def _seed(s):
    torch.manual_seed(s)


# ---- a custom mutable op (left on the host by the partitioner) -------------

def _register_accumulate():
    if hasattr(torch.ops.custom, "accumulate"):
        return

    @torch.library.custom_op("custom::accumulate", mutates_args={"x"})
    def accumulate(x: torch.Tensor, y: torch.Tensor) -> None:
        x.add_(y)

    @accumulate.register_fake
    def _(x, y):
        return None


class Accumulator(nn.Module):
    """y = linear(x); custom::accumulate(acc, y) (a mutable buffer, written
    in place on the host by a custom op); returns relu(acc) * 0.5."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 4)
        self.register_buffer("acc", torch.zeros(3, 4))

    def forward(self, x):
        y = self.lin(x)
        torch.ops.custom.accumulate(self.acc, y)
        return torch.relu(self.acc) * 0.5


def accumulator():
    _register_accumulate()
    _seed(1)
    m = Accumulator()
    m.acc.copy_(torch.randn(3, 4))
    return m, (torch.randn(3, 6),)


# ---- a parameter stored transposed ----------------------------------------

class Transposed(nn.Module):
    """w is a parameter stored as the .t() of a [5, 4] tensor (strides [1, 4]);
    w2 is used through .t() in forward. Both layouts reach the delegates."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 4).t())        # [4, 5], strides [1, 4]
        self.w2 = nn.Parameter(torch.randn(3, 5))
        self.b = nn.Parameter(torch.randn(3))

    def forward(self, x):
        h = torch.tanh(x @ self.w)                          # [2, 5]
        return h @ self.w2.t() + self.b                     # [2, 3]


def transposed():
    _seed(2)
    return Transposed(), (torch.randn(2, 4),)


# ---- a small CNN with channels-last weights --------------------------------

class SmallCNN(nn.Module):
    """conv3x3 -> relu -> conv3x3 stride 2 -> relu -> mean over H, W -> linear.
    The conv weights are channels-last (memory_format=torch.channels_last)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2)
        self.fc = nn.Linear(6, 5)
        for c in (self.conv1, self.conv2):
            c.weight.data = c.weight.data.to(memory_format=torch.channels_last)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


def small_cnn():
    _seed(3)
    return SmallCNN(), (torch.randn(1, 3, 8, 8),)


# ---- nn.TransformerEncoderLayer --------------------------------------------

def transformer_encoder_layer():
    _seed(4)
    m = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0,
                                   batch_first=True)
    return m, (torch.randn(1, 5, 8),)


# ---- a Llama-style decoder step with a KV cache ----------------------------

def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, dim, n_heads, ffn, max_seq):
        super().__init__()
        self.n_heads, self.hd = n_heads, dim // n_heads
        self.attention_norm = nn.RMSNorm(dim, eps=1e-5)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.ffn_norm = nn.RMSNorm(dim, eps=1e-5)
        self.w1 = nn.Linear(dim, ffn, bias=False)
        self.w2 = nn.Linear(ffn, dim, bias=False)
        self.w3 = nn.Linear(dim, ffn, bias=False)
        self.register_buffer("k_cache", torch.zeros(max_seq, dim))
        self.register_buffer("v_cache", torch.zeros(max_seq, dim))

    def forward(self, h, cos, sin, mask, input_pos):
        H, hd = self.n_heads, self.hd
        x = self.attention_norm(h)                           # [1, dim]
        q = self.wq(x).view(1, H, hd)
        k = self.wk(x).view(1, H, hd)
        v = self.wv(x)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        self.k_cache[input_pos] = k.view(1, H * hd)
        self.v_cache[input_pos] = v
        keys = self.k_cache.view(-1, H, hd).transpose(0, 1)      # [H, S, hd]
        vals = self.v_cache.view(-1, H, hd).transpose(0, 1)
        scores = q.transpose(0, 1) @ keys.transpose(1, 2)        # [H, 1, S]
        scores = scores * (1.0 / math.sqrt(hd)) + mask
        o = torch.softmax(scores, dim=-1) @ vals                 # [H, 1, hd]
        h = h + self.wo(o.transpose(0, 1).reshape(1, H * hd))
        x = self.ffn_norm(h)
        return h + self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


class LlamaStep(nn.Module):
    """One decoding step: token embedding, rotary positions (cos/sin tables
    picked by input_pos), a causal mask row, n_layers layers whose K/V caches
    are mutable buffers written at input_pos, a final RMSNorm and the logits."""

    def __init__(self, vocab=16, dim=8, n_heads=2, ffn=16, max_seq=6, n_layers=2):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(LlamaLayer(dim, n_heads, ffn, max_seq) for _ in range(n_layers))
        self.norm = nn.RMSNorm(dim, eps=1e-5)
        self.output = nn.Linear(dim, vocab, bias=False)
        hd = dim // n_heads
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        f = torch.outer(torch.arange(max_seq).float(), inv)
        emb = torch.cat((f, f), dim=-1)
        self.register_buffer("freqs_cos", emb.cos(), persistent=False)
        self.register_buffer("freqs_sin", emb.sin(), persistent=False)
        mask = torch.full((max_seq, max_seq), -1e9).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens, input_pos):
        h = self.tok_embeddings(tokens)                          # [1, dim]
        cos = torch.index_select(self.freqs_cos, 0, input_pos).unsqueeze(1)   # [1, 1, hd]
        sin = torch.index_select(self.freqs_sin, 0, input_pos).unsqueeze(1)
        mask = torch.index_select(self.mask, 0, input_pos)       # [1, S]
        for layer in self.layers:
            h = layer(h, cos, sin, mask, input_pos)
        return self.output(self.norm(h))


def llama_step():
    """The model after decoding 3 tokens in eager mode (the caches hold them);
    the exported call decodes the 4th, at position 3."""
    _seed(5)
    m = LlamaStep().eval()
    with torch.no_grad():
        for pos, tok in enumerate([3, 7, 1]):
            m(torch.tensor([tok]), torch.tensor([pos]))
    return m, (torch.tensor([11]), torch.tensor([3]))


EXAMPLES = {
    "llama_step": llama_step,
    "transformer_encoder_layer": transformer_encoder_layer,
    "small_cnn": small_cnn,
    "transposed_param": transposed,
    "custom_accumulate": accumulator,
}
