#!/usr/bin/env bash
# Builds kblaster-harness on a GPU machine against PyTorch's own LibTorch (the CUDA build that
# Debian's CPU-only libtorch-dev is not), and prints the executable's path on its last line.
#   tools/gpu/build_harness.sh [TARGET...]      (default target: kblaster-harness)
# The build directory is $KBLASTER_HARNESS_GPU_BUILD (default /tmp/kblaster-harness-gpu); the
# configure log goes to BUILD/cmake.log. Where the machine lacks DLPack's header, the copy carried
# in .gpu-deps/include is used (KBLASTER_DLPACK_INCLUDE, read by harness/CMakeLists.txt).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${KBLASTER_HARNESS_GPU_BUILD:-/tmp/kblaster-harness-gpu}
targets=("${@:-kblaster-harness}")
if [[ ! -f /usr/include/dlpack/dlpack.h && -d $root/.gpu-deps/include && -z ${KBLASTER_DLPACK_INCLUDE:-} ]]; then
  export KBLASTER_DLPACK_INCLUDE=$root/.gpu-deps/include
fi
mkdir -p "$build"
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S "$root/harness" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_COMPILER="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" >"$build/cmake.log" 2>&1 ||
  { tail -40 "$build/cmake.log" >&2; exit 1; }
for t in "${targets[@]}"; do
  cmake --build "$build" -j"$(nproc)" --target "$t" 2>&1 | tail -1 >&2
done
echo "$build/kblaster-harness"
