#include "engine/evaluate/profile_key.h"

#include "engine/evaluate/profile_cache.h"
#include "support/hash.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <tuple>

#include <sys/stat.h>

namespace kblaster::engine::optimize {
namespace fs = std::filesystem;

namespace {

// A captured input can be hundreds of megabytes, and every candidate of a task asks for the same
// files' hashes: a file is read once per process for as long as its size and time stay the same.
std::string content_hash(const std::string& path) {
  if (path.empty()) return "";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing:" + path;  // the path stands in: no two such collide
  // The inode too: a capture rewritten in place is a new file (written beside, then renamed),
  // even where the clock's grain would give it its predecessor's size and time.
  using memo_key = std::tuple<std::string, dev_t, ino_t, off_t, long long, long>;
  static std::mutex mutex;
  static std::map<memo_key, std::string> memo;
  const memo_key key{path, st.st_dev, st.st_ino, st.st_size, static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec};
  {
    const std::lock_guard lock(mutex);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  std::ifstream in(path, std::ios::binary);
  std::uint64_t h = support::fnv1a_offset;
  std::string chunk(1 << 20, '\0');
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    h = support::fnv1a(std::string_view(chunk.data(), static_cast<std::size_t>(in.gcount())), h);
  }
  if (in.bad()) return "unreadable:" + path;
  const auto hash = "content:" + support::hex64(h);
  const std::lock_guard lock(mutex);
  memo[key] = hash;
  return hash;
}

}  // namespace

std::string profiled_task_identity(const task_spec& spec) {
  auto t = spec;
  t.name.clear();
  t.description.clear();
  t.dir.clear();
  t.kernel = content_hash(t.kernel);
  t.cpu_kernel = content_hash(t.cpu_kernel);
  t.reference.path = content_hash(t.reference.path);
  t.reference.cpu_path = content_hash(t.reference.cpu_path);
  for (auto* list : {&t.inputs, &t.outputs})
    for (auto& io : *list) io.file = content_hash(io.file);
  return to_json(t).dump();
}

std::string tool_identity(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
  return path + "|" + std::to_string(size) + "@" + std::to_string(time);
}

std::string profile_key(const profile_request_identity& r) {
  return profile_cache::key_of({content_hash(r.source_path), r.task ? profiled_task_identity(*r.task) : std::string(), r.arch,
                                r.device_name, tool_identity(r.ncu_path), r.asked});
}

}  // namespace kblaster::engine::optimize
