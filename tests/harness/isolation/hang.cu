// hang.cu: a kernel that never finishes. The engine's watchdog must kill the harness and
// report "hang". Written for KernelBlaster's tests.
// kblaster-expect: hang
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void spin(volatile int* flag) {
  while (*flag == 0) {
  }
}

extern "C" int kb_forward(const DLTensor*, int, DLTensor* out, int, cudaStream_t stream) {
  cudaMemsetAsync(out[0].data, 0, sizeof(int), stream);
  spin<<<1, 1, 0, stream>>>(static_cast<volatile int*>(out[0].data));
  return static_cast<int>(cudaGetLastError());
}
