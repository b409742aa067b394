#!/bin/sh
# The researcher's sweep in one command: 67 programs (the 46 examples, the
# 6 exported models of examples/torch, 10 random programs and 5 decoders of
# 100 to 10,000 nodes) x baseline, cuda and the 10 ablations x the 8
# combinations of the three skip flags, every cell checked on sim, into one
# CSV with provenance in every row.
#
#   bench/sweep/run.sh [BUILD] [OUT.csv] [JOBS]   (defaults: build, sweep.csv, 2)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-sweep.csv}
JOBS=${3:-2}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

python3 "$ROOT/examples/gen/gen_random.py" --seed 1 --count 10 --out-dir "$TMP"
for n in 100 300 1000 3000 10000; do
	python3 "$ROOT/examples/gen/gen_decoder.py" --nodes $n -o "$TMP/decoder_$n.pg"
done
start=$(date +%s)
"$BUILD/bin/passrun" compare --pipelines 'baseline,cuda,ablate/*' -j "$JOBS" --format=csv -o "$OUT" \
	--grid skip_h2d_for_method_inputs=true,false --grid skip_d2h_for_method_outputs=true,false \
	--grid skip_h2d_for_constants=true,false \
	"$ROOT/examples/*.pg" "$ROOT/examples/torch/*/model.pg" "$TMP/*.pg"
echo "sweep: $(($(wc -l < "$OUT") - 1)) rows in $(($(date +%s) - start)) s with -j $JOBS: $OUT"
