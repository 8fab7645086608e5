// A 256-bin histogram of bytes with global atomics (kblaster capture test program).
// Usage: histogram [n]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

// Each block counts its share into 256 bins of its own in shared memory (on-chip atomics, spread
// over the banks) and adds them to the global bins once at the end: at most 256 global atomics
// per block instead of one per byte, all of them contending for the same few hundred addresses.
// The bytes are read 16 at a time (uint4) from the first 16-byte boundary on, the few before it
// and after the last whole uint4 one at a time. Integer counts: exact whatever the order.
__global__ void histogram(const unsigned char* data, int* bins, int n) {
  __shared__ int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const int len = n > 0 ? n : 0;
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = gridDim.x * blockDim.x;
  const int misaligned = static_cast<int>(reinterpret_cast<unsigned long long>(data) & 15);
  const int head = misaligned == 0 ? 0 : min(len, 16 - misaligned);
  for (int i = tid; i < head; i += stride) atomicAdd(&local[data[i]], 1);
  const int words = (len - head) / 16;
  const uint4* vec = reinterpret_cast<const uint4*>(data + head);
  for (int w = tid; w < words; w += stride) {
    const uint4 q = __ldg(vec + w);
    const unsigned parts[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int p = 0; p < 4; ++p) {
      atomicAdd(&local[parts[p] & 0xffu], 1);
      atomicAdd(&local[(parts[p] >> 8) & 0xffu], 1);
      atomicAdd(&local[(parts[p] >> 16) & 0xffu], 1);
      atomicAdd(&local[parts[p] >> 24], 1);
    }
  }
  for (int i = head + words * 16 + tid; i < len; i += stride) atomicAdd(&local[data[i]], 1);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
}

// ---- KernelBlaster launcher (generated from the captured launch; above it, the program's code) ----
// launch 0 of histogram.cu 1000000
// Memory is as the program had it just before that launch: kb_in[i] holds allocation i; kb_out[j] is the
// j-th allocation the launch writes, already holding the program's contents of it when kb_forward is
// called (the harness puts them there, outside the timed region). The grid, the block and shared
// memory may change; every parameter must keep pointing into the same allocation.
#include <cstring>
#include <dlpack/dlpack.h>

extern "C" int kb_forward(const DLTensor* kb_in, int kb_n_in, DLTensor* kb_out, int kb_n_out, cudaStream_t kb_stream) {
  if (kb_n_in != 2 || kb_n_out != 1) return 1;
  char* kb_alloc0 = static_cast<char*>(kb_in[0].data);  // data, parameter 0: uint8[1000000], read only
  char* kb_alloc1 = static_cast<char*>(kb_out[0].data);  // bins, parameter 1: int32[256], written
  unsigned char const* data = reinterpret_cast<unsigned char const*>(kb_alloc0);
  int* bins = reinterpret_cast<int*>(kb_alloc1);
  const int n = 1000000;
  histogram<<<dim3(128, 1, 1), dim3(256, 1, 1), 0, kb_stream>>>(data, bins, n);
  return static_cast<int>(cudaGetLastError());
}
