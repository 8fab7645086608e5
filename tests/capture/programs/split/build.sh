#!/bin/bash
# The split program's own build: bash build.sh [static]. kblaster sees the launches of a program
# linked with the shared CUDA runtime; `static` links it as nvcc does by default, which hides them.
set -e
cd "$(dirname "$0")"
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
runtime=shared
[[ ${1:-} == static ]] && runtime=static
"$nvcc" -cudart "$runtime" -O3 -arch=native -o split_app main.cu saxpy_kernels.cu
