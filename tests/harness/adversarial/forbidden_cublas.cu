// forbidden_cublas.cu: hands the work to cuBLAS (cublasSaxpy), which the task does not allow.
// kblaster-expect: forbidden_library
// kblaster-task: vector_add
// Adversarial candidate for the harness's GPU path (the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

extern "C" int cublasCreate_v2(void** handle);
extern "C" int cublasSaxpy_v2(void* handle, int n, const float* alpha, const float* x, int incx, float* y, int incy);

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, cudaStream_t stream) {
  static void* handle = nullptr;
  if (!handle && cublasCreate_v2(&handle) != 0) return 1;
  const int n = static_cast<int>(in[0].shape[0]);
  const float one = 1.f;
  cudaMemcpyAsync(out[0].data, in[1].data, sizeof(float) * n, cudaMemcpyDeviceToDevice, stream);
  return cublasSaxpy_v2(handle, n, &one, static_cast<const float*>(in[0].data), 1, static_cast<float*>(out[0].data), 1);
}
