// illegal_access.cu: writes far outside any allocation (an illegal address). The CUDA context is
// lost; the harness says so and exits, and the engine starts a fresh one. Written for
// KernelBlaster's tests.
// kblaster-expect: cuda_fatal
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void scribble(float* p) { p[threadIdx.x + (1ll << 40)] = 1.f; }

extern "C" int kb_forward(const DLTensor*, int, DLTensor* out, int, cudaStream_t stream) {
  scribble<<<1, 32, 0, stream>>>(static_cast<float*>(out[0].data));
  return static_cast<int>(cudaGetLastError());
}
