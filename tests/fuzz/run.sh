#!/bin/sh
# run.sh: build the libFuzzer targets with clang and run each for a bounded time.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET [WORK_DIR]]     (default 20 s, a temp dir)
#   FUZZ_TARGETS="text binary pipeline runtime" FUZZ_JOBS=1 FUZZ_SEED=1 ... narrow or widen a run
#
# FUZZ_RUNS=N stops each target after N inputs (or SECONDS, whichever comes
# first), so a run does the same amount of work on a fast and a slow machine;
# ctest's fuzz_run uses it. FUZZ_SEED (default 1) fixes libFuzzer's seed, but
# runs are still not repeatable input for input (coverage depends on the
# addresses the allocator hands out), so a short run can find a bug that the
# one before it missed: that is a real bug, to be kept and fixed as below.
# Long runs should pass FUZZ_SEED=0 (a random seed) and no FUZZ_RUNS.
#
# Compiles core/*/*.c with -fsanitize=fuzzer-no-link,address,undefined into
# objects, links each tests/fuzz/fuzz_*.c against them with -fsanitize=fuzzer
# (the runtime target also against runtime/*.c, with the plugins built the
# same way as .so files in WORK_DIR/plugins, which it loads: FUZZ_PLUGIN_DIR),
# replays tests/fuzz/crashes/<target>/* (inputs that once crashed: every one
# is a regression test), then fuzzes from the seed corpus: examples and test
# programs (text), tests/malformed/bin and tests/fuzz/corpus/binary (binary),
# pipelines/ and tests/pipelines (pipeline), every example, placement, memory
# and difftest regression program and tests/runtime/refused (runtime; with
# FUZZ_STRICT=1 it also judges what a pass leaves, see fuzz_runtime.c). Fails
# on any crash, leak,
# sanitizer report or timeout; the input is left in WORK_DIR (printed).
# Exit 77 (ctest: skipped) when clang or its fuzzer runtime is missing.
set -eu
secs=${1:-20}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${2:-$(mktemp -d /tmp/passrun-fuzz.XXXXXX)}
mkdir -p "$work"
CLANG=${CLANG:-$(command -v clang || true)}
if [ -z "$CLANG" ]; then
	echo "run.sh: clang not found: fuzzing skipped"
	exit 77
fi
if ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n){(void)d;(void)n;return 0;}\n' \
	> "$work/probe.c" || ! "$CLANG" -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" 2>/dev/null; then
	echo "run.sh: $CLANG has no libFuzzer runtime: fuzzing skipped"
	exit 77
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cflags="-g -O1 -std=gnu11 -I$root/include -DPASSRUN_PIPELINE_DIR_FROM_LIBDIR=\"../share\" \
 -DPASSRUN_BUILD_PLUGIN_DIR=\"$work/noplugins\" -DPASSRUN_INSTALL_PLUGIN_DIR=\"$work/noplugins\" \
 -DPASSRUN_BUILD_PIPELINE_DIR=\"$root/pipelines\" -DPASSRUN_INSTALL_PIPELINE_DIR=\"$root/pipelines\""
yaml=$(pkg-config --cflags --libs yaml-0.1 2>/dev/null || echo -lyaml)

echo "run.sh: building in $work"
mkdir -p "$work/obj"
for src in "$root"/core/*/*.c; do
	obj="$work/obj/$(basename "$src" .c).o"
	# shellcheck disable=SC2086
	"$CLANG" $cflags $san -fsanitize=fuzzer-no-link -c "$src" -o "$obj"
done

# The runtime target's own objects and the plugins it loads (each plugin folder
# one .so, as plugins/CMakeLists.txt builds them); built only when asked for.
build_runtime() {
	mkdir -p "$work/obj_runtime" "$work/plugins"
	for src in "$root"/runtime/*.c; do
		case $(basename "$src") in device_cuda.c) continue ;; esac   # CUDA: not here
		# shellcheck disable=SC2086
		"$CLANG" $cflags -I"$root/runtime" $san -fsanitize=fuzzer-no-link -c "$src" \
			-o "$work/obj_runtime/$(basename "$src" .c).o"
	done
	# plugins/common is the static library every plugin links; host-writes'
	# header is the installed analysis API (plugins/CMakeLists.txt).
	for dir in "$root"/plugins/*/; do
		name=$(basename "$dir")
		[ "$name" = common ] && continue
		# shellcheck disable=SC2086
		"$CLANG" $cflags -I"$root/plugins/common" -I"$root/plugins/host-writes" $san \
			-fsanitize=fuzzer-no-link -fPIC -shared \
			"$dir"*.c "$root"/plugins/common/*.c -o "$work/plugins/$name.so"
	done
}

# seed_files DIR FILE...: copies, named by their path (names repeat across folders).
seed_files() {
	dir=$1
	shift
	for f in "$@"; do
		[ -f "$f" ] && cp "$f" "$dir/$(echo "${f#"$root"/}" | tr / _)"
	done
	return 0
}

status=0
for t in ${FUZZ_TARGETS:-text binary pipeline runtime}; do
	extra=""
	if [ "$t" = runtime ]; then
		build_runtime
		# the plugins resolve the core's symbols in the fuzzer itself
		extra="-I$root/runtime $work/obj_runtime/*.o -Wl,--export-dynamic -lpthread"
	fi
	# shellcheck disable=SC2086
	"$CLANG" $cflags $san -fsanitize=fuzzer "$root/tests/fuzz/fuzz_$t.c" "$work"/obj/*.o \
		$extra $yaml -ldl -lm -o "$work/fuzz_$t"
	seeds="$work/seeds_$t"
	corpus="$work/corpus_$t"
	mkdir -p "$seeds" "$corpus"
	case $t in
	text) seed_files "$seeds" "$root"/examples/*.pg "$root"/tests/malformed/text/* \
		"$root"/tests/text/*.pg "$root"/tests/placement/*.pg "$root"/tests/memory/*.pg ;;
	binary) seed_files "$seeds" "$root"/tests/malformed/bin/*.bin "$root"/tests/fuzz/corpus/binary/* ;;
	pipeline) seed_files "$seeds" "$root"/pipelines/*.yaml "$root"/pipelines/*/*.yaml \
		"$root"/tests/pipelines/*.yaml "$root"/tests/pipelines/*/*.yaml ;;
	runtime) seed_files "$seeds" "$root"/examples/*.pg "$root"/tests/placement/*.pg \
		"$root"/tests/memory/*.pg "$root"/tests/difftest/regressions/*.pg \
		"$root"/tests/difftest/regressions/baseline/*.pg "$root"/tests/runtime/refused/* ;;
	esac
	export FUZZ_PLUGIN_DIR="$work/plugins"
	crashes="$root/tests/fuzz/crashes/$t"
	if [ -d "$crashes" ] && [ -n "$(ls -A "$crashes")" ]; then
		echo "run.sh: $t: replaying $(ls "$crashes" | wc -l) past crash inputs"
		"$work/fuzz_$t" "$crashes"/* > "$work/replay_$t.log" 2>&1 || {
			tail -40 "$work/replay_$t.log"; status=1; }
	fi
	echo "run.sh: fuzzing $t for ${secs}s${FUZZ_RUNS:+ or $FUZZ_RUNS inputs}"
	par=""
	if [ -n "${FUZZ_RUNS:-}" ]; then
		par="-runs=$FUZZ_RUNS"
	fi
	if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
		par="$par -jobs=$FUZZ_JOBS -workers=$FUZZ_JOBS"   # each job logs to WORK_DIR/fuzz-N.log
	fi
	# shellcheck disable=SC2086
	if (cd "$work" && "$work/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-seed="${FUZZ_SEED:-1}" $par -print_final_stats=1 -artifact_prefix="$work/crash_$t-" "$corpus" "$seeds" \
		> "$work/fuzz_$t.log" 2>&1); then
		grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|cov:" "$work/fuzz_$t.log" | tail -2
	else
		tail -60 "$work/fuzz_$t.log"
		echo "run.sh: $t FAILED; inputs: $(ls "$work"/crash_"$t"-* 2>/dev/null)"
		status=1
	fi
done
exit $status
