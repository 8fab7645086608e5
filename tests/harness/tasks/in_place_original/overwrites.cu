// in_place_original, wrong: acc = 2 x, ignoring what acc held (the in-place update lost). The
// harness compares against the original's acc + 2 x, so this must fail. Written for KernelBlaster's
// harness tests.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void overwrite(const float* x, float* acc, long long n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) acc[i] = 2.0f * x[i];
}

extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  overwrite<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(static_cast<const float*>(in[0].data),
                                                                       static_cast<float*>(out[0].data), n);
  return static_cast<int>(cudaGetLastError());
}
