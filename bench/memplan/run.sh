#!/bin/sh
# bench/memplan/run.sh BUILD_DIR [MAX_NODES]: memory planning, planned bytes
# against the lower bound and planning time, on every examples/*.pg and on
# generated programs up to MAX_NODES (default 1000000) nodes. Prints one
# markdown table (see bench/README.md, section memplan).
#
# Programs are placed first (the shipped cuda pipeline with
# skip_h2d_for_constants, else propagate-device alone), so that device
# tensors and copies are there; bench_memplan then plans each method with the
# memory-plan plugin's own code and its defaults (alignment 16), checks the
# plan with the core's checker, and times it.
set -eu
BUILD=$(cd "${1:-build}" && pwd)
MAX=${2:-1000000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PASSRUN=$BUILD/bin/passrun
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cc -O2 -I"$ROOT/include" -I"$ROOT/plugins/memory-plan" "$ROOT/bench/memplan/bench_memplan.c" \
	"$ROOT/plugins/memory-plan/planner.c" -L"$BUILD/lib" -lpassrun -Wl,-rpath,"$BUILD/lib" \
	-o "$TMP/bench_memplan"

PIPE="--pipeline $ROOT/pipelines/cuda.yaml --set skip_h2d_for_constants=true"
if ! "$PASSRUN" $PIPE "$ROOT/examples/m1_lifetimes.pg" >/dev/null 2>&1; then
	PIPE="--passes propagate-device"
fi

# place IN OUT: the placed program, or the program as it is when placing fails.
place() {
	if ! timeout 600 "$PASSRUN" $PIPE -o "$2" "$1" >/dev/null 2>"$TMP/err"; then
		cp "$1" "$2"
	fi
}

echo "| program | method | arena | tensors | planned | lower bound | ratio | aligned bound | ratio to it | plan from | lifetimes ms | plan ms |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"
for f in "$ROOT"/examples/*.pg; do
	name=$(basename "$f")
	place "$f" "$TMP/$name"
	"$TMP/bench_memplan" "$TMP/$name" || echo "| $name | (plan check failed) |"
done

n=1000
while [ "$n" -le "$MAX" ]; do
	if [ -f "$ROOT/examples/gen/gen_decoder.py" ]; then
		python3 "$ROOT/examples/gen/gen_decoder.py" --nodes "$n" -o "$TMP/gen.pg"
		place "$TMP/gen.pg" "$TMP/decoder_$n.pg"
		"$TMP/bench_memplan" "$TMP/decoder_$n.pg"
	fi
	python3 "$ROOT/bench/memplan/gen_decoder.py" "$n" 1 > "$TMP/kv_decoder_$n.pg"
	"$TMP/bench_memplan" "$TMP/kv_decoder_$n.pg"
	python3 "$ROOT/bench/memplan/gen_decoder.py" "$n" 1 nocache > "$TMP/decoder_nocache_$n.pg"
	"$TMP/bench_memplan" "$TMP/decoder_nocache_$n.pg"
	python3 "$ROOT/bench/memplan/gen_random.py" unet "$n" 1 > "$TMP/unet_$n.pg"
	"$TMP/bench_memplan" "$TMP/unet_$n.pg"
	if [ "$n" -le 100000 ]; then
		python3 "$ROOT/bench/memplan/gen_random.py" random "$n" 1 > "$TMP/random_$n.pg"
		"$TMP/bench_memplan" "$TMP/random_$n.pg"
	fi
	n=$((n * 10))
done
