#!/bin/sh
# run_one.sh PASSRUN EXAMPLE_DIR [DEVICE] [PIPELINE]
#
# Runs one exported PyTorch program (examples/torch/NAME/model.pg) with its
# committed inputs: passrun --pipeline PIPELINE --run --check --device=DEVICE
# --input NAME=inputs/NAME.npy ... --output-dir TMP, then compares every
# output with eager PyTorch's (expected/forward.I.npy) with npy_compare.py
# (python3 standard library; rtol 1e-4). --check alone compares with
# passrun's reference interpreter; this compares with PyTorch itself.
set -u
PASSRUN=$1
DIR=$2
DEVICE=${3:-sim}
PIPELINE=${4:-cuda}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/passrun-torch.XXXXXX") || exit 2
trap 'rm -rf "$OUT"' EXIT
set --
for f in "$DIR"/inputs/*.npy; do
	[ -e "$f" ] || continue
	set -- "$@" --input "$(basename "$f" .npy)=$f"
done
"$PASSRUN" --pipeline "$PIPELINE" --run --check --device="$DEVICE" "$@" \
	--output-dir "$OUT" "$DIR/model.pg" 2>"$OUT/stderr"
rc=$?
grep -v 'W-CONSTANT-COPY\|W-LAYOUT-CHANGED' "$OUT/stderr" >&2
if [ $rc -ne 0 ]; then
	echo "run_one.sh: passrun exited with $rc on $DIR/model.pg" >&2
	exit 1
fi
python3 "$HERE/npy_compare.py" --rtol 1e-4 --atol 1e-5 "$DIR/expected" "$OUT"
