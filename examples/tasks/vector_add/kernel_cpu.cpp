// vector_add, host-code version of kernel.cu for the harness's CPU path (same kb_forward ABI).
#include <dlpack/dlpack.h>

/// Inputs a, b; output c, all float32 of the same length. `stream` is unused on the CPU.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 2 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (long long i = 0; i < n; ++i) c[i] = a[i] + b[i];
  return 0;
}
