#!/bin/sh
# bench/vs_opt/run.sh: passrun --pipeline cuda against LLVM's
# opt -passes='verify,dce,adce,verify' on programs of the same size.
#
#   bench/vs_opt/run.sh PASSRUN NODES
#
# One markdown table; vs_opt.py says what is measured. Environment: RUNS
# (default 3), OPT and LLVM_AS (default opt, llvm-as), TMPDIR.
set -eu
exec python3 "$(dirname "$0")/vs_opt.py" "$@"
