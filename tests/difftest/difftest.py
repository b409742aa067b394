#!/usr/bin/env python3
"""difftest.py: generate random programs, test them differentially, minimize failures.

    difftest.py --build-dir BUILD [--count N] [--seed S] [--jobs 2]
                [--pipeline cuda] [--cli-every K] [--save-dir DIR]
                [--no-verify-each] [--allow LIST] [--expect-catches PERCENT]
                [--keep DIR]
    difftest.py --build-dir BUILD --minimize FILE.pg --combo C [--save-dir DIR]
    difftest.py --build-dir BUILD --minimize-seed N --combo C    (program N of the generator)

1. Programs seed S .. S+N-1 come from examples/gen/gen_random.py (imported,
   so program number s is exactly `gen_random.py --seed s`); odd seeds use its
   --no-refusals mode, even seeds may be refused with
   skip_h2d_for_method_inputs (E-INPUT-WRITTEN-ON-HOST), which the tester
   accepts as a refusal, not a failure.
2. BUILD/bin/difftest (difftest.c) runs them in --jobs workers, each on a
   chunk, all 16 option combinations each. A worker that dies (a crash, not a
   verdict) has its chunk re-run one program at a time to name the program.
3. Every K-th program is also run through BUILD/bin/passrun itself, 16 times
   (`--pipeline P --verify-each --set ... --run=2 --check --device=sim
   --stats=json`), and the JSON is judged the same way: exit 0, run.match,
   run bytes == the method's static bytes; or exit 1 with only the expected
   E-codes. This checks that the in-process tester and the tool agree.
4. Each failing program is minimized: a delta debugger deletes chunks of
   whole delegates, then of lines (halving the chunk size down to one) while
   the program still loads and still fails the same way under the same
   option combination; the result is written to --save-dir as regression_SEED.pg
   with a header saying how to reproduce it. ctest runs every file there.
--allow LIST is handed to difftest (difftest.c says what it accepts): ctest
runs every ablation (pipelines/ablate/) so, allowing only the ways its
missing fix's problem shows.
Exit status: 0 when nothing failed (with --expect-catches: when at least
PERCENT% of the programs were caught), 1 otherwise. Python 3 standard
library only.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "gen"))
import gen_random  # noqa: E402

OPTIONS = ["skip_h2d_for_method_inputs", "skip_d2h_for_method_outputs",
           "skip_h2d_for_constants", "error_on_per_call_copies"]
F9 = ("E-OUTPUT-ON-HOST", "E-CONSTANT-COPY", "E-INPUT-COPY")
FAIL_RE = re.compile(r"^FAIL (\S+) combo=(\d+) \(([^)]*)\): ([a-z-]+): (.*)$")
CHUNK = 100


def generate(seed, count, out_dir):
    files = []
    for s in range(seed, seed + count):
        path = os.path.join(out_dir, "random_%d.pg" % s)
        with open(path, "w") as f:
            f.write(gen_random.program(s, 0, no_refusals=bool(s % 2)))
        files.append(path)
    return files


def tester_cmd(a, extra=()):
    cmd = [os.path.join(a.build_dir, "bin", "difftest"), "--pipeline", a.pipeline]
    if a.no_verify_each:
        cmd.append("--no-verify-each")
    if a.allow:
        cmd += ["--allow", a.allow]
    return cmd + list(extra)


def run_chunk(a, files, list_dir, idx):
    """Runs one chunk; returns (fails, summary counts, crashed programs)."""
    lst = os.path.join(list_dir, "chunk_%s.txt" % idx)
    with open(lst, "w") as f:
        f.write("\n".join(files) + "\n")
    p = subprocess.run(tester_cmd(a, ["@" + lst]), capture_output=True, text=True)
    if p.returncode in (0, 1):
        return parse_output(p.stdout) + ([],)
    if len(files) == 1:   # a crash: this program is the one
        return [], {}, [(files[0], p.returncode, p.stderr[-2000:])]
    fails, counts, crashed = [], {}, []
    for i, f in enumerate(files):
        fl, c, cr = run_chunk(a, [f], list_dir, "%s_%d" % (idx, i))
        fails += fl
        crashed += cr
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v
    return fails, counts, crashed


def parse_output(out):
    fails, counts = [], {}
    for line in out.splitlines():
        m = FAIL_RE.match(line)
        if m:
            fails.append((m.group(1), int(m.group(2)), m.group(4), m.group(5)))
        elif line.startswith("difftest: programs by first failing run:"):
            for kv in line.split(":", 2)[2].split():
                k, v = kv.split("=")
                counts["programs_" + k] = counts.get("programs_" + k, 0) + int(v)
        elif line.startswith("difftest: ") and " programs, " in line:
            n = int(line.split()[1])
            counts["programs"] = counts.get("programs", 0) + n
            for kv in line.split(";", 1)[1].split():
                k, v = kv.split("=")
                counts["runs_" + k] = counts.get("runs_" + k, 0) + int(v)
    return fails, counts


def combo_sets(c):
    out = []
    for k, name in enumerate(OPTIONS):
        out += ["--set", "%s=%s" % (name, "true" if c & (1 << k) else "false")]
    return out


def cli_check(a, path):
    """The passrun binary on one program, 16 combinations; a list of problems."""
    problems, warned = [], {}
    exe = os.path.join(a.build_dir, "bin", "passrun")
    for c in range(16):
        cmd = [exe, "--pipeline", a.pipeline] + ([] if a.no_verify_each else ["--verify-each"])
        cmd += combo_sets(c) + [path, "--run=2", "--check", "--device=sim", "--stats=json"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        codes = set(re.findall(r"error\[([A-Z0-9-]+)\]", p.stderr))
        if c < 8:
            warned[c] = set(re.findall(r"warning\[(W-[A-Z0-9-]+)\]", p.stderr))
        if p.returncode == 1:
            allowed = set()
            if c & 1:
                allowed.add("E-INPUT-WRITTEN-ON-HOST")
            if c & 8:
                allowed |= {e for e in F9 if "W-" + e[2:] in warned.get(c & 7, set())}
            if not codes or not codes <= allowed:
                problems.append((path, c, "cli-refusal", "exit 1 with %s" % sorted(codes)))
            continue
        if p.returncode != 0:
            problems.append((path, c, "cli-exit", "exit %d: %s" % (p.returncode, p.stderr[-300:])))
            continue
        try:
            st = json.loads(p.stdout)
        except ValueError as e:
            problems.append((path, c, "cli-json", str(e)))
            continue
        run = st.get("run", {})
        meth = st["methods"].get(run.get("method", "forward"), {})
        if run.get("match") is not True:
            problems.append((path, c, "cli-mismatch", json.dumps(run)))
        for key in ("h2d_bytes_per_call", "d2h_bytes_per_call", "load_h2d_bytes"):
            if run.get(key) != meth.get(key):
                problems.append((path, c, "cli-bytes", "%s run %s static %s"
                                 % (key, run.get(key), meth.get(key))))
    return problems


# ---- minimization --------------------------------------------------------

def still_fails(a, text, combo, kind, work):
    path = os.path.join(work, "candidate.pg")
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run(tester_cmd(a, ["--combos", str(1 << combo), path]),
                       capture_output=True, text=True)
    if p.returncode not in (0, 1):
        return kind == "crash"
    fails, _ = parse_output(p.stdout)
    return any(k == kind for _, _, k, _ in fails)


def units(lines, blocks):
    """Groups lines into deletable units: with blocks, a delegate's whole body."""
    out, i = [], 0
    while i < len(lines):
        j = i + 1
        if blocks and lines[i].startswith("delegate @"):
            while j < len(lines) and lines[j - 1].strip() != "}":
                j += 1
        out.append(lines[i:j])
        i = j
    return out


def ddmin(a, us, combo, kind, work):
    """Deletes chunks of units (halving the chunk down to one) while it still fails."""
    size = max(1, len(us) // 2)
    while size >= 1:
        i, changed = 0, False
        while i < len(us):
            cand = us[:i] + us[i + size:]
            keep = any(l.startswith("passrun ") for u in us[i:i + size] for l in u)
            if not keep and still_fails(a, "\n".join(l for u in cand for l in u), combo, kind,
                                        work):
                us, changed = cand, True
            else:
                i += size
        if not changed:
            size //= 2
    return [l for u in us for l in u]


def minimize(a, text, combo, kind):
    """Delta debugging on the text: whole delegates first, then single lines."""
    lines = [l for l in text.split("\n") if l.strip() and not l.startswith("#")]
    with tempfile.TemporaryDirectory() as work:
        lines = ddmin(a, units(lines, True), combo, kind, work)
        lines = ddmin(a, units(lines, False), combo, kind, work)
    return "\n".join(lines) + "\n"


def pipeline_flags(a):
    flags = ""
    if a.pipeline != "cuda":
        flags += "--pipeline %s " % (os.path.relpath(a.pipeline, ROOT)
                                     if os.path.isabs(a.pipeline) else a.pipeline)
    flags += "--allow %s " % a.allow if a.allow else ""
    return flags + ("--no-verify-each " if a.no_verify_each else "")


def save_regression(a, path, combo, kind, detail, text):
    os.makedirs(a.save_dir, exist_ok=True)
    base = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(a.save_dir, "%s_c%d_%s.pg" % (base, combo, kind))
    opts = ",".join(OPTIONS[k] for k in range(4) if combo & (1 << k)) or "defaults"
    body = [l for l in text.split("\n") if not l.startswith("#")]
    head = ["passrun 1",
            "# difftest regression: %s failed %s under %s (pipeline %s)."
            % (base, kind, opts, os.path.relpath(a.pipeline, ROOT) if os.path.isabs(a.pipeline) else a.pipeline),
            "# %s" % detail[:300].replace("\n", " "),
            "# Minimized by tests/difftest/difftest.py; reproduce with",
            "#   difftest %s--combos %d %s" % (pipeline_flags(a), 1 << combo, os.path.basename(out))]
    with open(out, "w") as f:
        f.write("\n".join(head + [l for l in body if not l.startswith("passrun ")]).rstrip() + "\n")
    return out


def do_minimize(a, fails):
    seen, saved = set(), []
    for path, combo, kind, detail in fails:
        if path in seen or len(seen) >= a.max_minimize:
            continue
        seen.add(path)
        with open(path) as f:
            text = f.read()
        small = minimize(a, text, combo, kind)
        saved.append(save_regression(a, path, combo, kind, detail, small))
        print("difftest.py: minimized %s (%d -> %d lines) into %s"
              % (path, text.count("\n"), small.count("\n"), saved[-1]))
    return saved


# ---- main ------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pipeline", default="cuda")
    ap.add_argument("--cli-every", type=int, default=0,
                    help="also run every K-th program through the passrun binary (0: none)")
    ap.add_argument("--no-verify-each", action="store_true")
    ap.add_argument("--allow", default=None,
                    help="codes and result kinds the pipeline may show (difftest --allow)")
    ap.add_argument("--save-dir", default=None, help="where minimized failures go")
    ap.add_argument("--max-minimize", type=int, default=5)
    ap.add_argument("--expect-catches", type=float, default=None,
                    help="a tester-power run: pass when at least this %% of programs fail")
    ap.add_argument("--keep", default=None, help="write the programs here (default: a temp dir)")
    ap.add_argument("--minimize", default=None, help="minimize this one file under --combo")
    ap.add_argument("--minimize-seed", type=int, default=None,
                    help="minimize generated program number N under --combo")
    ap.add_argument("--combo", type=int, default=0)
    ap.add_argument("--kind", default=None, help="with --minimize: the failure kind to keep")
    a = ap.parse_args()
    if a.pipeline.endswith((".yaml", ".yml")):
        a.pipeline = os.path.abspath(a.pipeline)

    if a.minimize_seed is not None:
        tmp = tempfile.TemporaryDirectory()
        a.minimize = generate(a.minimize_seed, 1, tmp.name)[0]
    if a.minimize:
        with open(a.minimize) as f:
            text = f.read()
        p = subprocess.run(tester_cmd(a, ["--combos", str(1 << a.combo), a.minimize]),
                           capture_output=True, text=True)
        fails, _ = parse_output(p.stdout)
        if not fails:
            print("difftest.py: %s does not fail under combo %d" % (a.minimize, a.combo))
            return 1
        kind = a.kind or fails[0][2]
        small = minimize(a, text, a.combo, kind)
        if a.save_dir:
            print(save_regression(a, a.minimize, a.combo, kind, fails[0][3], small))
        else:
            sys.stdout.write(small)
        before = len([l for l in text.split("\n") if l.strip() and not l.startswith("#")])
        after = len(small.strip().split("\n"))
        print("difftest.py: minimized %d -> %d lines, still %s" % (before, after, kind))
        return 0 if after < before else 1

    with tempfile.TemporaryDirectory() as tmp:
        out_dir = a.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        files = generate(a.seed, a.count, out_dir)
        chunks = [files[i:i + CHUNK] for i in range(0, len(files), CHUNK)]
        fails, counts, crashed, problems = [], {}, [], []
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
            futs = [ex.submit(run_chunk, a, ch, tmp, i) for i, ch in enumerate(chunks)]
            if a.cli_every:
                futs += [ex.submit(cli_check, a, f) for f in files[::a.cli_every]]
            for fu in futs:
                r = fu.result()
                if isinstance(r, tuple):
                    fl, c, cr = r
                    fails += fl
                    crashed += cr
                    for k, v in c.items():
                        counts[k] = counts.get(k, 0) + v
                else:
                    problems += r
        for path, rc, err in crashed:
            fails.append((path, 0, "crash", "exit %d: %s" % (rc, err)))
        report(a, counts, fails, problems, len(files[::a.cli_every]) if a.cli_every else 0)
        if a.expect_catches is not None:
            caught = counts.get("programs", 0) - counts.get("programs_ok", 0)
            pct = 100.0 * caught / max(1, counts.get("programs", 0))
            print("difftest.py: the tester caught %d of %d programs (%.1f%%) with %s"
                  % (caught, counts.get("programs", 0), pct, a.pipeline))
            return 0 if pct >= a.expect_catches and not crashed else 1
        if fails and a.save_dir:
            do_minimize(a, sorted(fails))
        return 1 if fails or problems else 0


def report(a, counts, fails, problems, n_cli):
    by_prog = {}
    for path, combo, kind, detail in fails:
        by_prog.setdefault(path, (combo, kind, detail))
    for path, (combo, kind, detail) in sorted(by_prog.items())[:20]:
        print("FAIL %s combo=%d %s: %s" % (path, combo, kind, detail[:400]))
    for path, combo, kind, detail in problems[:20]:
        print("CLI-FAIL %s combo=%d %s: %s" % (path, combo, kind, detail[:400]))
    runs = " ".join("%s=%d" % (k[5:], v) for k, v in sorted(counts.items()) if k.startswith("runs_"))
    progs = " ".join("%s=%d" % (k[9:], v) for k, v in sorted(counts.items())
                     if k.startswith("programs_"))
    print("difftest.py: pipeline %s: %d programs x 16 option combinations; runs: %s"
          % (a.pipeline, counts.get("programs", 0), runs))
    print("difftest.py: programs by first failing run: %s" % progs)
    print("difftest.py: %d programs also through the passrun binary (16 runs each): %d problems"
          % (n_cli, len(problems)))


if __name__ == "__main__":
    sys.exit(main())
