// shuffle_sum.cu: a grid-stride sum with float4 loads, warp shuffles and one atomic per block.
// A legitimate fast candidate: the harness must pass it. Written for KernelBlaster's tests.
// kblaster-task: sum_reduction
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void shuffle_sum(const float* x, float* total, long long n) {
  float s = 0.f;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const long long n4 = n / 4;
  for (long long i = first; i < n4; i += stride) {
    const float4 v = reinterpret_cast<const float4*>(x)[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  for (long long i = 4 * n4 + first; i < n; i += stride) s += x[i];
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  __shared__ float warp_sums[32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) atomicAdd(total, s);
  }
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  float* total = static_cast<float*>(out[0].data);
  cudaMemsetAsync(total, 0, sizeof(float), stream);
  shuffle_sum<<<264, 512, 0, stream>>>(static_cast<const float*>(in[0].data), total, in[0].shape[0]);
  return static_cast<int>(cudaGetLastError());
}
