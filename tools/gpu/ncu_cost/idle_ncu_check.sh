#!/usr/bin/env bash
# Does an ncu that has started its target and waits for the profiled range disturb another
# process's kernel timings? Prints idle_ncu_probe's medians alone, beside an idle ncu (its target's
# CUDA context up, no kernel profiled yet), beside ncu starting over and over, and after; with the
# SM and memory clocks nvidia-smi reports at each point.
#   tools/gpu/ncu_cost/idle_ncu_check.sh PROBE [REPS]   (PROBE: idle_ncu_probe built with nvcc)
set -u
probe=$1; reps=${2:-2000}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
clocks() { echo "  clocks (SM, memory): $(nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv,noheader)"; }
timings() { for _ in 1 2 3; do echo "  $("$probe" time "$reps")"; done; }
echo "alone:"; clocks; timings
"$ncu" --metrics "$metrics" --nvtx --nvtx-include kb_candidate/ --clock-control base -f -o /tmp/idle_ncu "$probe" wait 30 >/tmp/idle_ncu.log 2>&1 &
waiting=$!
sleep 5
echo "beside an idle ncu (started 5 s before):"; clocks; timings; clocks
kill "$waiting" 2>/dev/null; wait "$waiting" 2>/dev/null
echo "beside ncu starting (started and stopped after 1.5 s, over and over):"
( for _ in $(seq 12); do timeout 1.5 "$ncu" --metrics "$metrics" --nvtx --nvtx-include kb_candidate/ --clock-control base -f \
      -o /tmp/idle_ncu2 "$probe" wait 10 >/dev/null 2>&1; done ) &
starting=$!
timings; timings; clocks
kill "$starting" 2>/dev/null; wait "$starting" 2>/dev/null
echo "after:"; clocks; timings
