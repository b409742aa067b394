#!/usr/bin/env bash
# tests/gpu/run.sh: the checks that need a GPU (issue 6). Not run by CI.
#
#   1. configures and builds passrun with CUDA (build-gpu/, Release);
#   2. runs the runtime's unit tests there: on a GPU the CUDA kernels are
#      compared with the host kernels and the executor runs on cuda;
#   3. runs every example's "# Run:" commands (from its header) with
#      --run --check --stats=json, once with --device=cuda and once with
#      --device=sim, and prints a table: example, exit status on each device,
#      whether the outputs matched the reference, ms per call and bytes per
#      call on cuda. A command whose exit status differs between the devices,
#      or that crashes, is a failure;
#   4. runs every program exported from PyTorch (examples/torch/*) on cuda
#      and compares its outputs with eager PyTorch's (tests/torch/run_one.sh);
#   5. runs every model of the zoo (examples/models/zoo.py) through
#      tests/torch/zoo.py --device cuda: exported in both partition modes,
#      run with --pipeline cuda --device=cuda --verify-each --run --check,
#      compared with eager PyTorch. It needs the PyTorch venv
#      (tools/torch_export/setup_venv.sh; $PASSRUN_TORCH_PYTHON, else
#      $PASSRUN_TORCH_VENV/bin/python, default ~/.cache/passrun/torch-venv);
#      without it the run fails, saying so.
#
# cuDNN runs convolution when CMake finds it (PASSRUN_CUDNN_ROOT, the
# toolkit's folders); without it convolution on CUDA runs staged through the
# host kernel, which step 1 prints.
#
# Usage: tests/gpu/run.sh [BUILD_DIR]     (takes a few minutes; exit 0 = all good)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-gpu}
JOBS=$(nproc 2>/dev/null || echo 4)
fail=0

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "run.sh: no GPU here (nvidia-smi finds none); nothing to do" >&2
	exit 1
fi
nvidia-smi -L

echo "== build ($BUILD)"
if ! cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DPASSRUN_CUDA=ON >"$BUILD.configure.log" 2>&1; then
	cat "$BUILD.configure.log"; exit 1
fi
if ! grep -q "CUDA device enabled" "$BUILD.configure.log"; then
	echo "run.sh: CMake did not enable the CUDA device:" >&2
	grep -i cuda "$BUILD.configure.log" >&2
	exit 1
fi
if grep -q "cuDNN enabled" "$BUILD.configure.log"; then
	grep "cuDNN enabled" "$BUILD.configure.log" | sed 's/^-- //'
else
	echo "run.sh: note: no cuDNN found (set PASSRUN_CUDNN_ROOT): convolution on CUDA runs staged"
fi
if ! cmake --build "$BUILD" -j"$JOBS" >"$BUILD.build.log" 2>&1; then
	tail -40 "$BUILD.build.log"; exit 1
fi
PASSRUN=$BUILD/bin/passrun

echo "== unit tests (runtime)"
if ! ctest --test-dir "$BUILD" -R '^runtime_' --output-on-failure --timeout 120; then
	fail=1
fi
# A skipped CUDA test passes under ctest: make sure the CUDA kernels really
# were compared with the host kernels (every op: tests/runtime/
# test_device_kernels.c, issue 12's in test_cuda_nn_kernels.c, round's in
# test_cuda_round_kernels.c).
for t in test_device_kernels test_cuda_nn_kernels test_cuda_round_kernels; do
	if (cd "$ROOT" && "$BUILD/tests/runtime/$t" --jobs 1 --verbose 2>&1) | grep '^\[SKIP\] cuda::'; then
		echo "run.sh: the CUDA kernel tests of $t were skipped on a GPU machine" >&2
		fail=1
	fi
done

# The commands of an example: "# Run: passrun ..." and the continuation lines
# "#      passrun ..." right after it, one per line, with passrun's own output
# flags removed (the table wants the JSON alone).
example_commands() {
	awk '/^# Run:/ {on=1; sub(/^# Run:[ \t]*/, ""); print; next}
	     on && /^#[ \t]+passrun / {sub(/^#[ \t]+/, ""); print; next}
	     {on=0}' "$1" |
	sed -e 's/ --print-after-all//g' -e 's/ --print-after=[^ ]*//g' -e 's/ --print//g' \
	    -e 's/ --time-passes//g' -e 's/ --stats=json//g' -e 's/ -o [^ ]*//g' \
	    -e 's/ --dot [^ ]*//g' -e 's/ --device=[a-z]*//g'
}

# Fields of the "run" block of --stats=json on stdin: match ms h2d d2h load.
run_fields() {
	python3 -c '
import json, sys
try:
    r = json.load(sys.stdin).get("run") or {}
except Exception:
    r = {}
def f(k, fmt="{}"):
    v = r.get(k)
    return "-" if v is None else fmt.format(v)
print(f("match"), f("ms_per_call", "{:.3f}"), f("h2d_bytes_per_call"), f("d2h_bytes_per_call"), f("load_h2d_bytes"))
'
}

echo "== examples (--device=cuda vs --device=sim, both --check)"
printf '%-34s %-9s %4s %4s %-6s %9s %8s %8s %8s\n' example pipeline cuda sim match ms/call h2d/call d2h/call load
n=0
for ex in "$ROOT"/examples/*.pg; do
	name=$(basename "$ex" .pg)
	while IFS= read -r cmd; do
		[ -n "$cmd" ] || continue
		args=${cmd#passrun }
		case " $args " in *" --run"*) ;; *) args="--run $args" ;; esac
		pipeline=$(printf '%s\n' "$args" | sed -n 's/.*--pipeline \([^ ]*\).*/\1/p')
		# shellcheck disable=SC2086
		out_cuda=$(cd "$ROOT" && timeout 60 "$PASSRUN" $args --device=cuda --check --stats=json 2>"$BUILD.last.err")
		rc_cuda=$?
		# shellcheck disable=SC2086
		(cd "$ROOT" && timeout 60 "$PASSRUN" $args --device=sim --check --stats=json >/dev/null 2>&1)
		rc_sim=$?
		read -r match ms h2d d2h load <<<"$(printf '%s' "$out_cuda" | run_fields)"
		printf '%-34s %-9s %4s %4s %-6s %9s %8s %8s %8s\n' "$name" "${pipeline:--}" "$rc_cuda" "$rc_sim" \
			"$match" "$ms" "$h2d" "$d2h" "$load"
		n=$((n + 1))
		if [ "$rc_cuda" -ne "$rc_sim" ] || [ "$rc_cuda" -gt 5 ]; then
			echo "  FAIL: exit $rc_cuda on cuda, $rc_sim on sim: passrun $args" >&2
			sed 's/^/    /' "$BUILD.last.err" | tail -5 >&2
			fail=1
		fi
	done < <(example_commands "$ex")
done

# The programs exported from PyTorch, on cuda, against eager PyTorch's own
# outputs (the committed .npy files; issue 9).
echo "== examples/torch (--device=cuda against eager PyTorch)"
for dir in "$ROOT"/examples/torch/*/; do
	[ -e "$dir/model.pg" ] || continue
	if (cd "$ROOT" && timeout 120 sh "$ROOT/tests/torch/run_one.sh" "$PASSRUN" "$dir" cuda cuda \
		>"$BUILD.torch.log" 2>&1); then
		echo "$(basename "$dir"): matches eager PyTorch"
	else
		echo "  FAIL: $(basename "$dir") on cuda:" >&2
		tail -5 "$BUILD.torch.log" | sed 's/^/    /' >&2
		fail=1
	fi
	n=$((n + 1))
done
# The model zoo on cuda, against eager PyTorch (issue 12).
echo "== examples/models (the zoo, --device=cuda --check against eager PyTorch)"
PY=${PASSRUN_TORCH_PYTHON:-${PASSRUN_TORCH_VENV:-$HOME/.cache/passrun/torch-venv}/bin/python}
if ! "$PY" -c 'import torch, torchvision, transformers, numpy' >/dev/null 2>&1; then
	echo "  FAIL: no PyTorch at $PY (run tools/torch_export/setup_venv.sh or set PASSRUN_TORCH_PYTHON): the zoo did not run" >&2
	fail=1
else
	models=$(cd "$ROOT" && HF_HUB_OFFLINE=1 "$PY" -c 'import sys; sys.path.insert(0, "examples/models"); from zoo import ZOO; print(" ".join(ZOO))')
	for model in $models; do
		if (cd "$ROOT" && HF_HUB_OFFLINE=1 timeout 900 "$PY" tests/torch/zoo.py --passrun "$PASSRUN" \
			--device cuda "$model" >"$BUILD.zoo.log" 2>&1); then
			sed 's/^/  /' "$BUILD.zoo.log"
		else
			echo "  FAIL: $model on cuda:" >&2
			tail -12 "$BUILD.zoo.log" | sed 's/^/    /' >&2
			fail=1
		fi
		n=$((n + 2))
	done
fi
echo "== $n example commands; $([ $fail -eq 0 ] && echo all good || echo FAILURES above)"
exit $fail
