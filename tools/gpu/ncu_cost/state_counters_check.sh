#!/usr/bin/env bash
# On the GPU machine: does a profile of the state's counters alone (state_ncu_metrics() and
# default_ncu_metrics(), no section: what the loop asks for a step's best) give the state the
# editor's sections give, on live kernels, and what does each cost? Every kernel of the two
# recorded fixture sets (tests/fixtures/ncu-h100 and ncu-h100-rewrites, at their recorded sizes)
# is profiled both ways, timed, its replay passes read from the raw page, and classified by
# `kblaster profile --ncu-csv --ncu-raw`. Prints one row per kernel and a last line with the
# count that agree.
#   tools/gpu/ncu_cost/state_counters_check.sh KBLASTER OUT_DIR
set -uo pipefail
kb=${1:?usage: state_counters_check.sh KBLASTER OUT_DIR}
out=${2:?usage: state_counters_check.sh KBLASTER OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -arch=sm_90 -lineinfo -o "$out/k1" "$root/tests/fixtures/ncu-h100/kernels.cu" &
"$nvcc" -arch=sm_90 -lineinfo -o "$out/k2" "$root/tests/fixtures/ncu-h100-rewrites/kernels.cu" &
wait
list() {  # the quoted strings of a function's initializer in ncu_runner.cpp
  sed -n "/& $1() {/,/^}/p" "$root/engine/profile/ncu_runner.cpp" | grep -o '"[a-z0-9_]*__*[a-z0-9_.]*"' | tr -d '"' | paste -sd,
}
counters="$(list state_ncu_metrics),$(list default_ncu_metrics)"
sections=()
for s in $(sed -n '/requested_ncu_sections() {/,/^}/p' "$root/engine/profile/ncu_runner.cpp" | grep -o '^      {"[A-Za-z_]*"' | tr -d ' {"'); do
  sections+=(--section "$s")
done
state() {  # DETAILS RAW: primary and secondaries as kblaster reads them
  "$kb" profile --ncu-csv "$1" --ncu-raw "$2" --json 2>/dev/null |
    python3 -c "import json,sys; k=max(json.load(sys.stdin)['kernels'], key=lambda k: (k.get('sol') or {}).get('duration_us') or 0); print(k['primary'] + ' [' + ' '.join(k['secondary']) + ']')" 2>/dev/null || echo "(no state)"
}
passes() { python3 -c "
import csv,sys
rows=[r for r in csv.reader(open(sys.argv[1])) if len(r)>5]
d=dict(zip(rows[0],rows[-1])); print(d.get('profiler__replayer_passes','?'))" "$1" 2>/dev/null || echo "?"; }
agree=0; total=0
printf '%-24s %-7s %-7s %-6s %-6s %s\n' kernel s_secs c_secs s_pass c_pass "state (sections) | state (counters)"
run() {  # NAME PROGRAM KERNEL ARGS...
  local name=$1 prog=$2 kernel=$3; shift 3
  local t0 t1 t2
  t0=$(date +%s%N)
  "$ncu" "${sections[@]}" --metrics "$(list default_ncu_metrics)" -k "regex:^$kernel" -c 1 --clock-control base -f -o "$out/$name.s" "$prog" "$kernel" "$@" > "$out/$name.s.log" 2>&1
  t1=$(date +%s%N)
  "$ncu" --metrics "$counters" -k "regex:^$kernel" -c 1 --clock-control base -f -o "$out/$name.c" "$prog" "$kernel" "$@" > "$out/$name.c.log" 2>&1
  t2=$(date +%s%N)
  for w in s c; do
    "$ncu" -i "$out/$name.$w.ncu-rep" --csv --page details --print-details all > "$out/$name.$w.details.csv" 2>/dev/null
    "$ncu" -i "$out/$name.$w.ncu-rep" --csv --page raw --print-units base > "$out/$name.$w.raw.csv" 2>/dev/null
  done
  local ss cs
  ss=$(state "$out/$name.s.details.csv" "$out/$name.s.raw.csv")
  cs=$(state "$out/$name.c.details.csv" "$out/$name.c.raw.csv")
  total=$((total + 1))
  [[ "$ss" == "$cs" ]] && agree=$((agree + 1))
  printf '%-24s %-7.2f %-7.2f %-6s %-6s %s | %s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print (b-a)/1e9}')" \
    "$(awk -v a="$t1" -v b="$t2" 'BEGIN{print (b-a)/1e9}')" "$(passes "$out/$name.s.raw.csv")" "$(passes "$out/$name.c.raw.csv")" "$ss" "$cs"
}
for k in vadd matmul_naive matmul_tiled fma_heavy tiny transpose_conflicts divergent spills atomic_sum; do run "$k" "$out/k1" "$k"; done
run transpose_tiled "$out/k2" transpose_tiled 8192 8192
run transpose_tiled_small "$out/k2" transpose_tiled 1000 700
run spmv_thread_row "$out/k2" spmv_thread_row 100000
run spmv_warp_row "$out/k2" spmv_warp_row 100000
run spmv_thread_row_small "$out/k2" spmv_thread_row 12288
run spmv_warp_row_small "$out/k2" spmv_warp_row 12288
run sgemm_regblock "$out/k2" sgemm_regblock 4096 4096 4096
run tile_product "$out/k2" tile_product 4096 4096 4096
run reduce_interleaved "$out/k2" reduce_interleaved 16777216
echo "the same state from the counters alone: $agree of $total"
