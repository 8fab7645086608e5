#!/usr/bin/env bash
# Records, on the GPU machine, what the engine's tests compare against: occupancy reference values
# from cudaOccupancyMaxActiveBlocksPerMultiprocessor and Nsight Compute source pages of a
# -lineinfo build. Run from the repository root; writes everything into one tarball in $1.
set -uo pipefail
out=${1:?usage: record_gpu_fixtures.sh OUTDIR}
work=$(mktemp -d)
rec=$work/rec
mkdir -p "$rec"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv
  ncu --version
  ncu --help | grep -A14 -- '--print-source'
  command -v ctest cmake; ldconfig -p | grep -E 'sqlite|curl' | head
} > "$rec/environment.txt" 2>&1
nvcc -arch=sm_90 -o "$work/occref" tests/engine/occupancy_reference.cu &&
  "$work/occref" > "$rec/h100_reference.csv" 2>&1
nvcc -arch=sm_90 -lineinfo -o "$work/kernels" tests/fixtures/ncu-h100/kernels.cu
for k in matmul_naive transpose_conflicts; do
  ncu --set full --import-source yes -k "regex:^$k" -o "$work/$k" "$work/kernels" "$k" \
    > "$rec/$k.lineinfo.log" 2>&1
  for s in sass cuda cuda,sass; do
    ncu -i "$work/$k.ncu-rep" --csv --page source --print-source "$s" \
      > "$rec/$k.lineinfo.source_${s/,/_}.csv" 2>&1
  done
  ncu -i "$work/$k.ncu-rep" --csv --page details --print-details all > "$rec/$k.lineinfo.details.csv" 2>&1
done
tar -C "$rec" -czf "$out/recordings.tgz" .
ls -la "$rec"
