// Whether an ncu that waits (started, its target's CUDA context up, no kernel yet in the profiled
// NVTX range) disturbs another process's timing: the question behind starting the profile's
// runner under ncu before the profile is asked for. Two modes:
//   idle_ncu_probe wait SECONDS   CUDA up, then SECONDS idle, then one kernel in the NVTX range
//                                 "kb_candidate" (what ncu --nvtx-include kb_candidate/ profiles)
//   idle_ncu_probe wait2 SECONDS  the same with an empty kernel in the range first: whether ncu's
//                                 cost at its first profiled kernel is paid once or per kernel
//   idle_ncu_probe pre SECONDS    an empty kernel outside the range before the wait: whether a
//                                 launch ncu does not profile already pays that cost
//   idle_ncu_probe warmed SECONDS an empty kernel in the NVTX range "kb_warmup" at once (ncu
//                                 --nvtx-include kb_warmup/ profiles it), then as `wait`: whether
//                                 a profiled warm-up pays ncu's first-kernel cost ahead
//   idle_ncu_probe time REPS      the median of REPS cudaEvent timings of a memory-bound and a
//                                 compute-bound kernel, in microseconds, on one line
//   idle_ncu_probe clock SECONDS  the SM clock this process's kernels run at, every few ms for
//                                 SECONDS: one line "UNIX_NS MHZ" each (the observer of
//                                 ncu_clock_check.sh)
//   idle_ncu_probe after SECONDS  one kernel in the range kb_candidate, then its own SM clock for
//                                 SECONDS, then exit; prints UNIX_NS at the range's end and at exit
// tools/gpu/ncu_cost/idle_ncu_check.sh runs `time` alone, beside an idle ncu, and beside ncu
// starting, and prints the medians side by side.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

__global__ void stream_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void empty_kernel() {}

// Cycles and nanoseconds over about `spin_ns` of one thread's spinning: the SM clock it ran at.
__global__ void clock_rate(unsigned long long* out, unsigned long long spin_ns) {
  unsigned long long g0, g1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  const long long c0 = clock64();
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  } while (g1 - g0 < spin_ns);
  const long long c1 = clock64();
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = g1 - g0;
}

__global__ void fma_chain(float* out, int iterations) {
  float x = threadIdx.x * 1e-3f, y = 1.0001f;
  for (int i = 0; i < iterations; ++i) x = fmaf(x, y, 1e-7f);
  out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

#define CHECK(call)                                                                  \
  do {                                                                               \
    if (cudaError_t e = (call); e != cudaSuccess) {                                  \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e));                \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

template <class Launch>
double median_us(int reps, Launch launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 10; ++i) launch();  // warm-up
  std::vector<float> ms(static_cast<std::size_t>(reps));
  for (auto& m : ms) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventElapsedTime(&m, start, stop));
  }
  std::sort(ms.begin(), ms.end());
  return 1e3 * ms[ms.size() / 2];
}

long long unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The SM clock, read every few milliseconds for `seconds`: one line "UNIX_NS MHZ" each.
void print_clocks(double seconds, const char* tag) {
  unsigned long long* d;
  CHECK(cudaMalloc(&d, 2 * sizeof(unsigned long long)));
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    clock_rate<<<1, 1>>>(d, 1000000);
    unsigned long long h[2];
    CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
    std::printf("%s %lld %.0f\n", tag, unix_ns(), h[1] ? 1e3 * static_cast<double>(h[0]) / static_cast<double>(h[1]) : 0.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::fflush(stdout);
  CHECK(cudaFree(d));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "clock") == 0) {
    print_clocks(std::atof(argv[2]), "observer");
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "after") == 0) {
    const int n = 1 << 24;
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));
    CHECK(cudaMalloc(&c, n * sizeof(float)));
    CHECK(cudaDeviceSynchronize());
    print_clocks(0.05, "target-before");
    std::printf("range-start %lld\n", unix_ns());
    nvtxRangePushA("kb_candidate");
    stream_add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    std::printf("range-end %lld\n", unix_ns());
    print_clocks(std::atof(argv[2]), "target-after");
    std::printf("target-exit %lld\n", unix_ns());
    std::fflush(stdout);
    return 0;
  }
  const bool pre = argc == 3 && std::strcmp(argv[1], "pre") == 0;
  const bool warmed = argc == 3 && std::strcmp(argv[1], "warmed") == 0;
  const bool wait = pre || warmed || (argc == 3 && std::strcmp(argv[1], "wait") == 0), wait2 = argc == 3 && std::strcmp(argv[1], "wait2") == 0;
  if (argc != 3 || (!wait && !wait2 && std::strcmp(argv[1], "time") != 0)) {
    std::fprintf(stderr, "usage: idle_ncu_probe wait|wait2|pre|warmed|clock|after SECONDS | time REPS\n");
    return 2;
  }
  const int n = 1 << 24;
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));
  CHECK(cudaMemset(b, 0, n * sizeof(float)));
  CHECK(cudaDeviceSynchronize());
  if (wait || wait2) {
    if (pre) {
      empty_kernel<<<1, 32>>>();
      CHECK(cudaDeviceSynchronize());
    }
    if (warmed) {
      const auto warm_start = std::chrono::steady_clock::now();
      nvtxRangePushA("kb_warmup");
      empty_kernel<<<1, 32>>>();
      CHECK(cudaDeviceSynchronize());
      nvtxRangePop();
      std::printf("warm-up range %.3f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count());
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[2])));
    const auto range_start = std::chrono::steady_clock::now();
    nvtxRangePushA("kb_candidate");
    if (wait2) {
      empty_kernel<<<1, 32>>>();
      CHECK(cudaDeviceSynchronize());
    }
    stream_add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    CHECK(cudaDeviceSynchronize());
    nvtxRangePop();
    // Under ncu: the profiled kernels' replay passes, ncu's set-up at its first kernel included.
    std::printf("range %.3f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - range_start).count());
    return 0;
  }
  const int reps = std::max(1, std::atoi(argv[2]));
  const double mem = median_us(reps, [&] { stream_add<<<(n + 255) / 256, 256>>>(a, b, c, n); });
  const double fma = median_us(reps, [&] { fma_chain<<<1024, 256>>>(c, 4096); });
  std::printf("stream_add %.2f us  fma_chain %.2f us\n", mem, fma);
  return 0;
}
