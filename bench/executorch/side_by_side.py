#!/usr/bin/env python3
"""side_by_side.py: ExecuTorch's own PropagateDevicePass next to passrun's
placement pipelines, on the same PyTorch modules.

    PYTHON bench/executorch/side_by_side.py [--sizes 10,100,1000] [--zoo all|a,b]

(PYTHON: one with torch and executorch 1.5.1; bench/README.md says how the
recorded table's environment was made.)

For each program (the modules behind examples/torch/, and generated chains of
N adds or N linear layers) and each flag setting (none, or both skip flags):

  ExecuTorch: torch.export -> to_edge -> to_backend with a partitioner that
  puts the same compute ops on cuda:0 (one delegate per op, or connected ops
  grouped), once per program; then, on a copy for each flag setting,
  to_executorch with enable_non_cpu_memory_planning=True (without it the pass
  only tags specs and inserts no copy at all). PropagateDevicePass is replaced,
  for that one call, by a subclass that runs the real pass on fresh copies of
  the graph it receives, keeps the best wall time (and, apart, that of the
  graph_module.recompile() it ends with) and the copy nodes it inserted, and
  stops to_executorch there (nothing after the pass matters here).

  passrun: the same module through tools/torch_export (the same partition
  mode, target_device cuda:0) to a .pg, then `passrun --pipeline baseline` and
  `--pipeline cuda` with --stats=json: copies and bytes per call, and the
  pass times of the best of a few runs.

It prints one markdown table (bench/README.md holds the recorded one).
Needs torch and executorch (a venv); nothing in ctest imports this file.
"""
import argparse
import copy
import json
import operator
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "torch_export"))

from torch_export import export_module, models, supported  # noqa: E402

import executorch  # noqa: E402,F401
import executorch.exir.passes._device_copy_ops_registry  # noqa: E402,F401  (et_copy ops)
from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge  # noqa: E402
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult  # noqa: E402
from executorch.exir.backend.canonical_partitioners.pattern_op_partitioner import (  # noqa: E402
    generate_pattern_op_partitions,
)
from executorch.exir.backend.compile_spec_schema import CompileSpec  # noqa: E402
from executorch.exir.backend.partitioner import (  # noqa: E402
    DelegationSpec,
    Partitioner,
    PartitionResult,
)
from executorch.exir.passes.propagate_device_pass import (  # noqa: E402
    TARGET_DEVICE_COMPILE_SPEC_KEY,
    PropagateDeviceConfig,
    PropagateDevicePass,
)
from executorch.exir.program import _program as et_program  # noqa: E402
from executorch.exir.tensor import TensorSpec  # noqa: E402
from torch.fx.passes.operator_support import OperatorSupportBase  # noqa: E402

# Edge dialect decomposes some ops that our exporter keeps whole (rms_norm into
# pow/mean/add/rsqrt/mul, layer_norm into native_layer_norm, conv2d into
# convolution, linear into permute_copy + addmm). The pieces of a compute op
# are compute ops too; the permute_copy of a linear's weight is a view (host),
# as our grouped partitioner would leave a lone view.
EDGE_COMPUTE_OPS = supported.COMPUTE_OPS | {
    "aten::pow.Tensor_Scalar", "aten::rsqrt", "aten::native_layer_norm", "aten::convolution",
}

FLAG_SETTINGS = {
    "none": {},
    "skip both": {"skip_h2d_for_method_inputs": True, "skip_d2h_for_method_outputs": True},
}


# ---- the programs ----------------------------------------------------------

class AddChain(nn.Module):
    """h = x; h = h + y, n times: y is read by every delegate (F8's shape)."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x, y):
        h = x
        for _ in range(self.n):
            h = h + y
        return h


def add_chain(n):
    torch.manual_seed(0)
    return AddChain(n), (torch.randn(4, 4), torch.randn(4, 4))


def linear_stack(n):
    """n nn.Linear(8, 8) in a row: two constants per delegate (F5's shape)."""
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Linear(8, 8) for _ in range(n)]), (torch.randn(2, 8),)


def programs(sizes, zoo_models=()):
    """(label, factory, partition mode) for every program in the table: the
    examples, the zoo models asked for (examples/models/zoo.py), the chains."""
    todo = []
    for name, factory in models.EXAMPLES.items():
        todo.append((name, factory, "per-op"))
        todo.append((name, factory, "grouped"))
    if zoo_models:
        sys.path.insert(0, os.path.join(ROOT, "examples", "models"))
        import zoo
        for name in (zoo.ZOO if zoo_models == ["all"] else zoo_models):
            todo.append((name, zoo.ZOO[name], "per-op"))
            todo.append((name, zoo.ZOO[name], "grouped"))
    for n in sizes:
        todo.append((f"add chain {n}", lambda n=n: add_chain(n), "per-op"))
        todo.append((f"linear stack {n}", lambda n=n: linear_stack(n), "per-op"))
    return todo


# ---- ExecuTorch: partition, lower, run the pass ----------------------------

class NoCodeBackend(BackendDetails):
    """A backend that compiles nothing: PropagateDevicePass reads only the
    compile specs of a lowered module, never its code."""

    @staticmethod
    def preprocess(edge_program, compile_specs):
        return PreprocessResult(processed_bytes=b"")


def edge_op_name(node):
    """'aten::add.Tensor', 'aten::neg' (the names supported.py uses)."""
    schema = getattr(node.target, "_schema", None)
    if node.op != "call_function" or schema is None:
        return None
    overload = schema.overload_name
    return schema.name + ("." + overload if overload not in ("", "default") else "")


def getitems_of(node):
    """The getitems that unpack a tuple result (native_layer_norm): they
    belong to the op's delegate, or to_backend nests the tuple in the
    delegate's result and fails."""
    return [u for u in node.users if u.target is operator.getitem]


class ComputeOpSupport(OperatorSupportBase):
    def is_node_supported(self, submodules, node):
        return edge_op_name(node) in EDGE_COMPUTE_OPS


class CudaPartitioner(Partitioner):
    """Compute ops to NoCodeBackend with target_device cuda:0: each op its own
    delegate ("per-op", as ExecuTorch's PerAddDeviceDelegatePartitioner test
    does) or connected ones together ("grouped": ExecuTorch's
    capability-based partitioner)."""

    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        self.delegation_spec = DelegationSpec(NoCodeBackend.__name__, [
            CompileSpec(TARGET_DEVICE_COMPILE_SPEC_KEY, b"cuda:0")])

    def groups(self, graph_module):
        support = ComputeOpSupport()
        if self.mode == "grouped":
            parts = generate_pattern_op_partitions(graph_module, op_support=support)
            return [list(p.nodes) for p in parts]
        return [[n] + getitems_of(n) for n in graph_module.graph.nodes
                if support.is_node_supported(None, n)]

    def partition(self, exported_program):
        tags = {}
        for i, group in enumerate(self.groups(exported_program.graph_module)):
            for node in group:
                node.meta["delegation_tag"] = f"cuda{i}"
            tags[f"cuda{i}"] = self.delegation_spec
        return PartitionResult(tagged_exported_program=exported_program, partition_tags=tags)


class PassMeasured(Exception):
    """Raised by MeasuredPropagateDevicePass to stop to_executorch after it."""

    def __init__(self, result):
        super().__init__("measured")
        self.result = result


def fresh_copy(graph_module):
    """A copy the pass can change without touching the original: fx's deepcopy
    copies node.meta shallowly, and the pass sets devices on the specs in it."""
    fresh = copy.deepcopy(graph_module)
    for node in fresh.graph.nodes:
        spec = node.meta.get("spec")
        if isinstance(spec, TensorSpec):
            node.meta["spec"] = copy.copy(spec)
        elif isinstance(spec, (tuple, list)):
            node.meta["spec"] = type(spec)(copy.copy(s) for s in spec)
    return fresh


def copy_stats(graph_module):
    """Copy nodes and the bytes they move, per direction."""
    targets = {"h2d": torch.ops.et_copy._h2d_copy.default,
               "d2h": torch.ops.et_copy._d2h_copy.default}
    stats = {k: 0 for k in ("h2d", "d2h", "h2d_bytes", "d2h_bytes")}
    for node in graph_module.graph.nodes:
        for key, target in targets.items():
            if node.op == "call_function" and node.target == target:
                val = node.meta["val"]
                stats[key] += 1
                stats[key + "_bytes"] += val.numel() * val.element_size()
    return stats


def graph_counts(graph_module):
    nodes = list(graph_module.graph.nodes)
    calls = [n for n in nodes if n.op == "call_function" and "call_delegate" in str(n.target)]
    return {"nodes": len(nodes), "delegates": len(calls)}


def best_time(prepare, run, repeats):
    """(best seconds, last result) of run(prepare()); only run is timed."""
    best, result = float("inf"), None
    for _ in range(repeats):
        arg = prepare()
        start = time.perf_counter()
        result = run(arg)
        best = min(best, time.perf_counter() - start)
    return best, result


def recompile_time(graph_module, repeats):
    """The pass ends with graph_module.recompile() (regenerating the Python
    code of the whole graph); timed apart to show how much of the pass it is."""
    return best_time(lambda: graph_module, lambda g: g.recompile(), repeats)[0]


def measured_pass_class(repeats):
    class MeasuredPropagateDevicePass(PropagateDevicePass):
        def call(self, graph_module):
            out = graph_counts(graph_module)
            try:
                best, result = best_time(lambda: fresh_copy(graph_module),
                                         lambda fresh: PropagateDevicePass.call(self, fresh),
                                         repeats)
            except Exception as e:  # the pass refusing a program is a result
                out["error"] = f"{type(e).__name__}: {first_sentence(str(e))}"
                raise PassMeasured(out)
            out.update(copy_stats(result.graph_module), ms=best * 1e3,
                       recompile_ms=recompile_time(result.graph_module, repeats) * 1e3)
            raise PassMeasured(out)
    return MeasuredPropagateDevicePass


def lower_for_cuda(factory, mode):
    """The edge program after to_backend. Without no_grad, to_executorch's
    dim-order pass fails on llama_step's in-place cache writes ("a leaf
    Variable that requires grad"); ExecuTorch's own export scripts use it."""
    module, args = factory()
    edge = to_edge(torch.export.export(module.eval(), args),
                   compile_config=EdgeCompileConfig(_check_ir_validity=False))
    return edge.to_backend(CudaPartitioner(mode))


def lower_timed(factory, mode):
    """(the lowered program or the exception that stopped it, seconds)."""
    start = time.perf_counter()
    try:
        with torch.no_grad():
            lowered = lower_for_cuda(factory, mode)
    except Exception as e:
        lowered = e
    return lowered, time.perf_counter() - start


def run_executorch(lowered, flags, repeats):
    """ExecuTorch's copies and pass time on a copy of the lowered program
    (to_executorch changes it); 'error' says why there are none."""
    if isinstance(lowered, Exception):
        return {"nodes": "-", "delegates": "-", "error": lowering_failed(lowered)}
    config = ExecutorchBackendConfig(
        propagate_device_config=PropagateDeviceConfig(**flags),
        enable_non_cpu_memory_planning=True)
    real_pass = et_program.PropagateDevicePass
    et_program.PropagateDevicePass = measured_pass_class(repeats)
    try:
        with torch.no_grad():
            copy.deepcopy(lowered).to_executorch(config)
    except PassMeasured as measured:
        return measured.result
    except Exception as e:
        return {"nodes": "-", "delegates": "-", "error": lowering_failed(e)}
    finally:
        et_program.PropagateDevicePass = real_pass
    return {"nodes": "-", "delegates": "-", "error": "PropagateDevicePass did not run"}


def lowering_failed(e):
    return f"lowering failed before the pass: {type(e).__name__}: {first_sentence(str(e))}"


def first_sentence(text):
    return text.split(". ")[0].strip()


# ---- passrun ---------------------------------------------------------------

def export_pg(factory, mode, path):
    module, args = factory()
    text, _ = export_module(module, args, mode=mode, target_device="cuda:0")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def passrun_stats(passrun, pipeline, flags, program):
    """One run's --stats=json (stats of a refused program have no methods)."""
    cmd = [passrun, "--pipeline", pipeline, "--stats=json", program, "-o", os.devnull]
    cmd += [f"--set={k}={'true' if v else 'false'}" for k, v in flags.items()]
    done = subprocess.run(cmd, capture_output=True, text=True)
    stats = json.loads(done.stdout) if done.stdout.strip() else {}
    stats["exit"] = done.returncode
    return stats


def pass_ms(stats):
    """(placement passes: all but memory-plan, propagate-device alone)."""
    passes = stats.get("passes", [])
    placement = sum(p["ms"] for p in passes if p["name"] != "memory-plan")
    alone = sum(p["ms"] for p in passes if p["name"] == "propagate-device")
    return placement, alone


def run_passrun(passrun, pipeline, flags, program, repeats):
    runs = [passrun_stats(passrun, pipeline, flags, program) for _ in range(repeats)]
    stats = runs[0]
    out = {"exit": stats["exit"]}
    errors = sorted({d["code"] for d in stats.get("diagnostics", []) if d["severity"] == "error"})
    if stats["exit"] != 0 or errors:
        out["error"] = ", ".join(errors) or f"exit {stats['exit']}"
        return out
    method = stats["methods"]["forward"]
    out.update({k: method[k] for k in ("h2d_copies", "d2h_copies",
                                       "h2d_bytes_per_call", "d2h_bytes_per_call")})
    times = [pass_ms(r) for r in runs]
    out["placement_ms"] = min(t[0] for t in times)
    out["propagate_ms"] = min(t[1] for t in times)
    return out


def program_counts(passrun, pg_path):
    """Nodes of the exported program before any pass, and its delegates."""
    done = subprocess.run([passrun, "--stats=json", pg_path], capture_output=True,
                          text=True, check=True)
    with open(pg_path, encoding="utf-8") as f:
        delegates = sum(1 for line in f if line.startswith("delegate @"))
    return {"nodes": json.loads(done.stdout)["methods"]["forward"]["nodes"],
            "delegates": delegates}


# ---- the table -------------------------------------------------------------

HEADER = ("| program | partition | skip flags | delegates ET / ours | nodes ET / ours "
          "| ExecuTorch h2d, d2h (B/call) | ExecuTorch pass ms (of which recompile) "
          "| passrun baseline h2d, d2h (B/call) | passrun cuda h2d, d2h (B/call) "
          "| passrun placement ms | passrun propagate-device ms | ExecuTorch to_edge + to_backend s |")


def et_cell(r):
    if "error" in r:
        return "refused: " + r["error"]
    return f"{r['h2d']} ({r['h2d_bytes']}), {r['d2h']} ({r['d2h_bytes']})"


def ours_cell(r):
    if "error" in r:
        return "refused: " + r["error"]
    return (f"{r['h2d_copies']} ({r['h2d_bytes_per_call']}), "
            f"{r['d2h_copies']} ({r['d2h_bytes_per_call']})")


def ms_cell(r, key):
    return f"{r[key]:.3f}" if key in r else "-"


def et_ms_cell(r):
    return f"{r['ms']:.3f} ({r['recompile_ms']:.3f})" if "ms" in r else "-"


def table_row(label, mode, flag_name, et, base, cuda, ours, lowering_s):
    cells = [label, mode, flag_name, f"{et['delegates']} / {ours['delegates']}",
             f"{et['nodes']} / {ours['nodes']}",
             et_cell(et), et_ms_cell(et), ours_cell(base), ours_cell(cuda),
             ms_cell(cuda, "placement_ms"), ms_cell(cuda, "propagate_ms"),
             f"{lowering_s:.1f}"]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def measure(label, factory, mode, args, workdir):
    """The table rows of one program, one per flag setting."""
    pg = os.path.join(workdir, label.replace(" ", "_") + f"_{mode}.pg")
    export_pg(factory, mode, pg)
    ours = program_counts(args.passrun, pg)
    lowered, lowering_s = lower_timed(factory, mode)
    rows = []
    for flag_name, flags in FLAG_SETTINGS.items():
        et = run_executorch(lowered, flags, args.repeats)
        base = run_passrun(args.passrun, "baseline", flags, pg, 1)
        cuda = run_passrun(args.passrun, "cuda", flags, pg, args.repeats)
        rows.append(table_row(label, mode, flag_name, et, base, cuda, ours, lowering_s))
        print(rows[-1], file=sys.stderr, flush=True)
    return rows


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,1000",
                    help="N of the generated add chains and linear stacks")
    ap.add_argument("--repeats", type=int, default=3, help="best of this many pass runs")
    ap.add_argument("--passrun", default=os.path.join(ROOT, "build", "bin", "passrun"))
    ap.add_argument("--only", help="comma-separated program labels (default: all)")
    ap.add_argument("--keep", help="write the exported .pg files here (default: a temp dir)")
    ap.add_argument("--zoo", default="",
                    help="comma-separated zoo models to add (examples/models/zoo.py), or 'all'")
    return ap.parse_args(argv)


def versions():
    import importlib.metadata as md
    return (f"executorch {md.version('executorch')}, torch {torch.__version__}, "
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
            f"{time.strftime('%Y-%m-%d')}")


def main(argv=None):
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    only = set(args.only.split(",")) if args.only else None
    workdir = args.keep or tempfile.mkdtemp(prefix="side_by_side_")
    os.makedirs(workdir, exist_ok=True)
    rows = []
    zoo_models = [z for z in args.zoo.split(",") if z]
    for label, factory, mode in programs(sizes, zoo_models):
        if only is None or label in only:
            rows += measure(label, factory, mode, args, workdir)
    print(versions() + "\n")
    print(HEADER)
    print("|" + " --- |" * (HEADER.count("|") - 1))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
