#!/bin/sh
# bench/phases/run.sh: per-phase wall time, instructions and peak memory of
# `passrun --pipeline cuda X -o OUT` on generated decoders, .bin and .pg.
#
#   bench/phases/run.sh PASSRUN NODES...
#
# One markdown table per size; phases.py says what each row measures.
# Environment: RUNS (default 3), FORMATS (default "bin pg"), CALLGRIND
# (formats counted under callgrind, default "bin pg"; "" for none), PIPELINE
# (default cuda), TMPDIR.
set -eu
exec python3 "$(dirname "$0")/phases.py" "$@"
