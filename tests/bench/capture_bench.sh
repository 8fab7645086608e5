#!/bin/bash
# Benchmark (prints figures; asserts nothing): what capturing costs against the program's own
# run, and what replaying and verifying a candidate costs, for captures of 1 MiB, 100 MiB and
# 1 GiB (scale_add: two float arrays of n elements). On the GPU machine:
#   KBLASTER_HARNESS=… tests/bench/capture_bench.sh BUILD/cli/kblaster [WORK_DIR]
set -eu
kblaster=$(realpath "$1"); work=${2:-/tmp/kblaster-capture-bench}
program=$(cd "$(dirname "$0")/../capture/programs" && pwd)/scale_add.cu
rm -rf "$work"; mkdir -p "$work"
export XDG_CACHE_HOME=$work/cache
echo "| capture | program alone s | with the agent s | overhead s | capture written | replay+verify s | timing s | eval total s |"
echo "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
for mib in 1 100 1024; do
  n=$((mib * 1024 * 1024 / 8))
  "$kblaster" capture "$program" --kernel scale_add --json -- $n 10 > "$work/$mib.json" 2> "$work/$mib.err"
  read -r capdir task run_s < <(python3 -c "import json; j=json.load(open('$work/$mib.json')); print(j['capture'], j['task'], j['run_seconds'])")
  bin=$(dirname "$capdir")/program
  t0=$(date +%s.%N); "$bin" $n 10 > /dev/null; t1=$(date +%s.%N)
  size=$(du -sh "$capdir" | cut -f1)
  e0=$(date +%s.%N)
  "$kblaster" eval "$task" --json > "$work/$mib-eval.json" 2> "$work/$mib-eval.err"
  e1=$(date +%s.%N)
  python3 - "$work/$mib-eval.json" "$mib" "$t0" "$t1" "$run_s" "$size" "$e0" "$e1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); r = j.get("result", {})
mib, t0, t1, run_s, size, e0, e1 = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6], float(sys.argv[7]), float(sys.argv[8])
s = r.get("seconds", {})
alone = t1 - t0
print(f"| {mib} MiB | {alone:.2f} | {run_s:.2f} | {run_s - alone:.2f} | {size} | {s.get('verify', 0) + s.get('reference', 0) + s.get('runner', 0):.2f} | {s.get('time', 0):.2f} | {e1 - e0:.2f} ({r.get('verdict')}) |")
PY
done
