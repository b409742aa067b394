#!/bin/sh
# Redraws the pictures of the README (docs/images/*.svg) with passrun --dot
# and Graphviz: examples/et_two_devices.pg before any pass and after the cuda
# pipeline, and examples/f9_per_call_copies.pg after cuda with both skip
# flags, where the copies that still run on every call are outlined in red.
#
#   docs/gen-pictures.sh [PASSRUN]     (default: build/bin/passrun)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$here/..
passrun=${1:-$root/build/bin/passrun}
out=$here/images
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
draw() { # NAME PASSRUN-ARGS...
	name=$1
	shift
	env -u PASSRUN_PLUGIN_PATH "$passrun" "$@" --dot "$tmp/$name.dot" 2>/dev/null
	dot -Tsvg "$tmp/$name.dot" -o "$out/$name.svg"
	echo "wrote $out/$name.svg"
}
draw et_two_devices_before "$root/examples/et_two_devices.pg"
draw et_two_devices_cuda --pipeline cuda "$root/examples/et_two_devices.pg"
draw f9_per_call_copies_cuda --pipeline cuda --set skip_h2d_for_method_inputs=true \
	--set skip_d2h_for_method_outputs=true "$root/examples/f9_per_call_copies.pg"
