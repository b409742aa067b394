#!/bin/sh
# Regenerates docs/pipeline-reference.md from the code: every pass the shipped
# plugins register (with its options) and every shipped pipeline, as
# `passrun --list-passes=markdown` prints them. tests/unit/test_docs.c fails
# when the committed file differs, so run this after changing a pass's
# options or summary, or a pipeline.
#
#   docs/gen-pipeline-reference.sh [PASSRUN]     (default: build/bin/passrun)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
passrun=${1:-$here/../build/bin/passrun}
if [ ! -x "$passrun" ]; then
	echo "gen-pipeline-reference: $passrun is not built (give the passrun binary as argument)" >&2
	exit 2
fi
out=$here/pipeline-reference.md
tmp=$out.tmp.$$
# Only the shipped plugins: nothing from the caller's environment.
env -u PASSRUN_PLUGIN_PATH "$passrun" --list-passes=markdown >"$tmp"
mv "$tmp" "$out"
echo "wrote $out"
