// small_add.cu: an honest grid-stride add of 2^20 floats, a call of a few microseconds. The judge
// holds a runner's figure to 10 % of its own clock: an honest call this short must still pass.
// Written for KernelBlaster's tests.
// kblaster-task: small_add
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void add(const float4* a, const float4* b, float4* c, long long n4) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  const long long n = in[0].shape[0];  // a multiple of 4 in this task
  add<<<528, 256, 0, stream>>>(static_cast<const float4*>(in[0].data), static_cast<const float4*>(in[1].data),
                               static_cast<float4*>(out[0].data), n / 4);
  return static_cast<int>(cudaGetLastError());
}
