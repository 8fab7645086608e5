// Reading a capture folder. Its JSON comes from an agent inside someone else's program and its
// files may have been edited or truncated since: every field is checked before it is trusted.
#include "engine/capture/kernel_capture.h"
#include "support/text.h"
#include "support/files.h"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace kblaster::engine {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw capture_error(where + ": '" + key + "' is missing");
  return j.at(key);
}

std::uint64_t unsigned_field(const json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    throw capture_error(where + ": '" + key + "' must be a non-negative integer");
  return v.get<std::uint64_t>();
}

std::string string_field(const json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_string()) throw capture_error(where + ": '" + key + "' must be a string");
  return v.get<std::string>();
}

std::vector<unsigned char> from_hex(const std::string& text, const std::string& where) {
  if (text.size() % 2) throw capture_error(where + ": 'bytes' has an odd number of hex digits");
  const auto digit = [&](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
    throw capture_error(where + ": 'bytes' is not hex");
  };
  std::vector<unsigned char> out(text.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(digit(text[2 * i]) << 4 | digit(text[2 * i + 1]));
  return out;
}

std::array<unsigned, 3> dim3_field(const json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_array() || v.size() != 3) throw capture_error(where + ": '" + key + "' must be [x, y, z]");
  std::array<unsigned, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!v[i].is_number_unsigned() || v[i].get<std::uint64_t>() == 0 || v[i].get<std::uint64_t>() > 0xffffffffu)
      throw capture_error(where + ": '" + key + "' must hold three positive 32-bit sizes");
    out[i] = v[i].get<unsigned>();
  }
  return out;
}

// A file named by the capture: a plain name inside the folder, of the allocation's size.
std::string member_file(const fs::path& dir, const std::string& name, std::uint64_t bytes, const std::string& where) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw capture_error(where + ": '" + name + "' is not a file name inside the capture folder");
  const auto path = dir / name;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw capture_error(where + ": " + path.string() + " is missing");
  if (size != bytes)
    throw capture_error(where + ": " + path.string() + " holds " + std::to_string(size) + " bytes, the allocation " +
                        std::to_string(bytes));
  return path.string();
}

}  // namespace

std::uint64_t kernel_capture::total_bytes() const {
  std::uint64_t n = 0;
  for (const auto& a : allocations) n += a.bytes;
  return n;
}

std::string kernel_capture::timing_note() const {
  const std::string lone = support::ms_text(lone_launch_ms, 4);
  if (batch_calls > 0)
    return " (a call among " + std::to_string(batch_calls) + " back to back on fresh memory, as the harness times; " + lone +
           " launched alone)";
  return l2_cold ? " (launched alone, L2 flushed first)" : "";
}

std::string dims_text(const std::array<unsigned, 3>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
}

kernel_capture read_capture(const std::string& dir_text) {
  const fs::path dir = fs::absolute(dir_text);
  const auto file = dir / "capture.json";
  const auto text = support::read_file_if_exists(file);
  if (!text) throw capture_error(file.string() + " is missing: the program was not captured");
  json j;
  try {
    j = json::parse(*text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
    throw capture_error(file.string() + ": not JSON (" + e.what() + ")");
  }
  const std::string where = file.string();
  if (!j.is_object()) throw capture_error(where + ": must be an object");
  if (unsigned_field(j, "format", where) != 1) throw capture_error(where + ": unknown format (this kblaster reads format 1)");

  kernel_capture c;
  c.dir = dir.string();
  const auto& kernel = field(j, "kernel", where);
  c.requested = string_field(kernel, "requested", where + ": kernel");
  c.name = string_field(kernel, "name", where + ": kernel");
  if (j.contains("refusal")) {
    const auto& r = j.at("refusal");
    c.refusal = capture_refusal{string_field(r, "reason", where + ": refusal"), string_field(r, "message", where + ": refusal")};
    return c;
  }
  c.mangled = string_field(kernel, "mangled", where + ": kernel");
  c.launch = static_cast<long>(unsigned_field(j, "launch", where));
  c.grid = dim3_field(j, "grid", where);
  c.block = dim3_field(j, "block", where);
  c.shared_bytes = unsigned_field(j, "shared_bytes", where);
  const auto& time = field(j, "time_ms", where);
  if (!time.is_number() || time.get<double>() < 0) throw capture_error(where + ": 'time_ms' must be a non-negative number");
  c.time_ms = time.get<double>();
  if (const auto t = j.find("timing"); t != j.end() && t->is_object())
    c.l2_cold = t->value("l2_flushed", false) == true;
  c.lone_launch_ms = c.time_ms;
  if (const auto b = j.find("batch_timing"); b != j.end() && b->is_object() && b->value("measured", false) == true) {
    const auto per_call = b->find("per_call_ms");
    const auto calls = b->find("calls");
    if (per_call == b->end() || !per_call->is_number() || per_call->get<double>() <= 0 || calls == b->end() || !calls->is_number_integer())
      throw capture_error(where + ": 'batch_timing' must have a positive 'per_call_ms' and 'calls'");
    c.time_ms = per_call->get<double>();
    c.batch_calls = calls->get<int>();
  }
  const auto& device = field(j, "device", where);
  c.device_name = string_field(device, "name", where + ": device");
  c.compute_capability = string_field(device, "compute_capability", where + ": device");
  c.sm_count = static_cast<int>(unsigned_field(device, "sm_count", where + ": device"));
  if (j.contains("hidden_pointers")) c.hidden_pointers = j.at("hidden_pointers").is_boolean() && j.at("hidden_pointers").get<bool>();
  if (j.contains("determinism")) {
    const auto& d = j.at("determinism");
    const std::string at = where + ": determinism";
    const auto& checked = field(d, "checked", at);
    if (!checked.is_boolean()) throw capture_error(at + ": 'checked' must be true or false");
    determinism_check check{checked.get<bool>(), ""};
    if (!check.checked) check.reason = string_field(d, "reason", at);
    c.determinism = check;
  }

  const auto& allocations = field(j, "allocations", where);
  if (!allocations.is_array()) throw capture_error(where + ": 'allocations' must be an array");
  for (std::size_t i = 0; i < allocations.size(); ++i) {
    const auto& a = allocations[i];
    const std::string at = where + ": allocation " + std::to_string(i);
    captured_allocation alloc;
    alloc.bytes = unsigned_field(a, "bytes", at);
    alloc.before = member_file(dir, string_field(a, "before", at), alloc.bytes, at);
    const auto& written = field(a, "written", at);
    if (!written.is_boolean()) throw capture_error(at + ": 'written' must be true or false");
    alloc.written = written.get<bool>();
    if (alloc.written) alloc.after = member_file(dir, string_field(a, "after", at), alloc.bytes, at);
    if (a.contains("varies")) {
      const auto& varies = a.at("varies");
      if (!varies.is_boolean()) throw capture_error(at + ": 'varies' must be true or false");
      alloc.varies = varies.get<bool>();
    }
    // A second run's contents exist only when the launch ran twice and the runs differed; the
    // agent counts an allocation that either run changed as written, so a varying one has 'after'.
    if (alloc.varies && !(c.determinism && c.determinism->checked))
      throw capture_error(at + ": 'varies' in a capture whose 'determinism' says the launch was not run twice");
    if (alloc.varies && !alloc.written) throw capture_error(at + ": 'varies' on an allocation that is not 'written'");
    if (alloc.varies) alloc.again = member_file(dir, string_field(a, "again", at), alloc.bytes, at);
    else if (a.contains("again")) throw capture_error(at + ": 'again' names a second run's contents, but 'varies' is not true");
    c.allocations.push_back(std::move(alloc));
  }

  const auto& params = field(j, "params", where);
  if (!params.is_array()) throw capture_error(where + ": 'params' must be an array");
  std::size_t end = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    const std::string at = where + ": parameter " + std::to_string(i);
    captured_parameter param;
    param.offset = unsigned_field(p, "offset", at);
    param.size = unsigned_field(p, "size", at);
    if (param.offset < end || param.size == 0 || param.size > 32768)
      throw capture_error(at + ": its offset and size overlap the previous parameter or exceed the 32 KiB parameter space");
    end = param.offset + param.size;
    param.bytes = from_hex(string_field(p, "bytes", at), at);
    if (param.bytes.size() != param.size) throw capture_error(at + ": 'bytes' does not hold 'size' bytes");
    const auto& pointers = field(p, "pointers", at);
    if (!pointers.is_array()) throw capture_error(at + ": 'pointers' must be an array");
    for (const auto& q : pointers) {
      captured_pointer ptr;
      ptr.at = unsigned_field(q, "at", at);
      ptr.allocation = unsigned_field(q, "allocation", at);
      ptr.offset = unsigned_field(q, "offset", at);
      if (ptr.at % 8 || ptr.at + 8 > param.size) throw capture_error(at + ": a pointer lies outside the parameter");
      if (ptr.allocation >= c.allocations.size()) throw capture_error(at + ": a pointer names an allocation that is not there");
      if (ptr.offset > c.allocations[ptr.allocation].bytes)
        throw capture_error(at + ": a pointer lies outside its allocation");
      param.pointers.push_back(ptr);
    }
    c.params.push_back(std::move(param));
  }
  return c;
}

}  // namespace kblaster::engine
