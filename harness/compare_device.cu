// One pass over out and ref: the per-element rules of compare.cpp's chunk loop, in float64.
#include "harness/compare_device.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace kblaster::harness {
namespace {

constexpr int threads_per_block = 256;
constexpr int max_blocks = 4096;
constexpr long long no_index = std::numeric_limits<long long>::max();

struct partial {
  long long unwritten, first_unwritten, mismatches, first_mismatch;
  double max_abs, max_rel, diff2, ref2, rmin, rmax, omin, omax;
  int infinite;
};

__device__ double as_double(float v) { return v; }
__device__ double as_double(double v) { return v; }
__device__ double as_double(__half v) { return __half2float(v); }
__device__ double as_double(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ void start(partial& p) {
  p.unwritten = p.mismatches = 0;
  p.first_unwritten = p.first_mismatch = no_index;
  p.max_abs = p.max_rel = p.diff2 = p.ref2 = 0;
  p.rmin = p.omin = INFINITY;
  p.rmax = p.omax = -INFINITY;
  p.infinite = 0;
}

// Folds b into a; a's elements all come before b's or the first-index minimum sorts it out.
__host__ __device__ void fold(partial& a, const partial& b) {
  a.unwritten += b.unwritten;
  a.first_unwritten = a.first_unwritten < b.first_unwritten ? a.first_unwritten : b.first_unwritten;
  a.mismatches += b.mismatches;
  a.first_mismatch = a.first_mismatch < b.first_mismatch ? a.first_mismatch : b.first_mismatch;
  a.max_abs = a.max_abs > b.max_abs ? a.max_abs : b.max_abs;
  a.max_rel = a.max_rel > b.max_rel ? a.max_rel : b.max_rel;
  a.diff2 += b.diff2;
  a.ref2 += b.ref2;
  a.rmin = a.rmin < b.rmin ? a.rmin : b.rmin;
  a.rmax = a.rmax > b.rmax ? a.rmax : b.rmax;
  a.omin = a.omin < b.omin ? a.omin : b.omin;
  a.omax = a.omax > b.omax ? a.omax : b.omax;
  a.infinite |= b.infinite;
}

template <typename T>
__global__ void __launch_bounds__(threads_per_block)
    compare_kernel(const T* out, const T* ref, long long n, double atol, double rtol, partial* parts) {
  partial p;
  start(p);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double o = as_double(out[i]), r = as_double(ref[i]);
    const bool o_nan = isnan(o), r_nan = isnan(r);
    if (o_nan && !r_nan) {
      ++p.unwritten;
      if (p.first_unwritten == no_index) p.first_unwritten = i;
    }
    // Both NaN, or the same infinity, is agreement; anything else non-finite is an error.
    const bool agree = (o_nan && r_nan) || (isinf(o) && o == r);
    const double err = agree ? 0.0 : fabs(o - r);
    // Written so that a NaN error counts as a mismatch; agreement never does.
    if (!agree && !(err <= atol + rtol * fabs(r))) {
      ++p.mismatches;
      if (p.first_mismatch == no_index) p.first_mismatch = i;
    }
    if (isfinite(err)) {
      p.max_abs = fmax(p.max_abs, err);
      if (r != 0) p.max_rel = fmax(p.max_rel, err / fabs(r));
      p.diff2 += err * err;
    } else {
      p.infinite = 1;
    }
    if (isfinite(r)) {
      p.ref2 += r * r;
      p.rmin = fmin(p.rmin, r);
      p.rmax = fmax(p.rmax, r);
    }
    if (isfinite(o)) {
      p.omin = fmin(p.omin, o);
      p.omax = fmax(p.omax, o);
    }
  }
  // A fixed tree over the block: the same sums in the same order on every run.
  __shared__ partial shared[threads_per_block];
  shared[threadIdx.x] = p;
  __syncthreads();
  for (int half = threads_per_block / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) fold(shared[threadIdx.x], shared[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) parts[blockIdx.x] = shared[0];
}

template <typename T>
void launch(const void* out, const void* ref, long long n, double atol, double rtol, int blocks, partial* parts) {
  compare_kernel<T><<<blocks, threads_per_block, 0, cudaStreamLegacy>>>(static_cast<const T*>(out), static_cast<const T*>(ref),
                                                                         n, atol, rtol, parts);
}

}  // namespace

bool compare_on_device(const void* out, const void* ref, device_element type, std::int64_t n, double atol, double rtol,
                       output_figures& figures, const char** error) {
  // One buffer of block partials for the harness's life (a few hundred KB), allocated once.
  static std::mutex m;
  static partial* parts = nullptr;
  static int sm_count = 0;
  std::lock_guard lock(m);
  const auto failed = [&](cudaError_t e) {
    if (error) *error = cudaGetErrorString(e);
    // Cleared, so that LibTorch's next launch check does not report it as its own (the chunk
    // loop runs next); an error that sticks to the context stays whatever this does.
    (void)cudaGetLastError();
    return false;
  };
  if (!parts) {
    int device = 0;
    if (auto e = cudaGetDevice(&device); e != cudaSuccess) return failed(e);
    if (auto e = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return failed(e);
    if (auto e = cudaMalloc(&parts, sizeof(partial) * max_blocks); e != cudaSuccess) return failed(e);
  }
  // Enough blocks to fill every SM several times over; the grid-stride loop covers the rest.
  const long long wanted = (n + threads_per_block - 1) / threads_per_block;
  const int blocks = static_cast<int>(std::max(1LL, std::min<long long>(wanted, std::min(max_blocks, 8 * std::max(1, sm_count)))));
  switch (type) {
    case device_element::float32: launch<float>(out, ref, n, atol, rtol, blocks, parts); break;
    case device_element::float64: launch<double>(out, ref, n, atol, rtol, blocks, parts); break;
    case device_element::float16: launch<__half>(out, ref, n, atol, rtol, blocks, parts); break;
    case device_element::bfloat16: launch<__nv_bfloat16>(out, ref, n, atol, rtol, blocks, parts); break;
  }
  if (auto e = cudaGetLastError(); e != cudaSuccess) return failed(e);
  std::vector<partial> host(static_cast<std::size_t>(blocks));
  // Ordered after the kernel on the legacy stream, and waits for it.
  if (auto e = cudaMemcpy(host.data(), parts, sizeof(partial) * host.size(), cudaMemcpyDeviceToHost); e != cudaSuccess)
    return failed(e);
  partial all = host[0];
  for (std::size_t b = 1; b < host.size(); ++b) fold(all, host[b]);
  figures.unwritten = all.unwritten;
  figures.first_unwritten = all.unwritten > 0 ? all.first_unwritten : -1;
  figures.mismatches = all.mismatches;
  figures.first_mismatch = all.mismatches > 0 ? all.first_mismatch : -1;
  figures.max_abs_error = all.max_abs;
  figures.max_rel_error = all.max_rel;
  figures.diff2 = all.diff2;
  figures.ref2 = all.ref2;
  figures.infinite_error = all.infinite != 0;
  figures.ref_min = all.rmin;
  figures.ref_max = all.rmax;
  figures.out_min = all.omin;
  figures.out_max = all.omax;
  return true;
}

}  // namespace kblaster::harness
