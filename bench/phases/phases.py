#!/usr/bin/env python3
"""phases.py: where a whole `passrun --pipeline cuda X -o OUT` goes, phase by
phase, on generated decoders of each size (bench/phases/run.sh is the entry).

    phases.py PASSRUN NODES...

For each size: examples/gen/gen_decoder.py --nodes N writes X.pg and
`passrun convert` writes X.bin. Then, for .bin in/out and .pg in/out:

- wall milliseconds per phase, the least of RUNS runs (default 3) each:
  the rows of passrun's own --time-passes table (plugins, pipeline, program
  load, the input's verification, every pass) of a run with -o; what that
  table leaves out, measured as differences of the whole run's wall time:
  write = (run with -o) - (run without -o), verify of the result = (run
  without -o) - (run without -o, with --disable-verify) (both only when the
  table has no "(write program)" / "(verify result)" row: builds from before
  the speed work), and the rest (the
  diagnostics printed between passes, the summary, freeing, exit, process
  start) = (run without -o, --disable-verify) - the table's total. The
  differences are as noisy as the machine is busy.
- the whole run: wall ms, CPU (user + system) s and peak RSS MB, of the run
  with -o (measure.py: /usr/bin/time). RUNS=0 measures no wall time (only
  instructions: a callgrind run alone).
- instructions per phase (CALLGRIND, formats to count, default "bin pg";
  "" for none): one run under valgrind --tool=callgrind with
  --dump-before=F for each phase's entry function F (cg_phase below), so
  that each dump holds what ran since the last, and the dumps sum to the
  whole run exactly. The phase a dump belongs to is decided by the order of
  the triggers, not by inlining-dependent inclusive costs.

FORMATS (default "bin pg") chooses the formats measured at all, PIPELINE
(default cuda) the pipeline. Python 3 standard library only;
valgrind only when CALLGRIND is not empty.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ left in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import measure  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RUNS = int(os.environ.get("RUNS", "3"))
CALLGRIND = os.environ.get("CALLGRIND", "bin pg").split()
FORMATS = os.environ.get("FORMATS", "bin pg").split()
PIPELINE = os.environ.get("PIPELINE", "cuda")

# A --time-passes row: ms, percent, changed, name ("(load program)" for a
# phase that is not a pass).
ROW = re.compile(r"^\s*([0-9.]+)\s+[0-9.]+%\s+(yes\s+|no\s+|-\s+)?(\S.*?)\s*$")

# The functions whose entry starts a phase (callgrind --dump-before). A
# trigger counts only in the phase the table names, so that the same
# function called elsewhere (a pass that frees a program, say) moves
# nothing: (phase now, trigger) -> next phase; "pass" means the next pass.
# The load starts at the provenance hash of the input where passrun takes
# one first (every run before the speed work; since then only when a
# provenance record is printed), else at the load itself.
TRIGGERS = ["pr_file_fnv1a64", "pr_program_load_file", "pr_verify", "time_before",
            "time_after", "pr_program_save_file", "pr_diags_print_summary",
            "pr_program_free"]
MOVES = {
    ("startup", "pr_file_fnv1a64"): "load",
    ("startup", "pr_program_load_file"): "load",
    ("load", "pr_verify"): "verify input",
    ("verify input", "time_before"): "pass",
    ("between passes", "time_before"): "pass",
    ("pass", "time_after"): "between passes",
    ("between passes", "pr_verify"): "verify result",
    ("verify result", "pr_program_save_file"): "write",
    ("write", "pr_diags_print_summary"): "report",
    ("report", "pr_program_free"): "free and exit",
}


def passes_of(passrun):
    """The pipeline's passes, in order (from --print-pipeline)."""
    text = subprocess.run([passrun, "--pipeline", PIPELINE, "--print-pipeline"],
                          check=True, capture_output=True, text=True).stdout
    body = text.split("\npasses:\n", 1)[1]
    return [m.group(1) for m in re.finditer(r"^  - ([^\s{]+)", body, re.M)]


def time_table(path):
    """{name: ms} of the --time-passes table in the stderr file path."""
    rows = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = ROW.match(line)
            if m:
                rows[m.group(3)] = float(m.group(1))
    if "total" not in rows:
        sys.exit("bench: no --time-passes table in %s" % path)
    return rows


def wall_phases(passrun, prog, out, work):
    """Least-of-RUNS wall ms per phase, and the whole run's numbers."""
    base = [passrun, "--pipeline", PIPELINE, "--time-passes", prog]
    err = os.path.join(work, "stderr.txt")
    tables, whole, no_out, no_verify, no_verify_table = [], [], [], [], []
    for _ in range(RUNS):
        whole.append(measure.run(base + ["-o", out], stderr=err))
        tables.append(time_table(err))
        no_out.append(measure.run(base, stderr=err)["wall_ms"])
        no_verify.append(measure.run(base + ["--disable-verify"], stderr=err)["wall_ms"])
        no_verify_table.append(time_table(err)["total"])
    ms = {name: min(t[name] for t in tables) for name in tables[0]}
    ms["(load plugins + pipeline)"] = ms.pop("(load plugins)") + ms.pop("(load pipeline)")
    ms["(--time-passes total)"] = ms.pop("total")
    best = {k: min(w[k] for w in whole) for k in whole[0]}
    best["cpu_s"] = min(w["user_s"] + w["sys_s"] for w in whole)
    # passrun's table has these two rows since the speed work; older builds
    # (the "before") leave them out, so they are differences of whole runs.
    if "(write program)" not in ms:
        ms["(write program)"] = best["wall_ms"] - min(no_out)
    if "(verify result)" not in ms:
        ms["(verify result)"] = min(no_out) - min(no_verify)
    ms["(the rest)"] = min(no_verify) - min(no_verify_table)
    return ms, best


def dump_files(prefix):
    """The dumps in the order they were written: PREFIX.1, PREFIX.2, ...,
    then PREFIX itself (the one at program termination)."""
    numbered = glob.glob(prefix + ".*")
    numbered.sort(key=lambda p: int(p.rsplit(".", 1)[1]))
    return numbered + [prefix]


def dump_head(path):
    """(trigger function or None, instructions) of one callgrind dump."""
    trigger, total = None, None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("desc: Trigger: --dump-before="):
                trigger = line.split("=", 1)[1].strip()
            elif line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
                break
    if total is None:
        sys.exit("bench: no totals in callgrind dump %s" % path)
    return trigger, total


def cg_phase(passrun, prog, out, work, passes):
    """Instructions per phase (one callgrind run), keyed like wall_phases."""
    prefix = os.path.join(work, "callgrind.out")
    for old in glob.glob(prefix + "*"):
        os.unlink(old)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + prefix]
    cmd += ["--dump-before=" + f for f in TRIGGERS]
    cmd += [passrun, "--pipeline", PIPELINE, prog, "-o", out]
    log = os.path.join(work, "callgrind.log")
    with open(log, "wb") as err:
        if subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=err) != 0:
            sys.exit("bench: callgrind run failed (see %s)" % log)
    counts, phase, k = {}, "startup", -1
    names = {"startup": "(load plugins + pipeline)", "load": "(load program)",
             "verify input": "(verify)", "between passes": "(between passes)",
             "verify result": "(verify result)", "write": "(write program)",
             "report": "(report)", "free and exit": "(free and exit)"}
    for path in dump_files(prefix):
        trigger, total = dump_head(path)
        key = passes[k] if phase == "pass" else names[phase]
        counts[key] = counts.get(key, 0) + total
        nxt = MOVES.get((phase, trigger))
        if nxt == "pass":
            k += 1
        phase = nxt or phase
    if phase != "free and exit" or k != len(passes) - 1:
        sys.exit("bench: callgrind's dumps did not follow the phases (ended in '%s' after "
                 "%d of %d passes): has a trigger function in TRIGGERS been renamed?"
                 % (phase, k + 1, len(passes)))
    counts["total"] = sum(counts.values())
    return counts


def cell(d, key, form):
    return "—" if d is None or d.get(key) is None else form(d[key])


def print_table(n, passes, results):
    """One markdown table for one size; results: fmt -> (ms, whole, ir),
    any of them None when not measured."""
    fmts = list(results)
    rows = ["(load plugins + pipeline)", "(load program)", "(verify)"] + passes
    rows += ["(between passes)", "(verify result)", "(write program)", "(report)",
             "(free and exit)", "(the rest)", "(--time-passes total)"]
    print("\n%s nodes (wall: least of %d runs; `—`: not measured that way)\n"
          % ("{:,}".format(n), RUNS))
    print("| phase |" + "".join(" .%s ms | .%s instructions |" % (f, f) for f in fmts))
    print("| --- |" + " ---: | ---: |" * len(fmts))
    ms_form, ir_form = (lambda v: "%.1f" % v), (lambda v: "{:,}".format(v))
    for r in rows:
        print("| %s |%s" % (r, "".join(" %s | %s |" % (cell(results[f][0], r, ms_form),
                                                      cell(results[f][2], r, ir_form))
                                       for f in fmts)))
    print("| whole run |%s" % "".join(" %s | %s |" % (cell(results[f][1], "wall_ms", ms_form),
                                                     cell(results[f][2], "total", ir_form))
                                      for f in fmts))
    for label, key, form in (("whole run, CPU (user + system) s", "cpu_s", "%.2f"),
                             ("peak RSS MB", "rss_mb", "%.0f")):
        print("| %s |%s" % (label, "".join(" %s | |" % cell(results[f][1], key,
                                                            lambda v: form % v)
                                          for f in fmts)))


def size(passrun, n, work, passes):
    pg = os.path.join(work, "d%d.pg" % n)
    bin_ = os.path.join(work, "d%d.bin" % n)
    subprocess.run([sys.executable, os.path.join(ROOT, "examples/gen/gen_decoder.py"),
                    "--nodes", str(n), "-o", pg], check=True)
    subprocess.run([passrun, "convert", pg, bin_], check=True, stdout=subprocess.DEVNULL)
    results = {}
    for fmt, prog in (("bin", bin_), ("pg", pg)):
        if fmt not in FORMATS:
            continue
        out = os.path.join(work, "out." + fmt)
        ms, whole = wall_phases(passrun, prog, out, work) if RUNS else (None, None)
        ir = cg_phase(passrun, prog, out, work, passes) if fmt in CALLGRIND else None
        results[fmt] = (ms, whole, ir)
    print_table(n, passes, results)
    sys.stdout.flush()


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: run.sh PASSRUN NODES...")
    passrun = os.path.abspath(argv[1])
    passes = passes_of(passrun)
    work = tempfile.mkdtemp(prefix="passrun-bench-phases.")
    try:
        for n in argv[2:]:
            size(passrun, int(n), work, passes)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main(sys.argv)
