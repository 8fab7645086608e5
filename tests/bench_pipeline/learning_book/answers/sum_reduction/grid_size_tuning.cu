// sum_reduction: each block sums its slice in shared memory, then one atomicAdd per block.
// applied: grid_size_tuning
// sum_reduction: the grid is sized for the GPU instead of one block per 256 elements: 8 blocks of 256 threads
// per SM (a full wave at 2048 threads per SM), each thread accumulating a grid-stride slice before the
// block's shared-memory tree and one atomicAdd per block (far fewer atomics than one per 256 elements).
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void block_sum(const float* x, float* total, long long n) {
  __shared__ float partial[256];
  float acc = 0.f;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long long>(gridDim.x) * blockDim.x)
    acc += x[i];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(total, partial[0]);
}

static int sm_count() {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
      sms = 132;
  }
  return sms;
}

/// Input x [n]; output a 0-d float32 tensor holding the sum.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  float* total = static_cast<float*>(out[0].data);
  cudaMemsetAsync(total, 0, sizeof(float), stream);
  if (n <= 0) return static_cast<int>(cudaGetLastError());
  long long blocks = (n + 255) / 256;
  const long long wave = 8LL * sm_count();
  if (blocks > wave) blocks = wave;
  block_sum<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<const float*>(in[0].data), total, n);
  return static_cast<int>(cudaGetLastError());
}
