#!/bin/sh
# check_layers.sh ROOT: the core's layers include only what lies below them.
#
#   ir       data.h device.h diag.h error.h plan.h program.h radix_sort.h strbuf.h
#   format   ir + fileio.h format.h
#   check    ir + verify.h
#   passmgr  everything in include/passrun but runtime.h
#   plugins  the IR and the pass API only (passrun.h, pass.h and the ir
#            headers), plugins/common's plugin_common.h and the installed
#            analyses' headers (host_writes.h), reached through include
#            folders: never a `..` path or another plugin's folder
# A quoted include without a folder ("locate.h") must be a private header of
# the including file's own folder. Prints every offending line and fails.
set -eu
root=${1:?usage: check_layers.sh ROOT}
ir="data device diag error plan program radix_sort strbuf"
allowed_for() {
	case $1 in
	core/ir | include/ir) echo "$ir" ;;
	core/format | include/format) echo "$ir fileio format" ;;
	core/check | include/check) echo "$ir verify" ;;
	core/passmgr | include/passmgr) echo "$ir fileio format verify pass manager passrun" ;;
	plugins) echo "$ir pass passrun" ;;
	esac
}
# The layer of a public header, by name.
header_layer() {
	case " $ir " in *" $1 "*) echo ir; return ;; esac
	case $1 in
	fileio | format) echo format ;;
	verify) echo check ;;
	pass | manager | passrun) echo passmgr ;;
	runtime) echo runtime ;;
	*) echo unknown ;;
	esac
}

bad=0
check_file() { # FILE LAYER [SHARED-HEADERS]
	allowed=$(allowed_for "$2")
	dir=$(dirname "$1")
	grep -n '^#include ["<]passrun/\|^#include "' "$1" | while IFS= read -r line; do
		inc=$(echo "$line" | sed 's/.*#include ["<]\([^">]*\)[">].*/\1/')
		case $inc in
		passrun/*.h)
			name=$(basename "$inc" .h)
			case " $allowed " in *" $name "*) ;; *)
				echo "$1:${line%%:*}: layer '$2' may not include $inc"; echo x ;;
			esac ;;
		*/*) echo "$1:${line%%:*}: includes $inc, a header of another folder"; echo x ;;
		*) [ -f "$dir/$inc" ] || case " $3 " in *" $inc "*) ;; *)
			echo "$1:${line%%:*}: $inc is not a private header of $dir"; echo x ;;
			esac ;;
		esac
	done
}

# The headers every plugin may include without a folder: the common
# library's and the installed analyses'.
plugin_shared="plugin_common.h host_writes.h"

out=$(
	for layer in ir format check passmgr; do
		for f in "$root/core/$layer"/*.[ch]; do check_file "$f" "core/$layer"; done
	done
	for f in "$root"/include/passrun/*.h; do
		l=$(header_layer "$(basename "$f" .h)")
		[ "$l" = runtime ] || check_file "$f" "include/$l"
	done
	for f in "$root"/plugins/*/*.[ch]; do check_file "$f" plugins "$plugin_shared"; done
)
if printf '%s\n' "$out" | grep -q '^x$'; then
	printf '%s\n' "$out" | grep -v '^x$' >&2
	exit 1
fi
[ -n "$(ls "$root"/core/*.c 2>/dev/null)" ] && { echo "core/ holds sources outside a layer" >&2; exit 1; }
echo "check_layers: every include is allowed"
