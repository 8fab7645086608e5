// equal_answers.cu: a full reduction that stops reading its input once two calls in a row gave
// the same answer (compared on the device, so the check costs no synchronisation), and replays
// that answer from then on. Inputs rotated between timed calls (what the judge did before) leave a
// sum unchanged, so this passed at several times the honest speed (4.1x, H200); inputs drawn
// afresh for every call never give two equal answers, and it stays honest.
// kblaster-task: sum_reduction
// kblaster-honest: tests/harness/controls/shuffle_sum.cu
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. It must not be measured faster than the honest kernel.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

struct memo_state {
  float last;
  int have_last;
  int replay;
};

__global__ void sum_unless_replaying(const float* x, float* total, long long n, const memo_state* m) {
  if (m->replay) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *total = m->last;
    return;
  }
  float s = 0.f;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += stride) s += x[i];
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  __shared__ float warp_sums[32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float b = 0.f;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) b += warp_sums[w];
    atomicAdd(total, b);
  }
}

__global__ void remember(const float* total, memo_state* m) {
  if (m->replay) return;
  if (m->have_last && *total == m->last) m->replay = 1;
  m->last = *total;
  m->have_last = 1;
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  static memo_state* m = nullptr;
  if (!m) {
    if (cudaMalloc(&m, sizeof(memo_state)) != cudaSuccess) return 1;
    if (cudaMemset(m, 0, sizeof(memo_state)) != cudaSuccess) return 1;
  }
  float* total = static_cast<float*>(out[0].data);
  cudaMemsetAsync(total, 0, sizeof(float), stream);
  sum_unless_replaying<<<264, 256, 0, stream>>>(static_cast<const float*>(in[0].data), total, in[0].shape[0], m);
  remember<<<1, 1, 0, stream>>>(total, m);
  return static_cast<int>(cudaGetLastError());
}
