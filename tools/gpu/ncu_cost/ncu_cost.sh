#!/usr/bin/env bash
# What one Nsight Compute profile costs, and where: run on the GPU machine, it prints a table of
# seconds and ncu's replay passes for one ReLU kernel at a small size and at KernelBench's size:
#   - the program alone, without ncu;
#   - ncu collecting one metric (ncu's start, its injection and one pass: the fixed cost);
#   - each section kblaster asks for, alone (read from engine/profile/ncu_runner.cpp, so that the
#     list is the one the daemon sends), which says where the passes come from;
#   - kblaster's whole list with its metrics (as run_ncu asks), with and without --cache-control
#     all and --clock-control base, and --set full;
#   - reading one page back from a report (`ncu -i`), as kblaster does three times at once.
# The difference between rows says what ncu's start, its passes and the export each cost.
#   tools/gpu/ncu_cost/ncu_cost.sh [OUT_DIR] [SIZES...]   (default sizes: 16777216 1610612736 floats)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${1:-/tmp/ncu_cost}
shift $(($# > 0 ? 1 : 0))
sizes=("${@:-16777216 1610612736}")
sizes=(${sizes[*]})
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -O2 -lineinfo -arch=native -o "$out/relu" "$here/relu.cu" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$ncu" --version | tail -1
# The sections the daemon asks for, as written in requested_ncu_sections().
sections=($(grep -o '^      {"[A-Za-z_]*"' "$root/engine/profile/ncu_runner.cpp" | tr -d ' {"'))
metrics=$(sed -n '/default_ncu_metrics()/,/};/p' "$root/engine/profile/ncu_runner.cpp" | grep -o '"[a-z_]*__[a-z_.]*"' | tr -d '"' | paste -sd,)
echo "kblaster's sections: ${sections[*]}"
section_args=()
for s in "${sections[@]}"; do section_args+=(--section "$s"); done

row() {  # row NAME COMMAND...: seconds, exit status and passes of one command, its output in OUT/NAME.log
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  t1=$(date +%s%N)
  printf '%-44s %8.2f s  rc=%-3d %s\n' "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')" "$rc" \
    "$(grep -o '[0-9]* passes' "$out/$name.log" | head -1)"
}

for n in "${sizes[@]}"; do
  echo "--- $n floats ($((n * 4 / 1000000)) MB per tensor)"
  prog=("$out/relu" "$n")
  row "alone.$n" "${prog[@]}"
  row "one_metric.$n" "$ncu" --metrics gpu__time_duration.sum -f -o "$out/one.$n" "${prog[@]}"
  for s in "${sections[@]}"; do
    row "section.$s.$n" "$ncu" --section "$s" --clock-control base -f -o "$out/s.$n" "${prog[@]}"
  done
  row "kblaster_list.$n" "$ncu" "${section_args[@]}" --metrics "$metrics" --clock-control base --import-source yes \
    -f -o "$out/kb.$n" "${prog[@]}"
  row "kblaster_list.no_cache_control.$n" "$ncu" "${section_args[@]}" --metrics "$metrics" --clock-control base \
    --cache-control none --import-source yes -f -o "$out/kbnc.$n" "${prog[@]}"
  row "kblaster_list.no_clock_control.$n" "$ncu" "${section_args[@]}" --metrics "$metrics" --clock-control none \
    --import-source yes -f -o "$out/kbnk.$n" "${prog[@]}"
  row "set_full.$n" "$ncu" --set full --import-source yes --clock-control base -f -o "$out/full.$n" "${prog[@]}"
  row "export_details.$n" "$ncu" -i "$out/kb.$n.ncu-rep" --csv --page details --print-details all
done
