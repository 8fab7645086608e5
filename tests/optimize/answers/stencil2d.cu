// A 5-point Jacobi step over an nx x ny grid, run for a few sweeps (kblaster capture test program).
// Usage: stencil2d [nx] [ny] [sweeps]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

// Four columns per thread (the launcher below launches ceil(nx / 4) threads across, in blocks of
// 32x8: a warp spans 128 columns of one row). Where the rows allow it (nx a multiple of 4, both
// pointers 16-byte aligned) the thread reads its four centre values, the four above and the four
// below as one float4 each, plus the neighbour on either side, and writes one float4; otherwise
// it does the same four columns one at a time. The same sums in the same order as before, so the
// results are bit for bit the same, with a quarter of the threads and of the memory
// instructions, and four times the bytes in flight per thread.
__global__ void stencil2d(const float* in, float* out, int nx, int ny) {
  const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x0 >= nx || y >= ny) return;
  const size_t row = static_cast<size_t>(y) * nx;
  const bool edge_row = y == 0 || y == ny - 1;
  const bool vec = (nx & 3) == 0 &&
                   ((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out)) & 15) == 0;
  if (vec) {
    const float4 c = *reinterpret_cast<const float4*>(in + row + x0);
    float4 r = c;
    if (!edge_row) {
      const float4 u = *reinterpret_cast<const float4*>(in + (row - nx) + x0);
      const float4 d = *reinterpret_cast<const float4*>(in + (row + nx) + x0);
      const float left = x0 > 0 ? in[row + x0 - 1] : 0.f;
      const float right = x0 + 4 < nx ? in[row + x0 + 4] : 0.f;
      r.x = 0.2f * (c.x + left + c.y + u.x + d.x);
      r.y = 0.2f * (c.y + c.x + c.z + u.y + d.y);
      r.z = 0.2f * (c.z + c.y + c.w + u.z + d.z);
      r.w = 0.2f * (c.w + c.z + right + u.w + d.w);
      if (x0 == 0) r.x = c.x;            // the left edge column
      if (x0 + 4 == nx) r.w = c.w;       // the right edge column
    }
    *reinterpret_cast<float4*>(out + row + x0) = r;
    return;
  }
  for (int x = x0; x < x0 + 4 && x < nx; ++x) {
    const size_t i = row + x;
    if (x == 0 || edge_row || x == nx - 1)
      out[i] = in[i];
    else
      out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);
  }
}

// ---- KernelBlaster launcher (generated from the captured launch; above it, the program's code) ----
// launch 1 of stencil2d.cu 1000 1000 3
// Memory is as the program had it just before that launch: kb_in[i] holds allocation i; kb_out[j] is the
// j-th allocation the launch writes, already holding the program's contents of it when kb_forward is
// called (the harness puts them there, outside the timed region). The grid, the block and shared
// memory may change; every parameter must keep pointing into the same allocation.
#include <cstring>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* kb_in, int kb_n_in, DLTensor* kb_out, int kb_n_out, cudaStream_t kb_stream) {
  if (kb_n_in != 2 || kb_n_out != 1) return 1;
  char* kb_alloc0 = static_cast<char*>(kb_in[0].data);  // in, parameter 0: float32[1000000], read only
  char* kb_alloc1 = static_cast<char*>(kb_out[0].data);  // out, parameter 1: float32[1000000], written
  float const* in = reinterpret_cast<float const*>(kb_alloc0);
  float* out = reinterpret_cast<float*>(kb_alloc1);
  const int nx = 1000;
  const int ny = 1000;
  // Four columns per thread: ceil(nx / 4) threads across, 32x8 threads per block.
  stencil2d<<<dim3(((nx + 3) / 4 + 31) / 32, (ny + 7) / 8, 1), dim3(32, 8, 1), 0, kb_stream>>>(in, out, nx, ny);
  return static_cast<int>(cudaGetLastError());
}
