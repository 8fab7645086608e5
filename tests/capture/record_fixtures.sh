#!/bin/bash
# Records the small captures that CI's tests read (tests/fixtures/captures/), on a GPU machine:
#   tests/capture/record_fixtures.sh KBLASTER OUT_DIR
# Each fixture is the agent's folder as written (capture.json and the .bin files), without the
# built program or the generated task, which the tests make themselves.
set -eu
kblaster=$(realpath "$1"); out=$2
here=$(cd "$(dirname "$0")" && pwd)
export XDG_CACHE_HOME=$(mktemp -d)
mkdir -p "$out"
for spec in "stencil2d stencil2d 1 64 48 3" "histogram histogram 0 20000" "row_reduce row_sum 0 64 300" "transpose transpose 0 100 70" "bin_sum bin_sum 0 16384 32"; do
  set -- $spec
  name=$1 kernel=$2 launch=$3; shift 3
  "$kblaster" capture "$here/programs/$name.cu" --kernel "$kernel" --launch "$launch" --json -- "$@" > "$out/$name.json"
  src=$(python3 -c "import json; print(json.load(open('$out/$name.json'))['capture'])")
  rm -rf "$out/$name"; mkdir -p "$out/$name"
  cp "$src"/capture.json "$src"/*.bin "$out/$name/"
  rm "$out/$name.json"
  echo "recorded $name: $(du -sh "$out/$name" | cut -f1)"
done
