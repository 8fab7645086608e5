// The cache of ncu's pages (engine/evaluate/profile_cache.h): a stored profile comes back whole
// under its key and under no other; a damaged entry is a miss, never a half profile.
#include "engine/evaluate/profile_cache.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

using namespace kblaster::engine::optimize;
namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const char* name) {
  const auto d = fs::temp_directory_path() / ("kblaster-profile-cache-" + std::string(name) + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}
}  // namespace

TEST_CASE("profile cache: a stored profile comes back whole under its key, and only under it") {
  const auto dir = fresh_dir("roundtrip");
  const profile_cache cache(dir);
  const auto key = profile_cache::key_of({"hash", "{\"inputs\":[]}", "sm_90", "NVIDIA H100", "", "/usr/bin/ncu", "1@2", "base"});
  CHECK_FALSE(cache.load(key).has_value());
  REQUIRE(cache.store(key, {"\"ID\",\"Kernel Name\"\n1,k\n", "\"ID\"\n1\n", "# source\n", "/tmp/run/profile.ncu-rep"}));
  const auto hit = cache.load(key);
  REQUIRE(hit.has_value());
  CHECK(hit->details_csv == "\"ID\",\"Kernel Name\"\n1,k\n");
  CHECK(hit->raw_csv == "\"ID\"\n1\n");
  CHECK(hit->source_csv == "# source\n");
  CHECK(hit->report_path == "/tmp/run/profile.ncu-rep");
  // Another GPU, another shape, another ncu: other keys, no hit.
  CHECK_FALSE(cache.load(profile_cache::key_of({"hash", "{\"inputs\":[]}", "sm_90", "NVIDIA H200", "", "/usr/bin/ncu", "1@2", "base"})));
  CHECK_FALSE(cache.load(profile_cache::key_of({"hash", "{\"inputs\":[1]}", "sm_90", "NVIDIA H100", "", "/usr/bin/ncu", "1@2", "base"})));
  fs::remove_all(dir);
}

TEST_CASE("profile cache: keys of different part lists differ even when the parts concatenate alike") {
  CHECK(profile_cache::key_of({"ab", "c"}) != profile_cache::key_of({"a", "bc"}));
  CHECK(profile_cache::key_of({"ab", "c"}) == profile_cache::key_of({"ab", "c"}));
  CHECK(profile_cache::key_of({"x"}) != profile_cache::key_of({"x", ""}));
}

TEST_CASE("profile cache: a damaged entry is a miss") {
  const auto dir = fresh_dir("damaged");
  const profile_cache cache(dir);
  const auto key = profile_cache::key_of({"k"});
  REQUIRE(cache.store(key, {"d\n", "r\n", "s\n", ""}));
  REQUIRE(cache.load(key).has_value());
  SUBCASE("a page missing") {
    fs::remove(dir / key / "raw.csv");
    CHECK_FALSE(cache.load(key).has_value());
  }
  SUBCASE("a page emptied") {
    std::ofstream(dir / key / "details.csv", std::ios::trunc).flush();
    CHECK_FALSE(cache.load(key).has_value());
  }
  fs::remove_all(dir);
}

TEST_CASE("profile cache: a cache that cannot be written says so and keeps nothing") {
  const auto dir = fresh_dir("unwritable");
  fs::create_directories(dir.parent_path());
  std::ofstream(dir).put('x');  // a file where the cache's folder should be
  const profile_cache cache(dir);
  CHECK_FALSE(cache.store(profile_cache::key_of({"k"}), {"d\n", "r\n", "s\n", ""}));
  CHECK_FALSE(cache.load(profile_cache::key_of({"k"})).has_value());
  fs::remove_all(dir);
}

TEST_CASE("profile claims: a second profile of the same key waits for the first, others do not, and a stop ends the wait") {
  auto& claims = profile_claims::process();
  auto first = claims.claim("key-a", {});
  REQUIRE(first);
  // Another key is not held up.
  CHECK(claims.claim("key-b", {}).has_value());
  std::atomic<bool> second_in{false};
  std::thread second([&] {
    const auto g = claims.claim("key-a", {});
    second_in = g.has_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  CHECK_FALSE(second_in.load());  // the first still profiles
  first.reset();                   // its pages stored: the second may look them up now
  second.join();
  CHECK(second_in.load());
  // A stop while waiting: no claim, promptly.
  auto held = claims.claim("key-c", {});
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(claims.claim("key-c", stop.get_token()).has_value());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(600));
  stopper.join();
}
