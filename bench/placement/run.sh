#!/bin/sh
# bench/placement/run.sh: time and peak memory of the full cuda.yaml placement
# on generated decoder-like programs (examples/gen/gen_decoder.py).
#
#   bench/placement/run.sh PASSRUN NODES...
#
# For each size it generates the program, then runs
#   passrun --pipeline cuda --time-passes PROGRAM
# under /usr/bin/time -v, and prints one markdown row: nodes, wall and CPU
# (user + system) seconds of the whole run (load, passes, verification), the milliseconds of the placement passes alone (every pass of
# cuda.yaml but memory-plan, from --time-passes), peak RSS in MB, and the
# number of copies and warnings (counted in a second run with --stats=json).
# Diagnostics go to a file, not the terminal.
set -eu
PASSRUN=${1:?usage: run.sh PASSRUN NODES...}
shift
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${TMPDIR:-/tmp}/passrun-bench-placement.$$
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

PLACEMENT='param-layout|cpu-delegates|getitem-outputs|device-constants|propagate-device|elide-round-trips|outputs-on-device|copy-reuse|per-call-copies'

echo "| nodes | wall s | CPU s | placement passes ms | memory-plan ms | peak RSS MB | RSS, load only MB | h2d copies | d2h copies | warnings |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in "$@"; do
	prog="$WORK/decoder-$n.pg"
	python3 "$ROOT/examples/gen/gen_decoder.py" --nodes "$n" -o "$prog"
	/usr/bin/time -v "$PASSRUN" --pipeline cuda --time-passes "$prog" \
		>/dev/null 2>"$WORK/err.txt"
	# What loading the program alone costs, for comparison.
	/usr/bin/time -v "$PASSRUN" --passes cpu-delegates "$prog" >/dev/null 2>"$WORK/load.txt"
	rss0=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/load.txt")
	# Counted in a second run: --stats=json has its own cost in time and memory.
	"$PASSRUN" --pipeline cuda --stats=json "$prog" >"$WORK/stats.json" 2>/dev/null
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$WORK/err.txt" |
		awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
	cpu=$(sed -n 's/.*\(User\|System\) time (seconds): //p' "$WORK/err.txt" | awk '{ s += $1 } END { printf "%.2f", s }')
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/err.txt")
	place=$(grep -E "^ *[0-9.]+ +[0-9.]+% +(yes|no) +($PLACEMENT)\$" "$WORK/err.txt" |
		awk '{ s += $1 } END { printf "%.0f", s }')
	plan=$(grep -E " memory-plan\$" "$WORK/err.txt" | awk '{ printf "%.0f", $1 }')
	h2d=$(grep -o '"h2d_copies": *[0-9]*' "$WORK/stats.json" | head -1 | grep -o '[0-9]*$')
	d2h=$(grep -o '"d2h_copies": *[0-9]*' "$WORK/stats.json" | head -1 | grep -o '[0-9]*$')
	warn=$(grep -c 'warning\[' "$WORK/err.txt" || true)
	echo "| $n | $wall | $cpu | $place | $plan | $((rss / 1024)) | $((rss0 / 1024)) | $h2d | $d2h | $warn |"
done
