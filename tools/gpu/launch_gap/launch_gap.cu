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
#include <cstring>
#include <cuda_runtime.h>
#include <functional>
#include <vector>
#include <string>
#include <unistd.h>
#include <dlfcn.h>
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

// The time per call of a batch: the difference of a full and a half batch over the calls between
// them (what every batch pays once cancels), median of three, in microseconds. `batch(k)` times k
// calls and returns milliseconds; one full batch first, untimed.
double per_call_us(const std::function<double(int)>& batch, int calls) {
  batch(calls);
  std::vector<double> per;
  for (int r = 0; r < 3; ++r) {
    const double half = batch(calls / 2), full = batch(calls);
    per.push_back((full - half) / (calls - calls / 2) * 1000);
  }
  std::sort(per.begin(), per.end());
  return per[1];
}

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

// The child of the IPC rows: imports the parent's two arenas and times batches on them, as the
// harness's runner does on the judge's arena. Before each batch it asks the parent (a byte on
// its stdout) and waits for the parent's go (a byte on its stdin): the parent may rewrite the
// arena first, in its own context, as the judge renews every slot before a batch.
int child_main(int argc, char** argv) {
  const int nx = std::atoi(argv[2]), ny = std::atoi(argv[3]), calls = std::atoi(argv[4]);
  const long long out_offset = argc > 5 ? std::atoll(argv[5]) : -1;  // one arena: out at this byte offset
  cudaIpcMemHandle_t h_in, h_out;
  if (read(0, &h_in, sizeof h_in) != sizeof h_in || read(0, &h_out, sizeof h_out) != sizeof h_out) return 2;
  float *in = nullptr, *out = nullptr;
  CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&in), h_in, cudaIpcMemLazyEnablePeerAccess));
  if (out_offset >= 0) out = reinterpret_cast<float*>(reinterpret_cast<char*>(in) + out_offset);
  else CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&out), h_out, cudaIpcMemLazyEnablePeerAccess));
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
  const double per_call = per_call_us(batch, calls);
  char c = 'd';
  if (write(1, &c, 1) != 1) return 3;
  if (write(1, &per_call, sizeof(double)) != sizeof(double)) return 3;
  return 0;
}

// Runs the child on the arenas; `refresh`: the parent rewrites them (and flushes L2) before each
// batch, else it only flushes L2. Returns the child's time per call in us.
double ipc_run(const char* self, float* in, float* out, int nx, int ny, int calls, bool refresh, void* flush,
               size_t flush_bytes, long long out_offset = -1) {
  if (out_offset >= 0) out = reinterpret_cast<float*>(reinterpret_cast<char*>(in) + out_offset);
  int to_child[2], from_child[2];
  if (pipe(to_child) || pipe(from_child)) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    const std::string a = std::to_string(nx), b = std::to_string(ny), c = std::to_string(calls);
    const std::string o = std::to_string(out_offset);
    execl(self, self, "child", a.c_str(), b.c_str(), c.c_str(), o.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  cudaIpcMemHandle_t h_in, h_out;
  CHECK(cudaIpcGetMemHandle(&h_in, in));
  if (out_offset >= 0) h_out = h_in;
  else CHECK(cudaIpcGetMemHandle(&h_out, out));
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

// The "so" rows: a candidate library (kb_forward, as the harness builds a captured task's
// kernel.cu) called back to back in this process, on plain cudaMalloc memory, `calls` slots:
//   launch_gap so LIB CALLS FILL BYTES:W[:FILE] ...   (one per captured allocation, W=1 if written)
// FILL: zero (every byte 0), file (each slot a copy of FILE, the capture's memory; zero without
// one) or perturbed (the file's floats each times its own 1 + u, |u| < 2^-6, as the judge renews
// a capture's floating-point memory before each batch).
// The same batch as the runner makes, without the judge, its arena or the sandbox around it.
struct dl_tensor {  // DLPack's DLTensor, as far as a generated launcher reads it
  void* data;
  int device_type, device_id;
  int ndim;
  unsigned char code, bits;
  unsigned short lanes;
  long long* shape;
  long long* strides;
  unsigned long long byte_offset;
};
using forward_fn = int (*)(const dl_tensor*, int, dl_tensor*, int, cudaStream_t);

int so_main(int argc, char** argv) {
  void* lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { std::printf("dlopen: %s\n", dlerror()); return 1; }
  auto forward = reinterpret_cast<forward_fn>(dlsym(lib, "kb_forward"));
  if (!forward) { std::printf("no kb_forward\n"); return 1; }
  const int calls = std::atoi(argv[3]);
  const std::string fill_mode = argv[4];
  std::vector<size_t> bytes;
  std::vector<int> written;
  std::vector<std::vector<unsigned char>> contents;
  for (int i = 5; i < argc; ++i) {
    const std::string a = argv[i];
    const auto c1 = a.find(':'), c2 = a.find(':', c1 + 1);
    bytes.push_back(std::stoull(a.substr(0, c1)));
    written.push_back(a[c1 + 1] == '1');
    std::vector<unsigned char> data(bytes.back(), 0);
    if (c2 != std::string::npos && fill_mode != "zero") {
      FILE* f = std::fopen(a.substr(c2 + 1).c_str(), "rb");
      if (!f || std::fread(data.data(), 1, data.size(), f) != data.size()) { std::printf("cannot read %s\n", a.c_str()); return 1; }
      std::fclose(f);
    }
    contents.push_back(std::move(data));
  }
  unsigned long long lcg = 88172645463325252ull;
  int n_out = 0;
  for (int w : written) n_out += w;
  std::vector<std::vector<dl_tensor>> ins(calls, std::vector<dl_tensor>(bytes.size())), outs(calls, std::vector<dl_tensor>(n_out));
  for (int c = 0; c < calls; ++c)
    for (size_t a = 0, j = 0; a < bytes.size(); ++a) {
      void* p = nullptr;
      CHECK(cudaMalloc(&p, bytes[a]));
      if (fill_mode == "perturbed" && bytes[a] % 4 == 0) {
        std::vector<float> v(bytes[a] / 4);
        std::memcpy(v.data(), contents[a].data(), bytes[a]);
        for (auto& x : v) {
          lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
          x *= 1.0f + (static_cast<float>(lcg >> 40) / 16777216.0f * 2 - 1) / 64;
        }
        CHECK(cudaMemcpy(p, v.data(), bytes[a], cudaMemcpyHostToDevice));
      } else {
        CHECK(cudaMemcpy(p, contents[a].data(), bytes[a], cudaMemcpyHostToDevice));
      }
      ins[c][a] = dl_tensor{p, 2, 0, 1, 2, 8, 1, nullptr, nullptr, 0};
      if (written[a]) outs[c][j++] = ins[c][a];
    }
  void* flush = nullptr;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const size_t flush_bytes = 2 * static_cast<size_t>(prop.l2CacheSize);
  CHECK(cudaMalloc(&flush, flush_bytes));
  cudaStream_t blocking;
  CHECK(cudaStreamCreate(&blocking));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  auto batch = [&](int k) {
    CHECK(cudaMemsetAsync(flush, 1, flush_bytes, cudaStreamLegacy));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(start, cudaStreamLegacy));
    for (int c = 0; c < k; ++c)
      if (forward(ins[c].data(), static_cast<int>(bytes.size()), outs[c].data(), n_out, blocking) != 0) std::exit(4);
    CHECK(cudaEventRecord(stop, cudaStreamLegacy));
    CHECK(cudaDeviceSynchronize());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return static_cast<double>(ms);
  };
  batch(calls);
  const double lone = batch(1) * 1000;
  const double per_call = per_call_us(batch, calls);
  std::printf("%-36s %-9s lone %.2f us, per call %.2f us (%d calls)\n", argv[2], fill_mode.c_str(), lone, per_call, calls);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 5 && std::string(argv[1]) == "so") return so_main(argc, argv);
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
      const double per_call = per_call_us(batch, calls);
      char shape[32];
      std::snprintf(shape, sizeof shape, "%dx%d", nx, ny);
      std::printf("%-12s %-14s %12.2f %12.2f %12.2f\n", shape, names[arrangement], lone, per_call, queue_us);
    }
    for (int refresh = 0; refresh < 2; ++refresh) {
      char shape[32];
      std::snprintf(shape, sizeof shape, "%dx%d", nx, ny);
      const double per = ipc_run("/proc/self/exe", arena_in, arena_out, nx, ny, calls, refresh, flush, flush_bytes);
      std::printf("%-12s %-14s %12s %12.2f %12s\n", shape, refresh ? "ipc+refresh" : "ipc", "-", per, "-");
      std::fflush(stdout);
    }
    // One arena holding both (as the judge's does), its size padded to `gb` GiB: in at 0, out after.
    for (const int gb : {2, 5, 8, 13}) {
      const size_t want = static_cast<size_t>(gb) << 30;
      if (want < 2 * bytes * calls) continue;
      char* one = nullptr;
      if (cudaMalloc(&one, want) != cudaSuccess) { cudaGetLastError(); continue; }
      cudaMemset(one, 0, want);
      char shape[32];
      std::snprintf(shape, sizeof shape, "%dx%d", nx, ny);
      const long long off = static_cast<long long>(want / 2 / 256 * 256);
      const double per = ipc_run("/proc/self/exe", reinterpret_cast<float*>(one), nullptr, nx, ny, calls, true, flush, flush_bytes, off);
      char label[32];
      std::snprintf(label, sizeof label, "ipc-one-%dG", gb);
      std::printf("%-12s %-14s %12s %12.2f %12s\n", shape, label, "-", per, "-");
      std::fflush(stdout);
      cudaFree(one);
    }
    for (int c = 0; c < calls; ++c) { cudaFree(in[c]); cudaFree(out[c]); }
    cudaFree(arena_in);
    cudaFree(arena_out);
  }
  return 0;
}
