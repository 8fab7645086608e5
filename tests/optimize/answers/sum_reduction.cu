// sum_reduction: each block sums its slice in shared memory, then one atomicAdd per block.
// Naive but correct (the order of the atomics varies, hence the task's absolute tolerance).
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

// Each thread accumulates a grid-stride slice in a register, warps reduce with shuffles, the
// block's warps through 32 floats of shared memory, and one atomicAdd per block: a few hundred
// atomics instead of one per 256 elements.
__global__ void block_sum(const float* __restrict__ x, float* total, long long n) {
  __shared__ float warp_sums[32];
  float v = 0.f;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) v += x[i];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.f;
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) atomicAdd(total, v);
  }
}

/// Input x [n]; output a 0-d float32 tensor holding the sum.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  float* total = static_cast<float*>(out[0].data);
  static int sms = [] {
    int device = 0, count = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    return count > 0 ? count : 80;
  }();
  long long grid = (n + 255) / 256;
  if (grid > 4LL * sms) grid = 4LL * sms;
  if (grid < 1) grid = 1;
  cudaMemsetAsync(total, 0, sizeof(float), stream);
  block_sum<<<static_cast<unsigned>(grid), 256, 0, stream>>>(static_cast<const float*>(in[0].data), total, n);
  return static_cast<int>(cudaGetLastError());
}
