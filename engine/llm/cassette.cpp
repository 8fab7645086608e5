// Cassette files: reading, writing, fingerprints and replay.
#include "engine/llm/cassette.h"
#include "support/hash.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>

namespace kblaster::engine::llm {
namespace {

using json = nlohmann::json;

// A usage count: a whole number from 0 to 2^53 (exact as a double, and two of them add up without
// overflow in usage::total). The JSON reader gives 1.8e20 as a double, which converted to an
// integer unchecked was undefined behaviour (found by fuzz_cassette).
std::int64_t token_count(const json& usage, const char* field) {
  const auto it = usage.find(field);
  if (it == usage.end()) return 0;
  constexpr std::int64_t most = std::int64_t{1} << 53;
  const auto bad = [&](const std::string& why) {
    return llm_error(error_kind::bad_response,
                     std::string("not a cassette entry: usage.") + field + " " + why + ": " + it->dump());
  };
  if (it->is_number_unsigned()) {
    if (it->get<std::uint64_t>() > static_cast<std::uint64_t>(most)) throw bad("is out of range (0 to 2^53)");
    return static_cast<std::int64_t>(it->get<std::uint64_t>());
  }
  if (it->is_number_integer()) {
    if (it->get<std::int64_t>() < 0) throw bad("is out of range (0 to 2^53)");
    return it->get<std::int64_t>();
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (!(d >= 0 && d <= static_cast<double>(most))) throw bad("is out of range (0 to 2^53)");
    if (d != static_cast<double>(static_cast<std::int64_t>(d))) throw bad("is not a whole number");
    return static_cast<std::int64_t>(d);
  }
  throw bad("is not a number");
}

}  // namespace

json request_json(const chat_request& r) {
  json messages = json::array();
  for (const auto& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  json j{{"system", r.system}, {"messages", messages}};
  if (r.max_tokens > 0) j["max_tokens"] = r.max_tokens;
  if (r.temperature >= 0) j["temperature"] = r.temperature;
  return j;
}

std::string fingerprint(const chat_request& r) {
  json j = request_json(r);
  j.erase("max_tokens");
  j.erase("temperature");
  j["role"] = r.agent_role;
  const std::string text = j.dump();
  return support::fnv1a_hex(text);
}

json entry_json(const cassette_entry& e) {
  return {{"fingerprint", e.fingerprint},
          {"role", e.role},
          {"request", e.request},
          {"response", {{"text", e.response.text}, {"finish_reason", e.response.finish_reason},
                        {"model", e.response.model}}},
          {"usage", {{"prompt_tokens", e.response.usage.prompt_tokens},
                     {"completion_tokens", e.response.usage.completion_tokens},
                     {"estimated", e.response.usage.estimated}}},
          {"latency_ms", e.response.latency_ms}};
}

cassette_entry entry_from_json(const json& j) {
  cassette_entry e;
  try {
    e.fingerprint = j.value("fingerprint", "");
    e.role = j.value("role", "");
    e.request = j.value("request", json::object());
    const auto& r = j.at("response");
    e.response.text = r.at("text").get<std::string>();
    e.response.finish_reason = r.value("finish_reason", "stop");
    e.response.model = r.value("model", "");
    if (j.contains("usage")) {
      const json& usage = j.at("usage");
      if (!usage.is_object()) throw llm_error(error_kind::bad_response, "not a cassette entry: usage is not an object");
      e.response.usage.prompt_tokens = token_count(usage, "prompt_tokens");
      e.response.usage.completion_tokens = token_count(usage, "completion_tokens");
      e.response.usage.estimated = usage.value("estimated", false);
    }
    e.response.latency_ms = j.value("latency_ms", 0.0);
    if (j.contains("match")) e.match = j["match"].get<std::vector<std::string>>();
    e.reuse = j.value("reuse", false);
  } catch (const json::exception& ex) {
    throw llm_error(error_kind::bad_response, std::string("not a cassette entry: ") + ex.what());
  }
  return e;
}

std::vector<cassette_entry> read_cassette(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw llm_error(error_kind::config, "cannot read cassette " + path.string());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_cassette(text, path.string());
}

std::vector<cassette_entry> parse_cassette(std::string_view text, const std::string& origin) {
  std::vector<cassette_entry> out;
  std::size_t at = 0;
  for (int n = 1; at < text.size(); ++n) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw llm_error(error_kind::config, origin + ":" + std::to_string(n) + ": not a JSON object");
    if (j.contains("$source")) continue;
    try {
      out.push_back(entry_from_json(j));
    } catch (const llm_error& e) {
      throw llm_error(error_kind::config, origin + ":" + std::to_string(n) + ": " + e.what());
    }
  }
  return out;
}

cassette_writer::cassette_writer(const std::filesystem::path& path, std::shared_ptr<const redactor> redact,
                                 const std::string& source_note)
    : out_(path, std::ios::trunc), redact_(std::move(redact)) {
  if (!out_) throw llm_error(error_kind::config, "cannot write cassette " + path.string());
  out_ << json{{"$source", source_note}}.dump() << "\n";
  out_.flush();
}

void cassette_writer::append(const cassette_entry& e) {
  std::string line = entry_json(e).dump();
  if (redact_) line = (*redact_)(line);
  std::lock_guard lock(mutex_);
  out_ << line << "\n";
  out_.flush();
}

cassette_player::cassette_player(std::vector<cassette_entry> entries, replay_mode mode)
    : entries_(std::move(entries)), used_(entries_.size(), false), mode_(mode) {}

cassette_entry cassette_player::next(const chat_request& r) {
  std::lock_guard lock(mutex_);
  if (mode_ == replay_mode::in_order) {
    if (cursor_ >= entries_.size())
      throw llm_error(error_kind::replay_miss, "cassette exhausted: all " + std::to_string(entries_.size()) +
                                                   " answers were used, and " + r.agent_role + " asked again");
    const auto& e = entries_[cursor_];
    if (!e.role.empty() && !r.agent_role.empty() && e.role != r.agent_role)
      throw llm_error(error_kind::replay_miss, "cassette answer " + std::to_string(cursor_ + 1) + " is for " +
                                                   e.role + ", but " + r.agent_role + " asked");
    used_[cursor_] = true;
    return entries_[cursor_++];
  }
  if (mode_ == replay_mode::by_content) return next_by_content(r);
  const std::string fp = fingerprint(r);
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (!used_[i] && entries_[i].fingerprint == fp) {
      used_[i] = true;
      return entries_[i];
    }
  throw llm_error(error_kind::replay_miss, "no recorded answer for this " + r.agent_role + " request (fingerprint " +
                                               fp + ")");
}

replay_mode replay_mode_for(const std::vector<cassette_entry>& entries) {
  bool any_match = false, all_fingerprinted = !entries.empty();
  for (const auto& e : entries) {
    any_match = any_match || !e.match.empty();
    all_fingerprinted = all_fingerprinted && !e.fingerprint.empty();
  }
  return any_match ? replay_mode::by_content : all_fingerprinted ? replay_mode::by_fingerprint : replay_mode::in_order;
}

cassette_entry cassette_player::next_by_content(const chat_request& r) {
  std::string text = r.system;
  for (const auto& m : r.messages) text += "\n" + m.content;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if ((used_[i] && !e.reuse) || (!e.role.empty() && e.role != r.agent_role)) continue;
    bool all = true;
    for (const auto& m : e.match) all = all && text.find(m) != std::string::npos;
    if (!all) continue;
    used_[i] = true;
    return e;
  }
  throw llm_error(error_kind::replay_miss, "the answer book has no answer for this " + r.agent_role +
                                               " request (no entry of that role whose 'match' strings all occur in it)");
}

std::size_t cassette_player::remaining() const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (bool u : used_) n += u ? 0 : 1;
  return n;
}

}  // namespace kblaster::engine::llm
