#!/usr/bin/env bash
# What one Nsight Compute profile costs, and where: run on the GPU machine, it prints a table of
# seconds (and ncu's replay passes) for one ReLU kernel at a small size and at KernelBench's size,
#   - the program alone, without ncu;
#   - ncu with SpeedOfLight only, with kblaster's own sections (`kblaster profile`, which also builds
#     the program and reads the report's three pages back), and with --set full;
#   - reading one page back from a report (`ncu -i`), as kblaster does three times at once.
# The difference between rows says what ncu's start, its passes and the export each cost, to set
# against the ~10 s a profiled candidate took on the H100 (tests/optimize/gpu_cost_results.md).
#   tools/gpu/ncu_cost/ncu_cost.sh KBLASTER [OUT_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kblaster=${1:?usage: ncu_cost.sh KBLASTER [OUT_DIR]}
out=${2:-/tmp/ncu_cost}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -O2 -lineinfo -arch=native -o "$out/relu" "$here/relu.cu" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$ncu" --version | tail -1
# The table kblaster reads to leave out sections an older ncu lacks (sections_known_to).
"$ncu" --list-sections >"$out/list-sections.txt" 2>&1 && head -4 "$out/list-sections.txt"

row() {  # row NAME COMMAND...: seconds, exit status and passes of one command, its output in OUT/NAME.log
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  printf '%-34s %7.2f s  rc=%-3d %s\n' "$name" "$(echo "$t1 - $t0" | bc)" "$rc" "$(grep -o '[0-9]* passes' "$out/$name.log" | head -1)"
}

for n in 16777216 1610612736; do
  echo "--- $n floats ($((n * 4 / 1000000)) MB per tensor)"
  row "alone.$n" "$out/relu" "$n"
  row "ncu_speedoflight.$n" "$ncu" --section SpeedOfLight --clock-control base -f -o "$out/sol.$n" "$out/relu" "$n"
  row "kblaster_profile.$n" "$kblaster" profile "$here/relu.cu" --report "$out/kb.$n" --json -- "$n"
  row "ncu_set_full.$n" "$ncu" --set full --import-source yes --clock-control base -f -o "$out/full.$n" "$out/relu" "$n"
  row "export_details.$n" "$ncu" -i "$out/full.$n.ncu-rep" --csv --page details --print-details all
done
