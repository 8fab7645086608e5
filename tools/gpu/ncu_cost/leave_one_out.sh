#!/usr/bin/env bash
# What each section costs on top of the others, and which raw-page metrics leave with it: run on
# the GPU machine, it profiles one kernel of tests/fixtures/ncu-h100/kernels.cu (default: spills)
# with kblaster's sections and metrics (read from engine/profile/ncu_runner.cpp), then with each
# section left out in turn, and prints ncu's replay passes and whether the raw-page metrics the
# classifier reads by name are still there. The numbers in loop_ncu_sections()'s comment.
#   tools/gpu/ncu_cost/leave_one_out.sh [OUT_DIR] [KERNEL]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-/tmp/ncu_leave_one_out}
kernel=${2:-spills}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -arch=sm_90 -lineinfo -o "$out/kernels" "$root/tests/fixtures/ncu-h100/kernels.cu" || exit 1
"$ncu" --version | tail -1
sections=($(grep -o '^      {"[A-Za-z_]*"' "$root/engine/profile/ncu_runner.cpp" | tr -d ' {"'))
metrics=$(sed -n '/default_ncu_metrics()/,/};/p' "$root/engine/profile/ncu_runner.cpp" | grep -o '"[a-z_]*__[a-z_.]*"' | tr -d '"' | paste -sd,)
read_by_name=(derived__local_spilling_requests dram__sectors_read.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
              lts__t_requests_srcunit_tex_op_red.sum)
for drop in none "${sections[@]}"; do
  args=()
  for s in "${sections[@]}"; do [ "$s" = "$drop" ] || args+=(--section "$s"); done
  "$ncu" "${args[@]}" --metrics "$metrics" -k "regex:^$kernel" --clock-control base --import-source yes -f \
    -o "$out/r" "$out/kernels" "$kernel" > "$out/log" 2>&1
  "$ncu" -i "$out/r.ncu-rep" --csv --page raw --print-units base > "$out/raw-without-$drop.csv" 2>/dev/null
  missing=""
  for m in "${read_by_name[@]}"; do grep -q "\"$m\"" "$out/raw-without-$drop.csv" || missing+=" $m"; done
  echo "without $drop: $(grep -o '[0-9]* passes' "$out/log" | head -1); raw page lacks:${missing:- nothing read by name}"
done
