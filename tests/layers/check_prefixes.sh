#!/bin/sh
# check_prefixes.sh ROOT: the runtime's headers define their names with
# `prt_`/`PRT_`; every `pr_`/`PR_` name they mention must be one the core's
# headers (include/passrun/ but runtime.h) declare. Prints each stray name
# with where it appears and fails.
set -eu
root=${1:?usage: check_prefixes.sh ROOT}
rt_headers="$root/include/passrun/runtime.h $(ls "$root"/runtime/*.h)"
core_headers=$(ls "$root"/include/passrun/*.h | grep -v '/runtime\.h$')
names() { grep -ohE '\b(pr|PR)_[A-Za-z0-9_]+' "$@" | sort -u; }
core=$(names $core_headers)
stray=$(names $rt_headers | while IFS= read -r n; do
	printf '%s\n' "$core" | grep -qx "$n" || echo "$n"
done)
if [ -n "$stray" ]; then
	for n in $stray; do grep -nw "$n" $rt_headers | sed "s/\$/  ('$n' should carry prt_)/"; done >&2
	exit 1
fi
echo "check_prefixes: the runtime's headers define only prt_ names"
