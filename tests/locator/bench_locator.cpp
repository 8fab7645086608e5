// bench_locator: how long locate_cuda_symbols takes on a ~2 MB .cu (the size it must handle
// on every keystroke), and symbol_at at the end of that file.
//
// The file is the real-world-style locator fixtures repeated, each copy in its own namespace,
// until it reaches --size bytes. Prints the median, min and max of --runs runs after two
// warm-up runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/source/kernel_locator.h"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::size_t size = 2 * 1024 * 1024;  // bytes
  int runs = 11;
  std::string fixtures = KBLASTER_FIXTURES_DIR "/locator";
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + arg);
    const std::string value = argv[++i];
    if (arg == "--size") {
      o.size = std::stoul(value);
    } else if (arg == "--runs") {
      o.runs = std::max(1, std::stoi(value));
    } else if (arg == "--fixtures") {
      o.fixtures = value;
    } else {
      throw std::invalid_argument("unknown option " + arg +
                                  " (use --size BYTES, --runs N, --fixtures DIR)");
    }
  }
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string generate(const options& o) {
  const std::vector<std::string> names = {"softmax.cu", "gemm.cu",       "templates.cu",
                                          "attributes.cu", "comments.cu", "raw_strings.cu",
                                          "launchers.cu", "operators.cu"};
  std::vector<std::string> parts;
  for (const std::string& n : names) parts.push_back(read_file(o.fixtures + "/" + n));
  std::string out;
  out.reserve(o.size + 64 * 1024);
  for (std::size_t copy = 0; out.size() < o.size; ++copy) {
    for (const std::string& part : parts) {
      out += "namespace copy_" + std::to_string(copy) + " {\n";
      out += part;
      out += "}\n";
    }
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  const std::string source = generate(o);

  // Warm-up: the first calls pay for page faults on fresh token arrays, which a daemon that
  // locates on every keystroke pays once.
  for (int run = 0; run < 2; ++run) kblaster::engine::locate_cuda_symbols(source);

  std::vector<double> locate_ms;
  std::vector<double> lookup_ms;
  std::size_t symbols = 0;
  for (int run = 0; run < o.runs; ++run) {
    const auto start = clock_type::now();
    const auto found = kblaster::engine::locate_cuda_symbols(source);
    locate_ms.push_back(ms_since(start));
    symbols = found.size();
    // Hover near the end: the worst case for symbol_at's linear scans.
    const std::size_t offset = source.rfind("<<<") - 3;
    const auto lookup_start = clock_type::now();
    const auto* hit = kblaster::engine::symbol_at(found, source, offset);
    lookup_ms.push_back(ms_since(lookup_start));
    if (hit == nullptr) throw std::runtime_error("symbol_at found nothing at the last launch");
  }
  std::printf("bench_locator: %zu bytes, %zu symbols, %d runs\n", source.size(), symbols, o.runs);
  std::printf("  locate_cuda_symbols: median %.2f ms, min %.2f ms, max %.2f ms (%.0f MB/s)\n",
              median(locate_ms), *std::min_element(locate_ms.begin(), locate_ms.end()),
              *std::max_element(locate_ms.begin(), locate_ms.end()),
              static_cast<double>(source.size()) / 1e3 / median(locate_ms));
  std::printf("  symbol_at (last launch site): median %.3f ms\n", median(lookup_ms));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_locator: %s\n", e.what());
  return 1;
}
