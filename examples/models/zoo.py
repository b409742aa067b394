"""zoo.py: the model zoo, well-known architectures exactly as their libraries
build them, at small sizes, to export with tools/torch_export and run with
passrun (issue 12).

    from zoo import ZOO
    module, args = ZOO["gpt2_sdpa"]()      # eval mode, fixed seed, random init

Each factory returns (nn.Module, example_args). Weights are random (a fixed
seed per model), never downloaded: torchvision gets weights=None and Hugging
Face models are built from a config with HF_HUB_OFFLINE=1. The modules are
the libraries' own classes, unchanged; a Hugging Face model returns a
ModelOutput, so it is called through `Outputs`, a thin wrapper that returns
the output tensors (use_cache=False: no KV cache object).

Sizes: torchvision models take 1x3x32x32 images; Hugging Face models have 2
layers, width 64, vocabulary 1000 and take 1x8 token ids (ViT: a 1x3x32x32
image, patches of 8); each comes with the default attention implementation
(SDPA) and with attn_implementation="eager". The torch.nn modules use width
64 (recurrent: input 16, hidden 32, 2 layers) on a batch of 1 and 8 steps.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

SEQ, VOCAB, WIDTH, LAYERS, HEADS = 8, 1000, 64, 2, 4


def _ready(module, args):
    return module.eval(), args


def _image(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, 3, 32, 32, generator=g)


def _tokens(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (1, SEQ), generator=g)


class Outputs(nn.Module):
    """Calls a Hugging Face model and returns the tensors of its ModelOutput
    (named fields, in order), so that torch.export sees tensors only."""

    def __init__(self, model, fields):
        super().__init__()
        self.model = model
        self.fields = tuple(fields)

    def forward(self, *args):
        out = self.model(*args)
        return tuple(getattr(out, f) for f in self.fields)


# ---- torchvision -----------------------------------------------------------

def resnet18():
    import torchvision
    torch.manual_seed(101)
    return _ready(torchvision.models.resnet18(weights=None, num_classes=10), (_image(1),))


def mobilenet_v2():
    import torchvision
    torch.manual_seed(102)
    return _ready(torchvision.models.mobilenet_v2(weights=None, num_classes=10), (_image(2),))


def vision_transformer():
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(103)
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=LAYERS, num_heads=HEADS,
                          hidden_dim=WIDTH, mlp_dim=2 * WIDTH, num_classes=10)
    return _ready(m, (_image(3),))


# ---- Hugging Face transformers ---------------------------------------------

def _hf(model_cls, config, fields, args, seed):
    torch.manual_seed(seed)
    return _ready(Outputs(model_cls(config), fields), args)


def _gpt2(attn):
    from transformers import GPT2Config, GPT2LMHeadModel
    c = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS, bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1,
                   use_cache=False, attn_implementation=attn)
    return _hf(GPT2LMHeadModel, c, ["logits"], (_tokens(11),), 111)


def _bert(attn):
    from transformers import BertConfig, BertModel
    c = BertConfig(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=LAYERS,
                   num_attention_heads=HEADS, intermediate_size=2 * WIDTH,
                   max_position_embeddings=64, attn_implementation=attn)
    return _hf(BertModel, c, ["last_hidden_state", "pooler_output"], (_tokens(12),), 112)


def _llama(attn):
    from transformers import LlamaConfig, LlamaForCausalLM
    c = LlamaConfig(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=2 * WIDTH,
                    num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                    num_key_value_heads=HEADS // 2, max_position_embeddings=64,
                    use_cache=False, attn_implementation=attn)
    return _hf(LlamaForCausalLM, c, ["logits"], (_tokens(13),), 113)


def _vit(attn):
    from transformers import ViTConfig, ViTModel
    c = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=WIDTH,
                  num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  intermediate_size=2 * WIDTH, attn_implementation=attn)
    return _hf(ViTModel, c, ["last_hidden_state", "pooler_output"], (_image(14),), 114)


# ---- torch.nn --------------------------------------------------------------

def _steps(seed, width, n=1):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, SEQ, width, generator=g) for _ in range(n))


def lstm():
    torch.manual_seed(121)
    return _ready(nn.LSTM(16, 32, num_layers=2, batch_first=True), _steps(21, 16))


def gru():
    torch.manual_seed(122)
    return _ready(nn.GRU(16, 32, num_layers=2, batch_first=True), _steps(22, 16))


def transformer_decoder_layer():
    torch.manual_seed(123)
    m = nn.TransformerDecoderLayer(WIDTH, HEADS, dim_feedforward=2 * WIDTH, dropout=0.0,
                                   batch_first=True)
    return _ready(m, _steps(23, WIDTH, 2))


def transformer_encoder_layer():
    torch.manual_seed(124)
    m = nn.TransformerEncoderLayer(WIDTH, HEADS, dim_feedforward=2 * WIDTH, dropout=0.0,
                                   batch_first=True)
    return _ready(m, _steps(24, WIDTH))


def multihead_attention():
    torch.manual_seed(125)
    return _ready(nn.MultiheadAttention(WIDTH, HEADS, batch_first=True), _steps(25, WIDTH, 3))


# The keys are literal: tests/torch/CMakeLists.txt reads them (one ctest test
# per model) without importing torch.
ZOO = {
    "resnet18": resnet18,
    "mobilenet_v2": mobilenet_v2,
    "vision_transformer": vision_transformer,
    "gpt2_sdpa": lambda: _gpt2("sdpa"),
    "gpt2_eager": lambda: _gpt2("eager"),
    "bert_sdpa": lambda: _bert("sdpa"),
    "bert_eager": lambda: _bert("eager"),
    "llama_sdpa": lambda: _llama("sdpa"),
    "llama_eager": lambda: _llama("eager"),
    "vit_sdpa": lambda: _vit("sdpa"),
    "vit_eager": lambda: _vit("eager"),
    "lstm": lstm,
    "gru": gru,
    "transformer_decoder_layer": transformer_decoder_layer,
    "transformer_encoder_layer": transformer_encoder_layer,
    "multihead_attention": multihead_attention,
}


def __getattr__(name):
    """zoo.gpt2_sdpa is ZOO["gpt2_sdpa"], so that the exporter's command line
    names any model: python3 -m torch_export examples/models/zoo.py:gpt2_sdpa"""
    if name in ZOO:
        return ZOO[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
