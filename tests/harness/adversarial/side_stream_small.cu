// side_stream_small.cu: side_stream_when_timed on a call of a few microseconds, where most
// captured kernels are: honest while verified; once timed, its work goes to a non-blocking stream
// of its own, which the legacy stream's timing events do not wait for, so the runner's events see
// only the launches. The judge's clock confirmed a runner only to within a quarter plus 30 us, so
// below about 40 us such a candidate stood (1.58x on vector_add, H200); over a batch of calls it
// is held to 10 %.
// kblaster-expect: timing_mismatch
// kblaster-task: small_add
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void add(const float* a, const float* b, float* c, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    c[i] = a[i] + b[i];
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
  add<<<528, 256, 0, use>>>(static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                            static_cast<float*>(out[0].data), in[0].shape[0]);
  return static_cast<int>(cudaGetLastError());
}
