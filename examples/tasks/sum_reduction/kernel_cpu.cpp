// sum_reduction, host-code version of kernel.cu for the harness's CPU path (same kb_forward ABI).
#include <dlpack/dlpack.h>

/// Input x [n]; output a 0-d float32 tensor holding the sum (accumulated in double).
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 1 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  const float* x = static_cast<const float*>(in[0].data);
  double s = 0;
  for (long long i = 0; i < n; ++i) s += x[i];
  *static_cast<float*>(out[0].data) = static_cast<float>(s);
  return 0;
}
