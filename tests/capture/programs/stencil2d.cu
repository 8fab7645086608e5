// A 5-point Jacobi step over an nx x ny grid, run for a few sweeps (kblaster capture test program).
// Usage: stencil2d [nx] [ny] [sweeps]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

__global__ void stencil2d(const float* in, float* out, int nx, int ny) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const int i = y * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);
}

int main(int argc, char** argv) {
  const int nx = argc > 1 ? std::atoi(argv[1]) : 512;
  const int ny = argc > 2 ? std::atoi(argv[2]) : 512;
  const int sweeps = argc > 3 ? std::atoi(argv[3]) : 4;
  std::vector<float> host(static_cast<size_t>(nx) * ny);
  unsigned state = 2463534242u;  // xorshift: no pattern the stencil could leave unchanged
  for (auto& v : host) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    v = static_cast<float>(state % 1000) / 1000.0f;
  }
  float *a = nullptr, *b = nullptr;
  cudaMalloc(&a, host.size() * sizeof(float));
  cudaMalloc(&b, host.size() * sizeof(float));
  cudaMemcpy(a, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  const dim3 block(16, 16);
  const dim3 grid((nx + block.x - 1) / block.x, (ny + block.y - 1) / block.y);
  for (int s = 0; s < sweeps; ++s) {
    stencil2d<<<grid, block>>>(a, b, nx, ny);
    std::swap(a, b);
  }
  cudaMemcpy(host.data(), a, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
  double sum = 0;
  for (float v : host) sum += v;
  std::printf("stencil2d %dx%d, %d sweeps: checksum %.6f\n", nx, ny, sweeps, sum);
  cudaFree(a);
  cudaFree(b);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
