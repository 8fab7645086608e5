// Does the way a batch of calls is launched change a short kernel's time per call? The harness's
// runner (harness/runner/main.cpp) launches each call on a blocking stream of its own between
// events on the legacy stream, paced by the host; the capture agent (capture/capture_agent.cpp)
// launches on the program's stream behind a blocking kernel, so that the whole batch is queued
// before the GPU starts. This prints, for a 5-point stencil at a few sizes, the time per call
// (difference of a full and a half batch, median of three, L2 flushed before each batch) and the
// host's time to queue a call, under each arrangement:
//   legacy        calls and events on the legacy default stream, host-paced
//   legacy+hold   the same behind a blocking kernel (the capture agent's way)
//   blocking      calls on a cudaStreamCreate stream, events on the legacy stream (the runner's way)
//   blocking+hold the same behind a blocking kernel on the legacy stream
//   own           calls and events on one non-blocking stream, host-paced
//   ipc           as arena, in a second process that imports the arena through CUDA IPC (the
//                 runner's case); ipc+refresh: the first process rewrites the arena before each batch
//   arena         as blocking, each tensor's copies side by side in one allocation (the judge's
//                 shared arena's layout; the arena itself is CUDA IPC memory, which this is not)
//   tools/gpu/launch_gap/launch_gap [CALLS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>
#include <string>
#include <unistd.h>
#include <sys/wait.h>

__global__ void stencil(const float* in, float* out, int nx, int ny) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x <= 0 || y <= 0 || x >= nx - 1 || y >= ny - 1) return;
  const int i = y * nx + x;
  out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);
}

// Spins until the host sets the flag (or ~50 ms pass: a host that blocks must not hang it).
__global__ void hold(volatile unsigned* flag) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (;;) {
    if (*flag) return;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 > 50000000ull) return;
  }
}

__global__ void fill(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = v + 1e-7f * static_cast<float>(i & 1023);
}

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

// The child of the IPC rows: imports the parent's two arenas and times batches on them, as the
// harness's runner does on the judge's arena. Before each batch it asks the parent (a byte on
// its stdout) and waits for the parent's go (a byte on its stdin): the parent may rewrite the
// arena first, in its own context, as the judge renews every slot before a batch.
int child_main(int argc, char** argv) {
  const int nx = std::atoi(argv[2]), ny = std::atoi(argv[3]), calls = std::atoi(argv[4]);
  cudaIpcMemHandle_t h_in, h_out;
  if (read(0, &h_in, sizeof h_in) != sizeof h_in || read(0, &h_out, sizeof h_out) != sizeof h_out) return 2;
  float *in = nullptr, *out = nullptr;
  CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&in), h_in, cudaIpcMemLazyEnablePeerAccess));
  CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&out), h_out, cudaIpcMemLazyEnablePeerAccess));
  cudaStream_t blocking;
  CHECK(cudaStreamCreate(&blocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const dim3 block(32, 8), grid((nx + 31) / 32, (ny + 7) / 8);
  const size_t n = static_cast<size_t>(nx) * ny;
  auto batch = [&](int k) {
    char c = 'r';
    if (write(1, &c, 1) != 1 || read(0, &c, 1) != 1) std::exit(3);
    CHECK(cudaEventRecord(start, cudaStreamLegacy));
    for (int i = 0; i < k; ++i) stencil<<<grid, block, 0, blocking>>>(in + i * n, out + i * n, nx, ny);
    CHECK(cudaEventRecord(stop, cudaStreamLegacy));
    CHECK(cudaDeviceSynchronize());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return static_cast<double>(ms);
  };
  batch(calls);
  std::vector<double> per;
  for (int r = 0; r < 3; ++r) {
    const double half = batch(calls / 2), full = batch(calls);
    per.push_back((full - half) / (calls - calls / 2) * 1000);
  }
  std::sort(per.begin(), per.end());
  char c = 'd';
  if (write(1, &c, 1) != 1) return 3;
  if (write(1, &per[1], sizeof(double)) != sizeof(double)) return 3;
  return 0;
}

// Runs the child on the arenas; `refresh`: the parent rewrites them (and flushes L2) before each
// batch, else it only flushes L2. Returns the child's time per call in us.
double ipc_run(const char* self, float* in, float* out, int nx, int ny, int calls, bool refresh, void* flush,
               size_t flush_bytes) {
  int to_child[2], from_child[2];
  if (pipe(to_child) || pipe(from_child)) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    const std::string a = std::to_string(nx), b = std::to_string(ny), c = std::to_string(calls);
    execl(self, self, "child", a.c_str(), b.c_str(), c.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  cudaIpcMemHandle_t h_in, h_out;
  CHECK(cudaIpcGetMemHandle(&h_in, in));
  CHECK(cudaIpcGetMemHandle(&h_out, out));
  if (write(to_child[1], &h_in, sizeof h_in) != sizeof h_in || write(to_child[1], &h_out, sizeof h_out) != sizeof h_out) return -1;
  const size_t n = static_cast<size_t>(nx) * ny * calls;
  double result = -1;
  for (;;) {
    char c = 0;
    if (read(from_child[0], &c, 1) != 1) break;
    if (c == 'd') {
      if (read(from_child[0], &result, sizeof result) != sizeof result) result = -1;
      break;
    }
    if (refresh) {
      fill<<<1024, 256>>>(in, n, 1.0f);
      fill<<<1024, 256>>>(out, n, 0.0f);
    }
    CHECK(cudaMemset(flush, 1, flush_bytes));
    CHECK(cudaDeviceSynchronize());
    c = 'g';
    if (write(to_child[1], &c, 1) != 1) break;
  }
  close(to_child[1]);
  close(from_child[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return result;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "child") return child_main(argc, argv);
  const int max_calls = argc > 1 ? std::atoi(argv[1]) : 512;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, at most %d calls a batch (8 GB of copies)\n", prop.name, max_calls);
  unsigned* flag_host = nullptr;
  unsigned* flag_dev = nullptr;
  CHECK(cudaHostAlloc(&flag_host, sizeof(unsigned), cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer(&flag_dev, flag_host, 0));
  void* flush = nullptr;
  const size_t flush_bytes = 2 * static_cast<size_t>(prop.l2CacheSize);
  CHECK(cudaMalloc(&flush, flush_bytes));
  cudaStream_t blocking, own;
  CHECK(cudaStreamCreate(&blocking));
  CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int shapes[][2] = {{1000, 700}, {1000, 1000}, {2048, 1000}, {4096, 4096}};
  std::printf("%-12s %-14s %12s %12s %12s\n", "shape", "arrangement", "lone us", "per call us", "queue us");
  for (const auto& s : shapes) {
    const int nx = s[0], ny = s[1];
    const size_t bytes = static_cast<size_t>(nx) * ny * sizeof(float);
    const int calls = static_cast<int>(std::min<size_t>(max_calls, (8ull << 30) / (2 * bytes))) & ~1;
    std::vector<float*> in(calls), out(calls);
    for (int c = 0; c < calls; ++c) {
      CHECK(cudaMalloc(&in[c], bytes));
      CHECK(cudaMalloc(&out[c], bytes));
      CHECK(cudaMemset(in[c], 0, bytes));
    }
    float *arena_in = nullptr, *arena_out = nullptr;
    CHECK(cudaMalloc(&arena_in, bytes * calls));
    CHECK(cudaMalloc(&arena_out, bytes * calls));
    CHECK(cudaMemset(arena_in, 0, bytes * calls));
    const dim3 block(32, 8), grid((nx + 31) / 32, (ny + 7) / 8);
    for (int arrangement = 0; arrangement < 6; ++arrangement) {
      const char* names[] = {"legacy", "legacy+hold", "blocking", "blocking+hold", "own", "arena"};
      const bool arena = arrangement == 5;
      const bool held = arrangement == 1 || arrangement == 3;
      cudaStream_t launch = arrangement <= 1 ? cudaStreamLegacy : arrangement == 4 ? own : blocking;
      cudaStream_t events = arrangement == 4 ? own : cudaStreamLegacy;
      double queue_us = 0;
      auto batch = [&](int n) {
        CHECK(cudaMemsetAsync(flush, arrangement, flush_bytes, events));
        CHECK(cudaDeviceSynchronize());
        if (held) { *flag_host = 0; hold<<<1, 1, 0, events>>>(flag_dev); }
        CHECK(cudaEventRecord(start, events));
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < n; ++c) stencil<<<grid, block, 0, launch>>>(arena ? arena_in + static_cast<size_t>(c) * nx * ny : in[c],
                                                              arena ? arena_out + static_cast<size_t>(c) * nx * ny : out[c], nx, ny);
        queue_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
        CHECK(cudaEventRecord(stop, events));
        if (held) *flag_host = 1;
        CHECK(cudaDeviceSynchronize());
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        return static_cast<double>(ms);
      };
      batch(calls);  // warm-up
      const double lone = batch(1) * 1000;
      std::vector<double> per;
      for (int r = 0; r < 3; ++r) {
        const double half = batch(calls / 2), full = batch(calls);
        per.push_back((full - half) / (calls - calls / 2) * 1000);
      }
      std::sort(per.begin(), per.end());
      char shape[32];
      std::snprintf(shape, sizeof shape, "%dx%d", nx, ny);
      std::printf("%-12s %-14s %12.2f %12.2f %12.2f\n", shape, names[arrangement], lone, per[1], queue_us);
    }
    for (int refresh = 0; refresh < 2; ++refresh) {
      char shape[32];
      std::snprintf(shape, sizeof shape, "%dx%d", nx, ny);
      const double per = ipc_run("/proc/self/exe", arena_in, arena_out, nx, ny, calls, refresh, flush, flush_bytes);
      std::printf("%-12s %-14s %12s %12.2f %12s\n", shape, refresh ? "ipc+refresh" : "ipc", "-", per, "-");
      std::fflush(stdout);
    }
    for (int c = 0; c < calls; ++c) { cudaFree(in[c]); cudaFree(out[c]); }
    cudaFree(arena_in);
    cudaFree(arena_out);
  }
  return 0;
}
