#!/bin/sh
# refuses.sh ROOT: check_layers.sh fails, naming the line, on each include a
# plugin may not have: a `..` path, another plugin's folder, a core header
# beyond the IR and the pass API, a quoted header its folder does not hold.
set -eu
root=${1:?usage: refuses.sh ROOT}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$root/core" "$root/include" "$root/plugins" "$tmp/"
sh "$here/check_layers.sh" "$tmp" >/dev/null   # the copy passes as it is

refused() { # INCLUDE-LINE EXPECTED-MESSAGE
	f=$tmp/plugins/dce/dce.c
	cp "$f" "$f.orig"
	printf '%s\n' "$1" >>"$f"
	if out=$(sh "$here/check_layers.sh" "$tmp" 2>&1); then
		echo "refuses: '$1' was allowed" >&2; exit 1
	fi
	case $out in *"$2"*) ;; *) echo "refuses: '$1' gave: $out" >&2; exit 1 ;; esac
	mv "$f.orig" "$f"
}
refused '#include "../common/plugin_common.h"' "includes ../common/plugin_common.h, a header of another folder"
refused '#include "memory-plan/planner.h"' "includes memory-plan/planner.h, a header of another folder"
refused '#include "planner.h"' "planner.h is not a private header of"
refused '#include "passrun/manager.h"' "layer 'plugins' may not include passrun/manager.h"
refused '#include <passrun/runtime.h>' "layer 'plugins' may not include passrun/runtime.h"
echo "refuses: every bad include was refused"
