#!/usr/bin/env python3
"""make_examples.py: (re)writes examples/torch/ from torch_export.models.

    PYTHONPATH=tools/torch_export python3 tools/torch_export/make_examples.py [DIRNAME...]

Needs torch and numpy. Each example directory gets model.pg (grouped
partition, target_device cuda:0), inputs/*.npy and expected/forward.I.npy
(eager PyTorch); llama_step_per_op is the decoder with every compute op in
its own delegate (ExecuTorch's test-partitioner shape). Naming directories
rewrites only those.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

from torch_export import models  # noqa: E402
from torch_export.examples import write_example  # noqa: E402

DESCRIPTIONS = {
    "llama_step": "A Llama-style decoder step (2 layers, dim 8, 2 heads, KV caches of 6 "
                  "positions as mutable buffers written with index_put_ at input_pos).",
    "llama_step_per_op": "The same decoder, every compute op in its own delegate.",
    "transformer_encoder_layer": "nn.TransformerEncoderLayer(d_model=8, nhead=2, "
                                 "dim_feedforward=16, dropout=0, batch_first=True), eval.",
    "small_cnn": "A small CNN with channels-last conv weights (aten::convolution reads "
                 "them as stored), relu, a mean over H and W, and a linear layer.",
    "transposed_param": "A parameter stored as .t() of a [5,4] tensor (strides [1,4]) "
                        "and one used through .t() in forward.",
    "custom_accumulate": "custom::accumulate (a torch.library custom op mutating a "
                         "buffer), left on the host between delegates.",
}


def main():
    out = os.path.join(ROOT, "examples", "torch")
    todo = [(n, n, "grouped") for n in models.EXAMPLES] + [("llama_step_per_op", "llama_step", "per-op")]
    unknown = set(sys.argv[1:]) - {t[0] for t in todo}
    if unknown:
        raise SystemExit(f"make_examples.py: no example {', '.join(sorted(unknown))}; choose from "
                         f"{', '.join(t[0] for t in todo)}")
    todo = [t for t in todo if not sys.argv[1:] or t[0] in sys.argv[1:]]
    for dirname, name, mode in todo:
        module, args = models.EXAMPLES[name]()
        d = os.path.join(out, dirname)
        header = [f"{DESCRIPTIONS[dirname]}",
                  f"Exported by tools/torch_export/make_examples.py (torch_export.models.{name}, "
                  f"mode {mode}, target_device cuda:0).",
                  f"Run: passrun --pipeline cuda --run --check --device=sim "
                  f"--input NAME=examples/torch/{dirname}/inputs/NAME.npy ... "
                  f"examples/torch/{dirname}/model.pg",
                  f"Eager PyTorch's outputs: examples/torch/{dirname}/expected/ "
                  f"(tests/torch compares them)."]
        info = write_example(d, module, args, header, mode=mode)
        print(f"{dirname}: {info['n_delegates']} delegates")


if __name__ == "__main__":
    main()
