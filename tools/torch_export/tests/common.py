"""What the exporter's tests share: whether torch is here (and the message
when it is not), how the exporter's CLI is started, and the end-to-end check
that an exported module, written as an example in both partition modes, runs
under passrun --check on the simulated device and matches eager PyTorch."""
import os
import subprocess
import sys
import tempfile

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

SKIP = "torch is not installed: the exporter tests are skipped (pip install torch to run them)"
NO_PASSRUN = "PASSRUN is not set: not running passrun"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
RUN_ONE = os.path.join(ROOT, "tests", "torch", "run_one.sh")
MODES = ("per-op", "grouped")


def run_cli(*args):
    """python -m torch_export ARGS, with the exporter on the path."""
    return subprocess.run([sys.executable, "-m", "torch_export", *args],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(HERE)})


def run_one(example_dir):
    """tests/torch/run_one.sh on a written example, with $PASSRUN."""
    return subprocess.run(["sh", RUN_ONE, os.environ["PASSRUN"], example_dir, "sim"],
                          capture_output=True, text=True)


def ready(module, args):
    """A maker of a module that exists already (see assert_match_eager)."""
    return lambda: (module, args)


def assert_match_eager(test, cases, modes=MODES):
    """cases: (name, make) pairs, make() giving (module, args). make is called
    once per mode, so a maker that builds its module exports a fresh one each
    time. Every case, in every mode, must pass run_one."""
    from torch_export.examples import write_example
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in cases:
            for mode in modes:
                d = os.path.join(tmp, f"{name}_{mode}")
                module, args = make()
                write_example(d, module, args, [name], mode=mode)
                r = run_one(d)
                test.assertEqual(r.returncode, 0, f"{name} {mode}:\n{r.stdout}{r.stderr}")
