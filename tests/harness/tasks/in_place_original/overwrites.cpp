// in_place_original, wrong: acc = 2 x, ignoring what acc held (the in-place update lost). The
// harness compares against the original's acc + 2 x, so this must fail. Written for KernelBlaster's
// harness tests.
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, void* /*stream*/) {
  if (n_in != 2 || n_out != 1) return 1;
  const long long n = in[0].shape[0];
  const float* x = static_cast<const float*>(in[0].data);
  float* acc = static_cast<float*>(out[0].data);
  for (long long i = 0; i < n; ++i) acc[i] = 2.0f * x[i];
  return 0;
}
