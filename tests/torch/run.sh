#!/bin/sh
# run.sh PASSRUN [DEVICE]: every examples/torch/*/ on DEVICE (sim or cuda),
# compared with eager PyTorch's outputs. For tests/gpu/run.sh:
#   tests/torch/run.sh build-gpu/bin/passrun cuda
HERE=$(cd "$(dirname "$0")" && pwd)
fail=0
for d in "$HERE"/../../examples/torch/*/; do
	[ -f "$d/model.pg" ] || continue
	name=$(basename "$d")
	if sh "$HERE/run_one.sh" "$1" "$d" "${2:-sim}" >/dev/null; then
		echo "$name: matches eager PyTorch (${2:-sim})"
	else
		echo "$name: FAILED (${2:-sim})"; fail=1
	fi
done
exit $fail
