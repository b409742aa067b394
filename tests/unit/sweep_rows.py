"""Checks a `passrun compare --format=jsonl` sweep row by row against single
runs: each row must say what `passrun --pipeline P --set ... PROGRAM --check
--disable-verify --stats=json` says of that cell (exit status, diagnostics per code, and, when
the passes all ran, the copies and bytes of every method).

usage: sweep_rows.py PASSRUN ROWS.jsonl EXPECTED_ROWS [RUN OPTIONS...]
Prints "ok N" when every row agrees; else the first disagreement, exit 1."""
import collections
import json
import subprocess
import sys

passrun, rows_file, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = sys.argv[4:]
rows = [json.loads(line) for line in open(rows_file)]
if len(rows) != expected:
    sys.exit("%d rows, expected %d" % (len(rows), expected))
KEYS = ["h2d_copies", "d2h_copies", "h2d_bytes_per_call", "d2h_bytes_per_call",
        "load_h2d_bytes"]
for i, row in enumerate(rows):
    prov = row["provenance"]
    cmd = [passrun, "--pipeline", row["pipeline"], row["program"], "--check", "--disable-verify",
           "--stats=json"]
    for a in prov["overrides"]:
        cmd += ["--set", a]
    run = subprocess.run(cmd + extra, capture_output=True, text=True)
    where = "row %d (%s): " % (i, " ".join(cmd))
    if run.returncode != row["exit"]:
        sys.exit(where + "exit %d, row says %d" % (run.returncode, row["exit"]))
    stats = json.loads(run.stdout)
    codes = collections.Counter(d["code"] for d in stats["diagnostics"])
    if dict(codes) != row["codes"]:
        sys.exit(where + "codes %s, row says %s" % (dict(codes), row["codes"]))
    if stats["provenance"]["program_fnv1a64"] != prov["program_fnv1a64"]:
        sys.exit(where + "another program hash")
    if stats["provenance"]["pipeline"] != prov["pipeline"]:
        sys.exit(where + "another pipeline: %s" % stats["provenance"]["pipeline"])
    if not row["placed"]:
        if row["methods"] or not row["message"] or row["status"] == "ok":
            sys.exit(where + "a cell whose passes stopped must have no counts and a message")
        continue
    for name, m in stats["methods"].items():
        got = {k: m[k] for k in KEYS}
        want = {k: row["methods"][name][k] for k in KEYS}
        if got != want:
            sys.exit(where + "method %s: %s, row says %s" % (name, got, want))
print("ok", len(rows))
