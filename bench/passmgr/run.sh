#!/bin/sh
# bench/passmgr/run.sh: the overhead of the pass manager itself.
#
#   bench/passmgr/run.sh [BUILD] [NODES]     (default: build, 1000000)
#
# Uses passrun's own --time-passes table (milliseconds on a monotonic clock):
#   - loading every shipped plugin (the build tree's plugin folder), on a tiny
#     program, best of 5;
#   - loading and checking a pipeline (YAML parse + validation), best of 5;
#   - on a NODES-node program (gen_chain.py, converted to .bin so that loading
#     is quick): one empty pass (test-noop, from the test plugin), twenty
#     empty passes, the dce pass (a real linear walk that removes half the
#     nodes), and building the --stats=json text. Needs the test plugins
#     (PASSRUN_TESTS=ON).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
nodes=${2:-1000000}
passrun=$build/bin/passrun
good=$build/tests/plugins/prtest_good.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ms of the row NAME of a --time-passes table on stdin
row() {
	awk -v n="$1" '{ s = $0; sub(/^ *[0-9.]+ +[0-9.]+% +[a-z-]+ +/, "", s); if (s == n) { print $1; exit } }'
}
best() { sort -g | head -1; }

printf 'passrun 1\nop aten::relu(Tensor self) -> Tensor\nmethod @forward {\n  %%x: f32[4] = input user "x"\n  %%r: f32[4] = aten::relu(%%x)\n  return %%r\n}\n' >"$tmp/tiny.pg"
pipeline=$root/tests/pipelines/good.yaml

n_plugins=$(ls "$build"/lib/passrun/plugins/*.so | wc -l)
load=$(for i in 1 2 3 4 5; do "$passrun" "$tmp/tiny.pg" --time-passes 2>&1 >/dev/null | row '(load plugins)'; done | best)
pipe=$(for i in 1 2 3 4 5; do "$passrun" --no-default-plugins --plugin "$good" --pipeline "$pipeline" "$tmp/tiny.pg" --time-passes 2>&1 >/dev/null | row '(load pipeline)'; done | best)

python3 "$here/gen_chain.py" --nodes "$nodes" -o "$tmp/big.pg"
"$passrun" convert "$tmp/big.pg" "$tmp/big.bin"
big=$tmp/big.bin
t=$("$passrun" --no-default-plugins --plugin "$good" --passes test-noop "$big" --time-passes 2>&1 >/dev/null)
noop=$(echo "$t" | row test-noop)
loadprog=$(echo "$t" | row '(load program)')
verify=$(echo "$t" | row '(verify)')
twenty=$(printf 'test-noop,%.0s' $(seq 20) | sed 's/,$//')
t20=$("$passrun" --no-default-plugins --plugin "$good" --passes "$twenty" "$big" --time-passes 2>&1 >/dev/null | awk '$NF == "test-noop" { s += $1 } END { printf "%.3f", s }')
tdce=$("$passrun" --no-default-plugins --plugin "$build/lib/passrun/plugins/dce.so" --passes dce "$big" --time-passes 2>&1 >/dev/null | row dce)
tstats=$("$passrun" --no-default-plugins "$big" --stats=json --time-passes 2>&1 >/dev/null | row '(stats)')

printf '%-44s %10s ms\n' "load the $n_plugins shipped plugins" "$load"
printf '%-44s %10s ms\n' "load + check $(basename "$pipeline")" "$pipe"
printf '%-44s %10s ms\n' "load a $nodes-node program (.bin)" "$loadprog"
printf '%-44s %10s ms\n' "verify it" "$verify"
printf '%-44s %10s ms\n' "one empty pass over it" "$noop"
printf '%-44s %10s ms\n' "twenty empty passes over it (sum)" "$t20"
printf '%-44s %10s ms\n' "dce over it (removes every other op)" "$tdce"
printf '%-44s %10s ms\n' "--stats=json of it" "$tstats"
