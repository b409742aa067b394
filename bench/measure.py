"""measure.py: one command's wall time, CPU time and peak memory, as the
benchmarks under bench/phases and bench/vs_opt report them.

The command runs under /usr/bin/time (GNU time: user and system seconds and
the peak resident set size, from the kernel's accounting of the process);
the wall time is taken here on a monotonic clock around it, to the
millisecond (GNU time prints hundredths of a second), and so includes
starting /usr/bin/time itself (about a millisecond). Python 3 standard
library only.
"""
import os
import subprocess
import sys
import tempfile
import time

TIME = "/usr/bin/time"


def run(cmd, stdout=subprocess.DEVNULL, stderr=None):
    """Runs cmd (a list) once; returns {'wall_ms', 'user_s', 'sys_s',
    'rss_mb', 'rc'}. stderr is a path for the command's stderr (None: thrown
    away). A command that fails stops the benchmark: its numbers would not
    be the numbers of the work it was asked to do."""
    fd, tpath = tempfile.mkstemp(prefix="passrun-bench-time.")
    os.close(fd)
    err = open(stderr, "wb") if stderr else subprocess.DEVNULL
    try:
        t0 = time.monotonic()
        rc = subprocess.call([TIME, "-f", "%U %S %M", "-o", tpath] + cmd,
                             stdout=stdout, stderr=err)
        wall = (time.monotonic() - t0) * 1000.0
        with open(tpath) as f:
            lines = f.read().split("\n")
    finally:
        if stderr:
            err.close()
        os.unlink(tpath)
    if rc != 0:
        sys.exit("bench: %s exited with status %d%s" % (" ".join(cmd), rc,
                 " (its stderr is in %s)" % stderr if stderr else ""))
    # GNU time writes "Command exited with non-zero status" first when it
    # does; the numbers are the last non-empty line.
    user, sys_s, rss = [line for line in lines if line.strip()][-1].split()
    return {"wall_ms": wall, "user_s": float(user), "sys_s": float(sys_s),
            "rss_mb": int(rss) / 1024.0, "rc": rc}


def best_of(n, cmd, stdout=subprocess.DEVNULL, stderr=None):
    """Runs cmd n times; each number is the least over the runs (the run
    least disturbed by the rest of the machine), taken separately."""
    runs = [run(cmd, stdout, stderr) for _ in range(n)]
    return {k: min(r[k] for r in runs) for k in runs[0]}, runs
