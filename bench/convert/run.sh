#!/bin/sh
# bench/convert/run.sh: time `passrun convert` text -> binary -> text on
# generated programs of growing size, and check the round trip is lossless.
#
#   bench/convert/run.sh [PASSRUN] [NODES...]     (default: build/bin/passrun, 250000 500000 1000000)
#
# Prints one line per size: nodes, file sizes, wall seconds and peak memory of
# each direction. Times roughly proportional to the node count mean no
# quadratic behaviour. Files go to a temporary folder that is removed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
passrun=${1:-build/bin/passrun}
[ $# -gt 0 ] && shift
sizes=${*:-250000 500000 1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() {   # measure OUTVAR-prefix command...: sets ${1}_s and ${1}_mb
	name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$tmp/time" "$@"
	read -r secs kb <"$tmp/time"
	eval "${name}_s=$secs ${name}_mb=$((kb / 1024))"
}

printf '%9s %10s %10s %14s %14s %s\n' nodes pg_bytes bin_bytes 'pg->bin s(MB)' 'bin->pg s(MB)' lossless
for n in $sizes; do
	python3 "$here/gen_big.py" --nodes "$n" -o "$tmp/big.pg"
	measure to_bin "$passrun" convert "$tmp/big.pg" "$tmp/big.bin"
	measure to_pg "$passrun" convert "$tmp/big.bin" "$tmp/back.pg"
	"$passrun" --print "$tmp/big.pg" >"$tmp/printed.pg"
	if cmp -s "$tmp/printed.pg" "$tmp/back.pg"; then same=yes; else same=NO; fi
	printf '%9d %10d %10d %8s (%4d) %8s (%4d) %s\n' "$n" "$(wc -c <"$tmp/big.pg")" \
		"$(wc -c <"$tmp/big.bin")" "$to_bin_s" "$to_bin_mb" "$to_pg_s" "$to_pg_mb" "$same"
	[ "$same" = yes ]
done
