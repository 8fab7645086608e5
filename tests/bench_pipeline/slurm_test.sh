#!/usr/bin/env bash
# The Slurm path of `kblaster bench`: brings up a single-node Slurm on loopback (slurmctld and
# slurmd as the current user, AuthType=auth/none, every file under WORK_DIR, ports picked free),
# submits our KernelBench-format problems as a 3-task job array with tools/slurm/submit_bench.sh
# (outcomes served from recorded/), waits for the dependent report job, checks the report's
# figures, and stops the daemons whatever happens. Exit 77 (skipped) when Slurm is not installed.
# Usage: slurm_test.sh KBLASTER SOURCE_DIR WORK_DIR
set -euo pipefail
kblaster=$1 src=$2 work=$3
here=$src/tests/bench_pipeline
# The interpreter with PyTorch for the import: python3 in PATH, else Debian's (pyenv may shadow it).
python=${KBLASTER_TEST_PYTHON:-}
for p in python3 /usr/bin/python3; do
  [[ -z "$python" ]] && "$p" -c 'import torch' 2>/dev/null && python=$(command -v "$p")
done
[[ -n "$python" ]] || { echo "FAIL: no python3 with torch (scripts/install-deps installs python3-torch)"; exit 1; }
for d in slurmctld slurmd sbatch sinfo; do
  command -v $d >/dev/null || { echo "skipped: $d not installed (scripts/install-deps adds slurm-wlm)"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"/{state,spool,log}
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
node=$(hostname -s)
user=$(id -un)
cpus=$(nproc)
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<CONF
# Written by tests/bench_pipeline/slurm_test.sh: one node on loopback, no munge.
ClusterName=kblastertest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld -D -i -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$work/log/slurmd.out" 2>&1 &
pids+=($!)
dump() { tail -n 30 "$work"/log/*; }
ready=""
for _ in $(seq 150); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed)'; then ready=1; break; fi
  sleep 0.2
done
[[ -n $ready ]] || { echo "FAIL: the loopback Slurm did not come up"; dump; exit 1; }

run=$work/run
if ! "$src/tools/slurm/submit_bench.sh" --tasks 3 --out "$run" --kblaster "$kblaster" --wait -- \
     "$here/kernelbench" --level 1 --level 2 --recorded "$here/recorded" --import-device cpu --timing-seconds 0 --python $python; then
  echo "FAIL: submit_bench.sh or the report job failed"; dump; tail -n 30 "$run"/slurm/*.log; exit 1
fi
[[ $(ls "$run/results" | wc -l) == 5 ]] || { echo "FAIL: want 5 results: $(ls "$run/results")"; tail -n 30 "$run"/slurm/*.log; exit 1; }
workers=$(grep -ho '"worker": "slurm-[^"]*' "$run"/results/*.json | sort -u | wc -l)
[[ $workers == 3 ]] || { echo "FAIL: want results from 3 array tasks, got $workers"; exit 1; }
python3 "$here/check_report.py" "$run" run
echo "bench_pipeline.slurm: passed"
