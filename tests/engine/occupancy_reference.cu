// Occupancy reference: prints cudaOccupancyMaxActiveBlocksPerMultiprocessor for a table of
// (kernel, block size, dynamic shared memory) cases, with each kernel's registers and static
// shared memory, so that engine/toolchain/occupancy.cpp can be checked against the CUDA runtime.
// Built and run on the GPU machine by tests/engine/record_gpu_fixtures.sh; its output is
// tests/fixtures/occupancy/h100_reference.csv.
#include <cstdio>
#include <cuda_runtime.h>

// R live accumulators push the register count up roughly in step with R.
template <int R>
__global__ void regs_kernel(float* out, int n) {
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = out[(threadIdx.x + r) % n];
  for (int k = 0; k < n; ++k) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = acc[r] * acc[(r + 1) % R] + 1.0f;
  }
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < R; ++r) s += acc[r];
  out[threadIdx.x] = s;
}

// Static shared memory of S floats.
template <int S>
__global__ void smem_kernel(float* out) {
  __shared__ float tile[S];
  tile[threadIdx.x % S] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % S];
}

__global__ void dyn_smem_kernel(float* out) {
  extern __shared__ float dyn[];
  dyn[threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = dyn[blockDim.x - 1 - threadIdx.x];
}

template <typename K>
static void row(const char* name, K kernel, int block, size_t dyn) {
  cudaFuncAttributes attr{};
  cudaFuncGetAttributes(&attr, kernel);
  if (dyn > 48 * 1024)
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(dyn));
  int blocks = -1;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block, dyn);
  std::printf("%s,%d,%d,%zu,%zu,%d,%s\n", name, attr.numRegs, block, attr.sharedSizeBytes, dyn,
              e == cudaSuccess ? blocks : -1, e == cudaSuccess ? "ok" : cudaGetErrorString(e));
}

int main() {
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  std::printf("# device=%s cc=%d.%d sms=%d regs_per_sm=%d smem_per_sm=%zu smem_per_block_optin=%zu "
              "reserved_smem_per_block=%zu max_threads_per_sm=%d max_blocks_per_sm=%d\n",
              p.name, p.major, p.minor, p.multiProcessorCount, p.regsPerMultiprocessor,
              p.sharedMemPerMultiprocessor, p.sharedMemPerBlockOptin, p.reservedSharedMemPerBlock,
              p.maxThreadsPerMultiProcessor, p.maxBlocksPerMultiProcessor);
  std::printf("kernel,registers,block_size,static_smem,dynamic_smem,max_active_blocks,status\n");
  const int blocks[] = {32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
  for (int b : blocks) {
    row("regs8", regs_kernel<8>, b, 0);
    row("regs24", regs_kernel<24>, b, 0);
    row("regs40", regs_kernel<40>, b, 0);
    row("regs64", regs_kernel<64>, b, 0);
    row("regs100", regs_kernel<100>, b, 0);
    row("regs160", regs_kernel<160>, b, 0);
  }
  const int sblocks[] = {32, 128, 256, 1024};
  for (int b : sblocks) {
    row("smem1k", smem_kernel<256>, b, 0);
    row("smem8k", smem_kernel<2048>, b, 0);
    row("smem24k", smem_kernel<6144>, b, 0);
    row("smem40k", smem_kernel<10240>, b, 0);
  }
  const size_t dyns[] = {0, 1024, 4096, 10000, 16384, 33000, 49152, 65536, 100000, 150000, 227000};
  const int dblocks[] = {64, 256, 1024};
  for (int b : dblocks)
    for (size_t d : dyns) row("dyn", dyn_smem_kernel, b, d);
  return 0;
}
