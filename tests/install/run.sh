#!/usr/bin/env bash
# The SDK test: install into a fresh prefix, build the out-of-tree plugin
# with nothing but the installed package, load it with --plugin, and check
# its effect; run its golden tests (examples/plugin/tests) through the
# installed passrun-lit and passrun_add_golden_tests; build a client of the
# installed host-writes header. Also: the installed passrun finds its
# installed plugins and pipelines with no environment variable.
set -euo pipefail
build=$1 src=$2 cc=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" >/dev/null
# No installed binary or plugin names an empty or relative RUNPATH entry.
bash "$src/tests/elf/check_runpath.sh" "$work/prefix" >/dev/null ||
  fail "an installed RUNPATH has an empty or relative entry"
unset PASSRUN_PLUGIN_PATH
passrun=$work/prefix/bin/passrun
prog=$src/examples/f8_constant_three_devices.pg
[ -f "$prog" ] || prog=$src/examples/b1_h2d_inputs.pg

# The installed tool sees the installed plugins and pipelines, from anywhere.
cd "$work"
"$passrun" --list-passes >list.txt
grep -q "propagate-device" list.txt || fail "installed passrun does not list the shipped passes"
"$passrun" --pipeline cuda "$prog" --stats=json >stats.json || fail "--pipeline cuda with the installed pipelines"

# Build the example plugin with find_package(passrun) only.
cmake -S "$src/examples/plugin" -B plugin-build -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build plugin-build >/dev/null
so=$work/plugin-build/largest-copies.so
[ -f "$so" ] || fail "the plugin was not built"

# Its golden tests, one CTest test per tests/*.pg, run by the installed
# passrun-lit with --plugin largest-copies.so.
ctest --test-dir plugin-build -N | grep -q "Total Tests: 3" ||
  { ctest --test-dir plugin-build -N; fail "passrun_add_golden_tests did not make 3 tests"; }
ctest --test-dir plugin-build --output-on-failure >ctest.txt 2>&1 ||
  { cat ctest.txt; fail "the plugin's golden tests"; }
grep -q "largest-copies/largest_copies .*Passed" ctest.txt || { cat ctest.txt; fail "test names"; }
grep -q "largest-copies/written_inputs .*Passed" ctest.txt ||
  { cat ctest.txt; fail "the host-writes client's golden test"; }
# The installed passrun-lit fails a broken expectation, at its line.
sed 's/^# DIAG all: N-LARGEST-COPY 3$/# DIAG all: N-LARGEST-COPY 4/' \
  "$src/examples/plugin/tests/largest_copies.pg" >broken.pg
if "$work/prefix/bin/passrun-lit" --plugin "$so" broken.pg 2>lit.txt; then
  fail "passrun-lit passed a broken expectation"
fi
grep -q "^broken.pg:8: error: DIAG all: 3 diagnostics \[N-LARGEST-COPY\], expected 4" lit.txt ||
  { cat lit.txt; fail "passrun-lit's message"; }

# Its effect: one note per copy, largest first, as many as top says.
"$passrun" --plugin "$so" --passes 'propagate-device,largest-copies{top=1}' "$prog" 2>err1.txt >/dev/null
[ "$(grep -c 'N-LARGEST-COPY' err1.txt)" = 1 ] || { cat err1.txt; fail "top=1 should give one note"; }
grep -q "note\[N-LARGEST-COPY\] pass 'largest-copies' method 'forward': #1: copy %" err1.txt ||
  { cat err1.txt; fail "the note's text"; }
"$passrun" --plugin "$so" --passes 'propagate-device,largest-copies{top=100}' "$prog" 2>err2.txt >stats2.json
copies=$("$passrun" --passes propagate-device "$prog" --stats=json |
  python3 -c 'import json,sys; m=json.load(sys.stdin)["methods"]["forward"]; print(m["h2d_copies"]+m["d2h_copies"])')
[ "$(grep -c 'N-LARGEST-COPY' err2.txt)" = "$copies" ] || { cat err2.txt; fail "one note per copy ($copies)"; }
# Without the plugin the pass is unknown.
if "$passrun" --passes 'propagate-device,largest-copies' "$prog" 2>err3.txt >/dev/null; then
  fail "largest-copies should be unknown without --plugin"
fi
grep -q "largest-copies" err3.txt || fail "the unknown-pass message names it"

# pkg-config works too.
PKG_CONFIG_PATH=$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig
export PKG_CONFIG_PATH
"$cc" -shared -fPIC $(pkg-config --cflags passrun) "$src/examples/plugin/largest_copies.c" \
  -o pc-largest-copies.so
"$passrun" --plugin "$work/pc-largest-copies.so" --passes 'propagate-device,largest-copies{top=1}' \
  "$prog" 2>err4.txt >/dev/null
grep -q "N-LARGEST-COPY" err4.txt || fail "the pkg-config build"

# The host-writes client builds from the installed headers alone, warning-free.
"$cc" -Wall -Wextra -Werror -shared -fPIC $(pkg-config --cflags passrun) \
  "$src/examples/plugin/written_inputs.c" -o written-inputs.so
"$work/prefix/bin/passrun-lit" --plugin "$work/written-inputs.so" \
  "$src/examples/plugin/tests/written_inputs.pg" >lit2.txt 2>&1 || { cat lit2.txt; fail "the host-writes client"; }

# The example's device type: npu-device.so and npu.yaml, built beside it.
[ -f "$work/plugin-build/npu-device.so" ] && [ -f "$work/plugin-build/npu.yaml" ] ||
  fail "the npu-device plugin and its pipeline were not built"
bash "$src/tests/plugins/check_npu.sh" "$passrun" "$work/plugin-build" "$src" ||
  fail "the npu device type through the installed passrun"
echo "install test: 1 passed, 0 failed"
