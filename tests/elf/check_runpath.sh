#!/usr/bin/env bash
# Every ELF file under DIR (a build tree or an install prefix) is checked for
# the folders its RUNPATH and RPATH name: an empty entry (a leading, trailing
# or doubled ':') means the current folder, and a relative one a folder
# relative to wherever passrun happens to be started, so either lets a file in
# the user's current folder (a ./libm.so.6) be loaded into passrun. Allowed:
# absolute folders, and ones anchored at the binary itself ($ORIGIN).
#
#   tests/elf/check_runpath.sh DIR
set -euo pipefail
dir=${1:?usage: check_runpath.sh DIR}
bad=0 checked=0

# The RUNPATH and RPATH strings of one file, one per line.
paths_of() {
	readelf -d "$1" 2>/dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p'
}

# Prints the offending entries of one path string, "(empty)" for an empty one.
bad_entries() {
	local entry
	local IFS=:
	# A trailing ':' leaves no field for read -a: add one sentinel ':' so
	# that every field, the last empty one included, is seen.
	read -r -a entries <<<"$1:"
	for entry in "${entries[@]}"; do
		case $entry in
		'') echo "(empty)" ;;
		/* | '$ORIGIN' | '$ORIGIN/'* | '${ORIGIN}' | '${ORIGIN}/'*) ;;
		*) echo "$entry" ;;
		esac
	done
}

# Only executables and shared objects have a RUNPATH (objects and archives,
# the bulk of a build tree, need not be read).
while IFS= read -r -d '' f; do
	[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	checked=$((checked + 1))
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		entries=$(bad_entries "$p")
		if [ -n "$entries" ]; then
			echo "FAIL: $f: RUNPATH/RPATH [$p] has an empty or relative entry:" $entries >&2
			bad=$((bad + 1))
		fi
	done < <(paths_of "$f")
done < <(find "$dir" -type f \( -perm -u=x -o -name '*.so' -o -name '*.so.*' \) -print0)

[ "$checked" -gt 0 ] || { echo "FAIL: no ELF file under $dir" >&2; exit 1; }
echo "runpath: $checked ELF files checked, $bad with an empty or relative entry"
[ "$bad" -eq 0 ]
