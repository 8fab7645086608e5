// bench_lsp: hover round trips against the real daemon, framing throughput, idle memory.
//
// Spawns `kblaster serve` on pipes, opens 1,000 small CUDA documents and one 2 MB document, and
// times hover requests from write to reply. Prints p50/p99; the targets (hover p99 < 5 ms,
// idle RSS < 30 MB) are printed beside the figures, not asserted.
#include "protocol/framing.h"
#include "protocol/json_rpc.h"
#include "tests/bench/lsp_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using kblaster::protocol::json;
using clock_type = std::chrono::steady_clock;

namespace {

std::string small_document(int i) {
  std::ostringstream s;
  s << "// document " << i << "\n#include <cuda_runtime.h>\n\n"
    << "template <typename T, int BLOCK = 256>\n__global__ void __launch_bounds__(BLOCK)\nkernel_" << i
    << "(const T* __restrict__ in, T* __restrict__ out, int n) {\n"
    << "  int idx = blockIdx.x * blockDim.x + threadIdx.x;\n  if (idx < n) out[idx] = in[idx] * T(2);\n}\n\n"
    << "__device__ float helper_" << i << "(float x) { return x * x; }\n\n"
    << "void launch_" << i << "(const float* in, float* out, int n) {\n"
    << "  kernel_" << i << "<float><<<(n + 255) / 256, 256>>>(in, out, n);\n}\n";
  return s.str();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

void print_latency(const char* what, const std::vector<double>& ms) {
  std::printf("%-44s p50 %7.3f ms   p99 %7.3f ms   max %7.3f ms   (n=%zu)\n", what, percentile(ms, 0.5),
              percentile(ms, 0.99), percentile(ms, 1.0), ms.size());
}

json open_params(const std::string& uri, const std::string& text) {
  return {{"textDocument", {{"uri", uri}, {"languageId", "cuda"}, {"version", 1}, {"text", text}}}};
}

json hover_params(const std::string& uri, int line, int character) {
  return {{"textDocument", {{"uri", uri}}}, {"position", {{"line", line}, {"character", character}}}};
}

void bench_framing() {
  // 100,000 typical messages (a hover request, ~150 bytes) through the reader in 4 KiB reads.
  std::string stream;
  const std::string body = kblaster::protocol::make_request(1, "textDocument/hover", hover_params("file:///w/a.cu", 10, 4)).dump();
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) stream += kblaster::protocol::frame(body);
  const auto start = clock_type::now();
  kblaster::protocol::frame_reader reader;
  std::size_t count = 0, parsed = 0;
  for (std::size_t at = 0; at < stream.size(); at += 4096) {
    reader.feed(std::string_view(stream).substr(at, 4096));
    while (auto e = reader.next()) {
      ++count;
      parsed += std::holds_alternative<kblaster::protocol::request>(kblaster::protocol::parse_message(e->text));
    }
  }
  const double s = std::chrono::duration<double>(clock_type::now() - start).count();
  std::printf("framing + JSON parse: %zu messages (%zu requests) in %.3f s = %.0f messages/s, %.1f MB/s\n", count,
              parsed, s, static_cast<double>(count) / s, static_cast<double>(stream.size()) / s / 1e6);
}

}  // namespace

int main() {
  signal(SIGPIPE, SIG_IGN);
  bench_framing();

  kblaster::bench::lsp_daemon daemon(KBLASTER_BINARY, {"--log-file", "/dev/null", "--log-level", "error"});
  daemon.call(0, "initialize", {{"capabilities", json::object()}});
  daemon.send(kblaster::protocol::make_notification("initialized", json::object()));
  usleep(200000);
  const long idle_rss = daemon.rss_kib();

  constexpr int documents = 1000;
  for (int i = 0; i < documents; ++i)
    daemon.send(kblaster::protocol::make_notification("textDocument/didOpen",
                                                      open_params("file:///w/doc" + std::to_string(i) + ".cu", small_document(i))));
  // One 2 MB document: the small one repeated with distinct names.
  std::string big;
  int big_kernels = 0;
  while (big.size() < 2u << 20) big += small_document(100000 + big_kernels++);
  daemon.send(kblaster::protocol::make_notification("textDocument/didOpen", open_params("file:///w/big.cu", big)));
  daemon.call(1, "textDocument/documentSymbol", {{"textDocument", {{"uri", "file:///w/big.cu"}}}});  // wait for it
  const long loaded_rss = daemon.rss_kib();

  std::mt19937 rng(42);
  std::vector<double> small_ms, big_ms;
  int id = 10;
  for (int round = 0; round < 3000; ++round) {
    const bool on_big = round % 3 == 0;
    // Line 6 holds the kernel's name in each small document; the big one repeats every 15 lines.
    const std::string uri = on_big ? "file:///w/big.cu" : "file:///w/doc" + std::to_string(rng() % documents) + ".cu";
    const int line = on_big ? 5 + 15 * static_cast<int>(rng() % static_cast<unsigned>(big_kernels)) : 5;
    const auto start = clock_type::now();
    const json reply = daemon.call(id++, "textDocument/hover", hover_params(uri, line, 2));
    const double ms = std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
    if (reply["result"].is_null()) {
      std::fprintf(stderr, "hover on %s line %d found nothing: the benchmark is measuring the wrong thing\n", uri.c_str(), line);
      return 1;
    }
    (on_big ? big_ms : small_ms).push_back(ms);
  }
  std::vector<double> all = small_ms;
  all.insert(all.end(), big_ms.begin(), big_ms.end());
  std::printf("documents open: %d small + 1 of %.1f MB (%d kernels)\n", documents, static_cast<double>(big.size()) / 1e6,
              big_kernels);
  print_latency("hover round trip, all (target p99 < 5 ms):", all);
  print_latency("hover round trip, small documents:", small_ms);
  print_latency("hover round trip, the 2 MB document:", big_ms);

  // The first hover after an edit of the big document pays for re-indexing it.
  std::vector<double> after_edit_ms;
  for (int v = 2; v < 22; ++v) {
    daemon.send(kblaster::protocol::make_notification(
        "textDocument/didChange",
        {{"textDocument", {{"uri", "file:///w/big.cu"}, {"version", v}}},
         {"contentChanges", {{{"range", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}},
                               {"text", "// edit\n"}}}}}));
    const auto start = clock_type::now();
    daemon.call(id++, "textDocument/hover", hover_params("file:///w/big.cu", 5 + v - 1, 2));
    after_edit_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
  }
  print_latency("hover right after an edit of the 2 MB doc:", after_edit_ms);
  std::printf("resident memory: idle %.1f MB (target < 30 MB), with the documents open %.1f MB\n", idle_rss / 1024.0,
              loaded_rss / 1024.0);
  daemon.call(id++, "shutdown", nullptr);
  daemon.send(kblaster::protocol::make_notification("exit", nullptr));
  return 0;
}
