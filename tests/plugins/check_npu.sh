#!/usr/bin/env bash
# check_npu.sh PASSRUN DIR SRC: examples/plugin's npu device type end to end.
# DIR holds npu-device.so and npu.yaml (the example's build folder, or the
# in-tree build of it). The pipeline places and plans examples/plugin/
# npu_add.pg for the npu, sim runs it with --check, and without the plugin
# the type is refused with the registered types named.
set -euo pipefail
passrun=$1 dir=$2 src=$3
prog=$src/examples/plugin/npu_add.pg
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL (npu): $*" >&2; exit 1; }

"$passrun" --pipeline "$dir/npu.yaml" --print "$prog" >"$work/placed.pg" 2>"$work/err" ||
  { cat "$work/err"; fail "the npu pipeline"; }
grep -q '%x_h2d_npu0: f32\[2,3\]@npu:0{mem=npu:0:' "$work/placed.pg" ||
  { cat "$work/placed.pg"; fail "x is copied to npu:0 and planned in its arena"; }
grep -q 'delegate @relu(%t, %x_h2d_npu0)' "$work/placed.pg" ||
  { cat "$work/placed.pg"; fail "NPU and npu:0 are one device: no copy between the delegates"; }
[ "$(grep -c '= et_copy::_h2d_copy(' "$work/placed.pg")" = 2 ] ||
  { cat "$work/placed.pg"; fail "two h2d copies (x and w)"; }
offsets=$(grep -o 'mem=npu:0:[0-9]*' "$work/placed.pg" | sed 's/.*://' | sort -un)
[ "$(echo "$offsets" | wc -l)" -ge 2 ] || fail "the npu arena holds several tensors: $offsets"
for o in $offsets; do
  [ $((o % 64)) = 0 ] || fail "offset $o in npu:0 is not a multiple of the npu's 64-byte alignment"
done
"$passrun" --pipeline "$dir/npu.yaml" --device=sim --run=2 --check --stats=json "$prog" \
  >"$work/run.json" 2>"$work/err" || { cat "$work/err"; fail "the sim run with --check"; }
grep -q '"match": true' "$work/run.json" || { cat "$work/run.json"; fail "sim's result matches"; }
grep -q '"run": {"device": "sim".*"h2d_bytes_per_call": 48' "$work/run.json" ||
  { cat "$work/run.json"; fail "the sim npu device moved x and w in"; }
"$passrun" --device=sim --run --check "$work/placed.pg" >/dev/null 2>"$work/err" &&
  fail "a placed npu program runs without the plugin that registers npu"
grep -q "registered device type (cpu, cuda)" "$work/err" ||
  { cat "$work/err"; fail "running without the plugin names the unregistered type"; }

# Without the plugin, npu is no device type.
if "$passrun" --pipeline cuda "$prog" >/dev/null 2>"$work/err"; then
  fail "npu is a device without the plugin"
fi
grep -q 'E-UNKNOWN-DEVICE.*registered device type (cpu, cuda)' "$work/err" ||
  { cat "$work/err"; fail "the refusal lists the registered types"; }
# With it, an unknown type's refusal lists npu among them.
sed 's/target_device="NPU"/target_device="tpu"/' "$prog" >"$work/tpu.pg"
if "$passrun" --pipeline "$dir/npu.yaml" "$work/tpu.pg" >/dev/null 2>"$work/err"; then
  fail "tpu is a device"
fi
grep -q 'registered device type (cpu, cuda, npu)' "$work/err" ||
  { cat "$work/err"; fail "the registry lists the plugin's type"; }
echo "npu device type: 1 passed, 0 failed"
