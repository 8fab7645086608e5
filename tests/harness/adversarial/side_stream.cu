// side_stream.cu: does the work on its own non-blocking stream after a delay and returns at once.
// kblaster-expect: side_work
// kblaster-task: vector_add
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void late_add(const float* a, const float* b, float* c, long long n) {
  const long long start = clock64();
  while (clock64() - start < 20000000) {  // ~10 ms: still running when the harness's stream is done
  }
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    c[i] = a[i] + b[i];
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t) {
  static cudaStream_t side = nullptr;
  if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
  late_add<<<132, 256, 0, side>>>(static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                                  static_cast<float*>(out[0].data), in[0].shape[0]);
  return static_cast<int>(cudaGetLastError());
}
