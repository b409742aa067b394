"""python3 -m torch_export MODULE_SPEC -o out.pg [options]

MODULE_SPEC is `package.module:factory` (or a file path `path/to/file.py:factory`);
the factory returns (nn.Module, example_args). `examples:NAME` names one of
torch_export.models.EXAMPLES. With --example-dir DIR the fixed inputs and
eager PyTorch's outputs are written next to the program (examples.py).
"""
import argparse
import importlib
import importlib.util
import os
import sys

from . import DEFAULTS


def load_factory(spec):
    if ":" not in spec:
        raise SystemExit(f"torch_export: MODULE_SPEC must be 'module:factory', got {spec!r}")
    mod, name = spec.rsplit(":", 1)
    if mod == "examples":
        from . import models
        if name not in models.EXAMPLES:
            raise SystemExit(f"torch_export: no example {name!r}; choose from "
                             f"{', '.join(sorted(models.EXAMPLES))}")
        return models.EXAMPLES[name]
    if mod.endswith(".py"):
        s = importlib.util.spec_from_file_location("torch_export_user_module", mod)
        m = importlib.util.module_from_spec(s)
        s.loader.exec_module(m)
    else:
        m = importlib.import_module(mod)
    if not hasattr(m, name):
        raise SystemExit(f"torch_export: {mod} has no {name!r}")
    return getattr(m, name)


def parser():
    ap = argparse.ArgumentParser(prog="python3 -m torch_export", description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", metavar="MODULE_SPEC")
    ap.add_argument("-o", "--output", help="the .pg to write (default: standard output)")
    ap.add_argument("--mode", choices=["per-op", "grouped"], default=DEFAULTS["mode"])
    ap.add_argument("--ops", default=DEFAULTS["ops"],
                    help="comma-separated ops to delegate (default: the compute ops)")
    ap.add_argument("--target-device", default=DEFAULTS["target_device"])
    ap.add_argument("--backend", default=DEFAULTS["backend"])
    ap.add_argument("--no-fold", dest="fold", action="store_false", default=DEFAULTS["fold"],
                    help="keep the subgraphs that depend on no input as ops (default: "
                         "computed at export time, as constants)")
    ap.add_argument("--example-dir", help="write DIR/model.pg, DIR/inputs/, DIR/expected/")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch_export: PyTorch is not installed (pip install torch)", file=sys.stderr)
        return 2
    from . import export_module
    from .export import ExportError
    module, args = load_factory(a.spec)()
    header = [f"Exported by tools/torch_export from {a.spec} (mode {a.mode}, "
              f"target_device {a.target_device})."]
    options = {"mode": a.mode, "ops": a.ops, "target_device": a.target_device,
               "backend": a.backend, "fold": a.fold}
    try:
        if a.example_dir:
            from .examples import write_example
            write_example(a.example_dir, module, args, header, **options)
            return 0
        text, _ = export_module(module, args, header=header, **options)
    except (ExportError, NotImplementedError) as e:
        print(str(e), file=sys.stderr)
        return 1
    if a.output:
        tmp = a.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, a.output)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
