#!/usr/bin/env bash
# The layering check (cmake/check_layering.cmake) passes on the tree and fails, naming the file
# and the rule, on copies of it with one forbidden include added.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check() { cmake -DROOT="$1" -DSTAMP="$work/stamp" -P "$root/cmake/check_layering.cmake" >"$work/out" 2>&1; }
check "$root" || { cat "$work/out"; echo "FAIL: the tree itself violates the layering"; exit 1; }
echo "ok   the tree passes"
fail=0
for case in "engine/x.h:server/lsp_server.h" "engine/x.h:protocol/json_rpc.h" "kb/x.h:engine/state/state_classifier.h" \
            "engine/task/x.h:engine/source/kernel_locator.h" \
            "engine/profile/x.h:engine/state/state_classifier.h" "engine/capture/x.h:engine/optimize/service.h" \
            "engine/evaluate/x.cpp:engine/optimize/optimize.h" "harness/x.h:engine/optimize/optimize.h" "support/x.h:kb/types.h"; do
  file=${case%%:*}
  inc=${case#*:}
  copy="$work/tree"
  rm -rf "$copy"
  mkdir -p "$copy"
  for d in support protocol kb engine server cli harness; do cp -r "$root/$d" "$copy/"; done
  mkdir -p "$copy/$(dirname "$file")"
  printf '#include "%s"\n' "$inc" >"$copy/$file"
  if check "$copy"; then
    echo "FAIL $file including $inc was accepted"
    fail=1
  elif grep -q "$file: #include \"$inc\"" "$work/out"; then
    echo "ok   $file including $inc is refused"
  else
    echo "FAIL $file including $inc: refused without naming it:"
    cat "$work/out"
    fail=1
  fi
done
exit $fail
