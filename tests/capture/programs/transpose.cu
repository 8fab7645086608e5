// A tiled matrix transpose through shared memory (kblaster capture test program).
// Usage: transpose [rows] [cols]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

constexpr int tile = 32;

__global__ void transpose(const float* in, float* out, int rows, int cols) {
  __shared__ float t[tile][tile + 1];
  int x = blockIdx.x * tile + threadIdx.x;
  int y = blockIdx.y * tile + threadIdx.y;
  for (int j = 0; j < tile; j += blockDim.y)
    if (x < cols && y + j < rows) t[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * tile + threadIdx.x;
  y = blockIdx.x * tile + threadIdx.y;
  for (int j = 0; j < tile; j += blockDim.y)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = t[threadIdx.x][threadIdx.y + j];
}

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int cols = argc > 2 ? std::atoi(argv[2]) : 700;
  std::vector<float> host(static_cast<size_t>(rows) * cols);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1013);
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, host.size() * sizeof(float));
  cudaMalloc(&out, host.size() * sizeof(float));
  cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  const dim3 block(tile, 8);
  const dim3 grid((cols + tile - 1) / tile, (rows + tile - 1) / tile);
  transpose<<<grid, block>>>(in, out, rows, cols);
  std::vector<float> t(host.size());
  cudaMemcpy(t.data(), out, t.size() * sizeof(float), cudaMemcpyDeviceToHost);
  bool ok = true;
  for (int r = 0; r < rows && ok; ++r)
    for (int c = 0; c < cols; ++c)
      if (t[static_cast<size_t>(c) * rows + r] != host[static_cast<size_t>(r) * cols + c]) ok = false;
  std::printf("transpose %dx%d: %s\n", rows, cols, ok ? "correct" : "WRONG");
  cudaFree(in);
  cudaFree(out);
  return ok ? 0 : 1;
}
