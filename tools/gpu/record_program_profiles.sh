#!/usr/bin/env bash
# Records the program's profile of the example programs (tests/fixtures/programs/) on a GPU
# machine, for the replay tests: for each program, the timeline collector's JSON lines from one
# plain run, and what `kblaster profile` itself makes of it (its table, the ncu pages of the one
# launch per kernel it profiled, and its wall time beside `--no-timeline`'s, every launch).
#
#   KBLASTER=/path/to/kblaster tools/gpu/record_program_profiles.sh [OUT]
#
# OUT defaults to tests/fixtures/programs (the files land beside each program). Needs nvcc, ncu
# and CUPTI (the toolkit's libcupti.so). The collector is the one beside $KBLASTER when it was
# built with CUPTI, else it is built here from capture/timeline/timeline_collector.cpp with g++.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/tests/fixtures/programs}
kblaster=${KBLASTER:?set KBLASTER to the kblaster binary}
cuda=${CUDA_HOME:-/usr/local/cuda}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

collector=$(dirname "$kblaster")/libkblaster_timeline.so
if [[ ! -f $collector ]]; then
  collector=$work/libkblaster_timeline.so
  g++ -std=c++20 -O2 -Wall -Wextra -fPIC -shared -fvisibility=hidden -I"$cuda/include" \
      "$root/capture/timeline/timeline_collector.cpp" -L"$cuda/lib64" -lcupti -Wl,-rpath,"$cuda/lib64" -o "$collector"
fi
export KBLASTER_TIMELINE_COLLECTOR=$collector
echo "collector: $collector"

# record NAME FOLDER ARGS -- PROFILE_ARGS...: the timeline of one run of $work/NAME, then kblaster's profile.
record() {
  local name=$1 dir=$2 args=$3
  shift 3
  local dest=$out/$dir
  mkdir -p "$dest"
  # The collector alone, as a user's run would load it (the replay tests read this file).
  (cd "$work" && CUDA_INJECTION64_PATH=$collector KBLASTER_TIMELINE_OUT=$dest/$name.timeline.jsonl "$work/$name" $args)
  # kblaster's own profile: its table and sections, its ncu pages, its wall time.
  local started=$SECONDS
  (cd "$work" && "$kblaster" profile "$@" --report "$work/$name" -- $args) > "$dest/$name.profile.txt" 2> "$dest/$name.profile.log"
  local with_timeline=$((SECONDS - started))
  started=$SECONDS
  (cd "$work" && "$kblaster" profile "$@" --no-timeline --report "$work/$name.every" -- $args) > /dev/null 2>&1 || true
  local every_launch=$((SECONDS - started))
  for page in "$work/$name"*.details.csv "$work/$name"*.raw.csv "$work/$name"*.source.csv; do
    [[ -f $page && $page != *".every."* ]] && cp "$page" "$dest/"
  done
  printf '%s %s: kblaster profile %s s (timeline + one launch per kernel), --no-timeline %s s (every launch); %s, %s, %s\n' \
    "$name" "$args" "$with_timeline" "$every_launch" "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
    "$("$cuda/bin/nvcc" --version | tail -1)" "$(ncu --version | tail -1)" >> "$dest/RECORDED.txt"
  echo "recorded $dest: $(ls "$dest" | tr '\n' ' ')"
}

# One file, built by kblaster (and here, for the plain run).
"$cuda/bin/nvcc" -O3 -arch=native -lineinfo -o "$work/relu_rowsum" "$root/tests/fixtures/programs/relu_rowsum/relu_rowsum.cu"
record relu_rowsum relu_rowsum "4096 2048 8" "$root/tests/fixtures/programs/relu_rowsum/relu_rowsum.cu"

# Two files and two streams, built by the user's own command (--run, --build).
build="$cuda/bin/nvcc -O3 -arch=native -lineinfo -o $work/two_streams $root/tests/fixtures/programs/two_streams/main.cu $root/tests/fixtures/programs/two_streams/kernels.cu"
$build
record two_streams two_streams "1030 770 40" "$root/tests/fixtures/programs/two_streams/kernels.cu" --run "$work/two_streams" --build "$build"
