// forbidden_blas: hands the work to BLAS (cblas_saxpy), which the task does not allow.
// kblaster-expect: forbidden_library
// kblaster-task: vector_add
// Adversarial candidate for the harness's CPU path (host code, the kb_forward ABI); written for
// KernelBlaster's tests. The harness must reject it with the check named above.
#include <dlpack/dlpack.h>

#include <cstring>

extern "C" void cblas_saxpy(int n, float alpha, const float* x, int incx, float* y, int incy);

extern "C" int kb_forward(const DLTensor* in, int, DLTensor* out, int, void*) {
  const int n = static_cast<int>(in[0].shape[0]);
  float* c = static_cast<float*>(out[0].data);
  std::memcpy(c, in[1].data, sizeof(float) * static_cast<size_t>(n));
  cblas_saxpy(n, 1.f, static_cast<const float*>(in[0].data), 1, c, 1);
  return 0;
}
