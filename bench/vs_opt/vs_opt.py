#!/usr/bin/env python3
"""vs_opt.py: passrun's cuda pipeline against LLVM's opt on programs of the
same size (bench/vs_opt/run.sh is the entry).

    vs_opt.py PASSRUN NODES

Generates the decoder (examples/gen/gen_decoder.py --nodes N, converted to
.bin) and an LLVM module of N instructions shaped like it (gen_llvm.py,
assembled to bitcode with llvm-as), then runs, alternately, RUNS times each
(default 3):

    opt -passes='verify,dce,adce,verify' X.bc -o OUT.bc
    passrun --pipeline cuda X.bin -o OUT.bin

each under /usr/bin/time (measure.py), and prints the least wall ms, user s
and peak RSS MB of each, and opt / passrun for each. Both read a binary
file, run four or more passes with verification and write a binary file.
OPT and LLVM_AS name the LLVM tools (default opt, llvm-as).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(HERE, ".."))
import measure  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RUNS = int(os.environ.get("RUNS", "3"))
OPT = os.environ.get("OPT", "opt")
LLVM_AS = os.environ.get("LLVM_AS", "llvm-as")
OPT_PASSES = "verify,dce,adce,verify"


def inputs(passrun, n, work):
    """(X.bin, X.bc) of n nodes and n instructions."""
    pg, bin_ = os.path.join(work, "d.pg"), os.path.join(work, "d.bin")
    ll, bc = os.path.join(work, "m.ll"), os.path.join(work, "m.bc")
    py = sys.executable
    subprocess.run([py, os.path.join(ROOT, "examples/gen/gen_decoder.py"), "--nodes", str(n),
                    "-o", pg], check=True)
    subprocess.run([passrun, "convert", pg, bin_], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([py, os.path.join(HERE, "gen_llvm.py"), "--nodes", str(n), "-o", ll],
                   check=True)
    subprocess.run([LLVM_AS, ll, "-o", bc], check=True)
    return bin_, bc


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: run.sh PASSRUN NODES")
    passrun, n = os.path.abspath(argv[1]), int(argv[2])
    work = tempfile.mkdtemp(prefix="passrun-bench-vs-opt.")
    try:
        bin_, bc = inputs(passrun, n, work)
        tools = {
            "opt": [OPT, "-passes=" + OPT_PASSES, bc, "-o", os.path.join(work, "out.bc")],
            "passrun": [passrun, "--pipeline", "cuda", bin_, "-o", os.path.join(work, "out.bin")],
        }
        runs = {t: [] for t in tools}
        for _ in range(RUNS):
            for t, cmd in tools.items():
                runs[t].append(measure.run(cmd, stderr=os.path.join(work, t + ".err")))
        best = {t: {k: min(r[k] for r in rs) for k in rs[0]} for t, rs in runs.items()}
        sizes = {"opt": os.path.getsize(bc), "passrun": os.path.getsize(bin_)}
    finally:
        shutil.rmtree(work)
    print("\n%s nodes / instructions (least of %d runs each)\n" % ("{:,}".format(n), RUNS))
    print("| | input bytes | wall ms | user s | peak RSS MB |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for t in tools:
        b = best[t]
        print("| %s | {:,} | %.0f | %.2f | %.0f |".format(sizes[t])
              % (t, b["wall_ms"], b["user_s"], b["rss_mb"]))
    o, p = best["opt"], best["passrun"]
    print("| opt / passrun | %.2f | %.3f | %.3f | %.3f |"
          % (sizes["opt"] / sizes["passrun"], o["wall_ms"] / p["wall_ms"],
             o["user_s"] / p["user_s"] if p["user_s"] else float("nan"),
             o["rss_mb"] / p["rss_mb"]))


if __name__ == "__main__":
    main(sys.argv)
