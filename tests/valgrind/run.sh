#!/bin/sh
# run.sh: passrun under Valgrind on every example, with zero errors and zero leaks.
#
#   tests/valgrind/run.sh PASSRUN_EXE [EXAMPLE.pg...]     (default: examples/*.pg)
#
# Each example runs `passrun --pipeline cuda --verify-each --run=2 --check
# --device=sim --stats=json` natively first; under Valgrind it must exit the
# same way, with no memory error and no definite or indirect leak (Valgrind
# exits 99 then). An example whose native run faults on purpose (exit 5: the
# simulated device's SIGSEGV for M4) is run without --run, as is one that
# stops before running (its exit status is compared all the same). A few
# examples' .bin forms (passrun convert; VALGRIND_BIN names them) run too.
# Exit 77 (ctest: skipped) when valgrind is missing.
set -u
exe=${1:?usage: run.sh PASSRUN_EXE [EXAMPLE.pg...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v valgrind >/dev/null 2>&1; then
	echo "run.sh: valgrind not found: skipped"
	exit 77
fi
[ $# -gt 0 ] || set -- "$root"/examples/*.pg
tmp=$(mktemp -d /tmp/passrun-valgrind.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
vg="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect"
vg="$vg --show-leak-kinds=definite,indirect --suppressions=$root/tests/valgrind/glibc.supp"
vg="$vg --log-file=$tmp/vg.log"
fails=0 n=0
# under_valgrind FILE LABEL: runs $run on FILE under Valgrind; it must exit $want.
under_valgrind() {
	# shellcheck disable=SC2086
	$vg "$exe" --pipeline cuda --verify-each $run "$1" >/dev/null 2>"$tmp/err"
	got=$?
	n=$((n + 1))
	if [ "$got" -ne "$want" ]; then
		echo "FAIL $2: exit $got under valgrind, $want without"
		cat "$tmp/vg.log" "$tmp/err" | head -40
		fails=$((fails + 1))
	fi
}
for f in "$@"; do
	name=$(basename "$f" .pg)
	run="--run=2 --check --device=sim --stats=json"
	"$exe" --pipeline cuda --verify-each $run "$f" >/dev/null 2>&1
	want=$?
	if [ "$want" -eq 5 ]; then
		run="--stats=json"
		"$exe" --pipeline cuda --verify-each $run "$f" >/dev/null 2>&1
		want=$?
	fi
	under_valgrind "$f" "$name"
	case " ${VALGRIND_BIN:-b1_h2d_inputs f10_device_constants f6_buffer_writeback decoder} " in
	*" $name "*) ;;
	*) continue ;;
	esac
	"$exe" convert "$f" "$tmp/$name.bin" >/dev/null 2>&1 || continue
	under_valgrind "$tmp/$name.bin" "$name.bin"
done
echo "run.sh: $n valgrind runs, $fails failing"
[ "$fails" -eq 0 ]
