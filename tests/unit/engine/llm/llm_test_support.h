// Helpers for the LLM and agent tests: a loopback server on a cassette, a client pointed at it
// through the real HTTP path, a seeded KB in a temporary directory, and a classified kernel.
#pragma once

#include "engine/llm/llm_client.h"
#include "engine/llm/loopback_server.h"
#include "engine/state/profile_pipeline.h"
#include "kb/knowledge_base.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace llm_test {

namespace fs = std::filesystem;
using namespace kblaster::engine;

/// A fresh directory under /tmp, removed at the end of the scope.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "kblaster-llm-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline fs::path cassette_path(const std::string& name) {
  return fs::path(KBLASTER_FIXTURES_DIR) / "cassettes" / name;
}

/// A config pointing at `server`, with fast back-off for tests.
inline llm::llm_config loopback_config(const llm::loopback_server& server) {
  llm::llm_config c;
  c.base_url = server.base_url();
  c.model = "loopback-model";
  c.key_env = "KBLASTER_TEST_KEY";
  c.timeout_s = 5;
  c.backoff_base_ms = 20;
  c.backoff_max_ms = 200;
  c.max_retries = 3;
  return c;
}

/// A client over HTTP to `server` with `key` (never from the process environment).
inline std::unique_ptr<llm::llm_client> http_client(const llm::llm_config& c, const std::string& key = "sk-test-0000",
                                                    llm::log_sink log = {}) {
  auto redact = std::make_shared<llm::redactor>();
  redact->add_secret(key);
  return std::make_unique<llm::llm_client>(std::make_unique<llm::http_backend>(c, key, redact, std::move(log)),
                                           llm::options_from(c), redact);
}

/// A loopback server serving a fixture cassette in order, and a client pointed at it.
struct served {
  explicit served(const std::string& cassette)
      : server(llm::read_cassette(cassette_path(cassette))), client(http_client(loopback_config(server))) {}
  llm::loopback_server server;
  std::unique_ptr<llm::llm_client> client;
};

/// A seeded KB in a temporary directory.
struct seeded_kb {
  temp_dir dir;
  kblaster::kb::knowledge_base kb = kblaster::kb::knowledge_base::open(dir / "kb.sqlite");
};

/// The recorded H100 profile of examples/vadd (DRAM-bound streaming kernel).
inline kernel_view vadd_view() {
  const auto dir = fs::path(KBLASTER_FIXTURES_DIR) / "ncu-h100";
  auto o = analyze_recorded((dir / "vadd.details.csv").string(), (dir / "vadd.raw.csv").string());
  REQUIRE(o.error.empty());
  REQUIRE(!o.kernels.empty());
  return o.kernels.front();
}

/// The example source of vadd.
inline std::string vadd_source() { return read_text(fs::path(KBLASTER_SOURCE_DIR) / "examples/vadd/vadd.cu"); }

}  // namespace llm_test
