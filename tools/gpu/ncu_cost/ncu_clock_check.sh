#!/usr/bin/env bash
# Are the GPU's clocks still locked after the profiled process has exited, while ncu writes its
# report? The question behind replying to a profile once its runner is gone (report_later): the
# device lock is released then, and another process may time kernels meanwhile. An observer reads
# its own SM clock every few milliseconds throughout; ncu (--clock-control base, as the loop runs
# it) profiles one kernel of `idle_ncu_probe after`, which then reads its own clock for a while
# and exits. Prints the observer's clock in each window: before, during the range, after the range
# while the target lives, after the target's exit until ncu's, and after ncu's exit.
#   tools/gpu/ncu_cost/ncu_clock_check.sh PROBE [AFTER_SECONDS]
set -u
probe=$1; after=${2:-0.3}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
log=$(mktemp -d)
"$probe" clock 12 > "$log/observer" &
observer=$!
sleep 2
echo "ncu-start $(date +%s%N)" > "$log/marks"
"$ncu" --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed --nvtx --nvtx-include kb_candidate/ \
  --clock-control base -f -o "$log/report" "$probe" after "$after" > "$log/target" 2>&1
echo "ncu-exit $(date +%s%N)" >> "$log/marks"
wait "$observer"
python3 - "$log" <<'PY'
import sys, statistics
d = sys.argv[1]
marks = {}
for f in ("marks", "target"):
    for line in open(f"{d}/{f}"):
        p = line.split()
        if len(p) == 2 and p[0] in ("ncu-start", "ncu-exit", "range-start", "range-end", "target-exit"):
            marks[p[0]] = int(p[1])
obs = [(int(a), float(b)) for t, a, b in (l.split() for l in open(f"{d}/observer") if l.startswith("observer"))]
tgt = [float(l.split()[2]) for l in open(f"{d}/target") if l.startswith("target-after")]
windows = [("before ncu", 0, marks["ncu-start"]), ("ncu up, before the range", marks["ncu-start"], marks["range-start"]),
           ("the profiled range", marks["range-start"], marks["range-end"]),
           ("after the range, target alive", marks["range-end"], marks["target-exit"]),
           ("target gone, ncu writing its report", marks["target-exit"], marks["ncu-exit"]),
           ("after ncu's exit", marks["ncu-exit"], 1 << 62)]
for name, a, b in windows:
    v = [m for t, m in obs if a <= t < b]
    span = (b - a) / 1e9 if b < 1 << 61 and a > 0 else float("nan")
    print(f"  {name:38s} {span:6.3f} s  observer: {len(v):4d} readings, SM MHz median {statistics.median(v) if v else float('nan'):6.0f}, min {min(v) if v else float('nan'):6.0f}, max {max(v) if v else float('nan'):6.0f}")
if tgt:
    print(f"  the target's own clock after its range: median {statistics.median(tgt):.0f} MHz over {len(tgt)} readings")
PY
rm -rf "$log"
