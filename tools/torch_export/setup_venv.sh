#!/bin/sh
# setup_venv.sh [--check]: the virtual environment with the exporter's
# pinned packages (requirements.txt next to this script), created or reused,
# outside the clone: $PASSRUN_TORCH_VENV, default ~/.cache/passrun/torch-venv.
# It is about 5.6 GB and CI clones afresh on every run, so it is kept between
# runs and reused while requirements.txt is unchanged: the venv holds the
# file's SHA-256 in .passrun-requirements.sha256.
#
#   - stamp matches: reused as is, nothing runs;
#   - no stamp or another one, but `pip freeze` shows every pin: adopted (the
#     stamp is written; a venv made by hand is not reinstalled);
#   - otherwise: removed and made again with `python3 -m venv` and
#     `pip install -r requirements.txt` (needs PyPI); --check says so and
#     exits 1 instead.
#
# Prints the venv's python on standard output (what CMake's
# PASSRUN_TORCH_PYTHON wants; CMake finds the default venv by itself);
# messages go to standard error. Exit status: 0 ready, 1 not ready (--check)
# or the installation failed, 2 a venv path that is inside the clone or is
# not a venv this script may remove.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REQ=$HERE/requirements.txt
VENV=${PASSRUN_TORCH_VENV:-${HOME:?}/.cache/passrun/torch-venv}
STAMP=$VENV/.passrun-requirements.sha256
CHECK=0
[ "${1:-}" = "--check" ] && CHECK=1

say() { echo "setup_venv.sh: $*" >&2; }

case "$VENV" in
/*) ;;
*) VENV=$(pwd)/$VENV; STAMP=$VENV/.passrun-requirements.sha256 ;;
esac
case "$VENV/" in
"$ROOT"/*) say "$VENV is inside the clone ($ROOT); choose a folder outside it (PASSRUN_TORCH_VENV)"; exit 2 ;;
esac

want=$(sha256sum "$REQ" | cut -d' ' -f1) || exit 1

# Every "name==version" line of requirements.txt is in `pip freeze` (a
# local version label such as +cu132 is the same release).
pins_installed() {
	frozen=$("$VENV/bin/python" -m pip freeze 2>/dev/null) || return 1
	for pin in $(grep -v '^[[:space:]]*#' "$REQ" | grep '=='); do
		name=${pin%%==*} version=${pin#*==}
		echo "$frozen" | grep -iqx -e "$name==$version" -e "$name==$version+[A-Za-z0-9.]*" || {
			say "$name is not $version in $VENV"; return 1; }
	done
}

ready() {
	say "using $VENV ($1)"
	echo "$VENV/bin/python"
	exit 0
}

if [ -x "$VENV/bin/python" ]; then
	[ "$(cat "$STAMP" 2>/dev/null)" = "$want" ] && ready "requirements.txt unchanged"
	if pins_installed; then
		echo "$want" >"$STAMP" || exit 1
		ready "adopted: every pin of requirements.txt is installed"
	fi
fi
if [ $CHECK = 1 ]; then
	say "$VENV needs to be (re)created from requirements.txt"
	exit 1
fi
if [ -e "$VENV" ]; then
	if [ ! -f "$VENV/pyvenv.cfg" ] && [ -n "$(ls -A "$VENV" 2>/dev/null)" ]; then
		say "$VENV exists and is not a virtual environment; not removing it"
		exit 2
	fi
	say "removing $VENV (its packages do not match requirements.txt)"
	rm -rf "$VENV" || exit 1
fi
say "creating $VENV (pip install -r requirements.txt: several GB)"
mkdir -p "$(dirname "$VENV")" &&
	python3 -m venv "$VENV" &&
	"$VENV/bin/python" -m pip install --quiet --upgrade pip &&
	"$VENV/bin/python" -m pip install --quiet -r "$REQ" || { say "installing into $VENV failed"; exit 1; }
echo "$want" >"$STAMP" || exit 1
ready "created"
