// side_stream_when_timed.cu: honest while verified (the work on the stream it is given); once the
// calls are timed, the work goes to a non-blocking stream of its own, which the legacy stream's
// timing events do not wait for, so the runner's events see only the launch. The results are
// right (the runner synchronises the whole device before replying); only the judge's own clock
// shows where the time went.
// kblaster-expect: timing_mismatch
// kblaster-task: vector_add
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void slow_add(const float* a, const float* b, float* c, long long n, int repeat) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    float v = 0.f;
    for (int k = 0; k < repeat; ++k) v += a[i] + b[i];  // made slow on purpose: the gap must show
    c[i] = v / static_cast<float>(repeat);
  }
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  static int calls = 0;
  static cudaStream_t side = nullptr;
  // Three seeds and two stress sets are verified first.
  cudaStream_t use = stream;
  if (++calls > 5) {
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
    use = side;
  }
  slow_add<<<264, 256, 0, use>>>(static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                                 static_cast<float*>(out[0].data), in[0].shape[0], 64);
  return static_cast<int>(cudaGetLastError());
}
