// row_softmax: one thread per row, three passes (max, sum of exp, normalise). Naive but correct.
// applied: vectorized_memory_access
// row_softmax: one thread per row, three passes (naive structure), reading and writing the row as 16-byte
// float4s when cols % 4 == 0 and both pointers are 16-byte aligned; the scalar kernel otherwise.
#include <cstdint>
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

__global__ void row_softmax(const float* x, float* y, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + static_cast<long long>(r) * cols;
  float* yr = y + static_cast<long long>(r) * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
  float s = 0.f;
  for (int c = 0; c < cols; ++c) s += expf(xr[c] - m);
  for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) / s;
}

__global__ void row_softmax_vec4(const float* x, float* y, int rows, int cols) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int c4 = cols >> 2;
  const float4* xr = reinterpret_cast<const float4*>(x + static_cast<long long>(r) * cols);
  float4* yr = reinterpret_cast<float4*>(y + static_cast<long long>(r) * cols);
  float m = -INFINITY;
  for (int c = 0; c < c4; ++c) {
    const float4 v = xr[c];
    m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
  }
  float s = 0.f;
  for (int c = 0; c < c4; ++c) {
    const float4 v = xr[c];
    s += expf(v.x - m);
    s += expf(v.y - m);
    s += expf(v.z - m);
    s += expf(v.w - m);
  }
  for (int c = 0; c < c4; ++c) {
    const float4 v = xr[c];
    yr[c] = make_float4(expf(v.x - m) / s, expf(v.y - m) / s, expf(v.z - m) / s, expf(v.w - m) / s);
  }
}

/// Input x [rows, cols]; output y [rows, cols], float32.
extern "C" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {
  if (n_in != 1 || n_out != 1 || in[0].ndim != 2) return 1;
  const int rows = static_cast<int>(in[0].shape[0]), cols = static_cast<int>(in[0].shape[1]);
  if (rows == 0) return 0;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  if (cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0)
    row_softmax_vec4<<<(rows + 127) / 128, 128, 0, stream>>>(x, y, rows, cols);
  else
    row_softmax<<<(rows + 127) / 128, 128, 0, stream>>>(x, y, rows, cols);
  return static_cast<int>(cudaGetLastError());
}
