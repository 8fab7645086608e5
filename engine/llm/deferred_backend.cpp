// The files:DIR provider: requests handed over as OpenAI batch input files, answers read from
// OpenAI batch output files.
#include "engine/llm/deferred_backend.h"
#include "engine/llm/batch_requests.h"
#include "engine/llm/batch_results.h"
#include "support/files.h"
#include "support/stop_wait.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <sstream>

namespace kblaster::engine::llm {

namespace fs = std::filesystem;

namespace {

// N of "requests-N.jsonl", or 0 for any other name.
int requests_index(const std::string& name) {
  constexpr std::string_view prefix = "requests-", suffix = ".jsonl";
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix)) return 0;
  const auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) || digits.size() > 6)
    return 0;
  return std::stoi(digits);
}

}  // namespace

bool await_answers(deferred_backend& backend, const hand_over_report& handed, double poll_seconds, std::stop_token stop) {
  if (handed.written == 0 && handed.awaiting == 0) return !stop.stop_requested();
  // Ctrl-C ends the pause between two looks at once.
  const auto every = std::chrono::duration_cast<support::wait_clock::duration>(std::chrono::duration<double>(poll_seconds));
  return !stop.stop_requested() && support::wait_until([&backend] { return backend.poll(); }, stop, every);
}

std::optional<deferred_spec> parse_deferred(const std::string& spec) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos || colon + 1 == spec.size()) return std::nullopt;
  const auto kind = spec.substr(0, colon);
  if (kind != "files" && kind != "openai" && kind != "anthropic") return std::nullopt;
  return deferred_spec{kind, fs::path(spec.substr(colon + 1))};
}

files_backend::files_backend(llm_config config, fs::path dir, int max_resubmits, log_sink log, std::unique_ptr<batch_service> service)
    : config_(std::move(config)), dir_(std::move(dir)), max_resubmits_(max_resubmits), log_(std::move(log)), service_(std::move(service)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_)) throw llm_error(error_kind::config, "files provider: cannot create the folder " + dir_.string());
  const std::lock_guard lock(mutex_);
  scan();
}

void files_backend::scan() {
  collect();
  std::vector<fs::path> requests, results;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (!e.is_regular_file()) continue;
    const auto name = e.path().filename().string();
    if (requests_index(name) > 0) requests.push_back(e.path());
    else if (name.ends_with(".results.jsonl") || name.ends_with(".results.anthropic.jsonl")) results.push_back(e.path());
  }
  std::sort(results.begin(), results.end());
  submitted_.clear();
  requests_files_ = 0;
  for (const auto& file : requests) {
    requests_files_ = std::max(requests_files_, requests_index(file.filename().string()));
    std::istringstream in(support::read_file(file));
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("custom_id") && j["custom_id"].is_string()) ++submitted_[j["custom_id"].get<std::string>()];
    }
  }
  std::set<std::string> sent;
  for (const auto& [id, n] : submitted_) sent.insert(id);
  answers_.clear();
  for (const auto& file : results) {
    const auto text = support::read_file(file);
    const auto reading = file.filename().string().ends_with(".results.anthropic.jsonl") ? read_anthropic_batch_results(text, sent)
                                                                                      : read_openai_batch_results(text, sent);
    for (const auto& [id, a] : reading.answers) {
      auto& slot = answers_[id];
      if (a.outcome == batch_outcome::succeeded && a.response) {
        if (!slot.success) slot.success = a.response;
      } else {
        ++slot.failures;
        slot.last_error = std::string(to_string(a.outcome)) + ": " + a.error;
        slot.refused = slot.refused || (a.error.starts_with("HTTP 4") && !a.error.starts_with("HTTP 429"));
      }
    }
    // Said once per version of a file: what in it is no answer to this run.
    const auto seen = file.filename().string() + ":" + std::to_string(text.size());
    if (log_ && results_seen_.insert(seen).second) {
      if (!reading.unknown_ids.empty())
        log_(file.filename().string() + ": " + std::to_string(reading.unknown_ids.size()) +
             " answer(s) to requests this run did not send, ignored (first: " + reading.unknown_ids.front() + ")");
      for (const auto& u : reading.unreadable) log_(file.filename().string() + ": " + u + ", ignored");
    }
  }
}

void files_backend::collect() {
  if (!service_) return;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const auto name = e.path().filename().string();
    if (!name.ends_with(".job.json")) continue;
    const auto stem = name.substr(0, name.size() - std::string(".job.json").size());  // requests-N
    const auto results = dir_ / (stem + service_->results_suffix());
    if (fs::exists(results)) continue;
    auto record = nlohmann::json::parse(support::read_file(e.path()), nullptr, false);
    if (!record.is_object()) continue;
    std::optional<std::string> text;
    try {
      text = service_->collect(record);
    } catch (const llm_error& x) {
      if (log_) log_(std::string("batch ") + record.value("id", "?") + ": " + x.what() + " (looked at again next time)");
      continue;
    }
    support::write_file_atomically(e.path(), record.dump(2) + "\n");
    if (!text) continue;
    // Every request of the job that came back without an answer is written as expired, so that it
    // is asked again (or, past the limit, fails) instead of waiting for a job that has ended.
    std::set<std::string> answered;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("custom_id") && j["custom_id"].is_string()) answered.insert(j["custom_id"].get<std::string>());
    }
    const bool anthropic = service_->results_suffix() == ".results.anthropic.jsonl";
    const auto status = record.value("status", std::string("ended"));
    for (const auto& id : record.value("custom_ids", std::vector<std::string>{})) {
      if (answered.count(id)) continue;
      const nlohmann::json expired =
          anthropic ? nlohmann::json{{"custom_id", id}, {"result", {{"type", "expired"}}}}
                    : nlohmann::json{{"custom_id", id},
                                     {"response", nullptr},
                                     {"error", {{"code", "batch_expired"}, {"message", "no answer when the batch ended (" + status + ")"}}}};
      *text += expired.dump() + "\n";
    }
    support::write_file_atomically(results, *text);
  }
}

int files_backend::cancel_jobs() {
  const std::lock_guard lock(mutex_);
  if (!service_) return 0;
  int cancelled = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    const auto name = e.path().filename().string();
    if (!name.ends_with(".job.json")) continue;
    const auto stem = name.substr(0, name.size() - std::string(".job.json").size());
    if (fs::exists(dir_ / (stem + service_->results_suffix()))) continue;  // ended and collected
    auto record = nlohmann::json::parse(support::read_file(e.path()), nullptr, false);
    if (!record.is_object()) continue;
    service_->cancel(record);
    support::write_file_atomically(e.path(), record.dump(2) + "\n");
    ++cancelled;
  }
  return cancelled;
}

chat_response files_backend::send(const chat_request& r) {
  const auto id = batch_custom_id(config_, r);
  const std::lock_guard lock(mutex_);
  const auto a = answers_.find(id);
  if (a != answers_.end() && a->second.success) {
    waiting_.erase(id);
    return *a->second.success;
  }
  const int submissions = submitted_.count(id) ? submitted_.at(id) : 0;
  const int failures = a == answers_.end() ? 0 : a->second.failures;
  if (a != answers_.end() && a->second.refused) {
    waiting_.erase(id);
    throw llm_error(error_kind::http, "the " + r.agent_role + " request " + id + " was refused in " + dir_.string() + " (" +
                                          a->second.last_error + "); it counts as the model's failure");
  }
  if (submissions > 0 && failures >= submissions && submissions > max_resubmits_) {
    waiting_.erase(id);
    throw llm_error(error_kind::http, "the " + r.agent_role + " request " + id + " was answered with an error " +
                                          std::to_string(failures) + " time(s) in " + dir_.string() + " (" + a->second.last_error +
                                          "); it counts as the model's failure");
  }
  waiting_.emplace(id, r);
  throw answer_pending("the " + r.agent_role + " request " + id + " waits for its answer in " + dir_.string());
}

hand_over_report files_backend::hand_over() {
  const std::lock_guard lock(mutex_);
  scan();
  hand_over_report out;
  std::vector<chat_request> batch;
  for (const auto& [id, r] : waiting_) {
    const auto a = answers_.find(id);
    if (a != answers_.end() && (a->second.success || a->second.refused)) continue;  // answered since it was asked
    const int submissions = submitted_.count(id) ? submitted_.at(id) : 0;
    const int failures = a == answers_.end() ? 0 : a->second.failures;
    if (submissions == 0 || failures >= submissions) batch.push_back(r);  // never sent, or every sending failed: (again)
    else ++out.awaiting;
  }
  if (!batch.empty()) {
    const auto lines = openai_batch_lines(config_, batch);
    std::string text;
    for (const auto& l : lines) text += l.dump() + "\n";
    const auto stem = "requests-" + std::to_string(requests_files_ + 1);
    const auto file = dir_ / (stem + ".jsonl");
    std::string job;
    if (service_) {
      // Submitted first: a requests file is the record of what was handed over, so it is
      // written only once the provider has the job (a failed submission leaves nothing behind).
      const auto record = service_->submit(batch);
      job = record.value("id", "");
      support::write_file_atomically(dir_ / (stem + ".job.json"), record.dump(2) + "\n");
    }
    support::write_file_atomically(file, text);
    ++requests_files_;
    for (const auto& l : lines) ++submitted_[l["custom_id"].get<std::string>()];
    out.written = static_cast<int>(lines.size());
    out.where = service_ ? job + " (" + service_->describe() + ", its requests kept in " + file.string() + ")" : file.string();
  }
  std::ostringstream d;
  if (out.written) d << out.written << (service_ ? " request(s) submitted as batch " : " request(s) written to ") << out.where
                     << (service_ ? "" : " (OpenAI batch input format)");
  if (out.awaiting) d << (out.written ? "; " : "") << out.awaiting << " handed over earlier still unanswered";
  if ((out.written || out.awaiting) && !service_)
    d << "; answers go in " << (dir_ / "NAME.results.jsonl").string() << " (OpenAI batch output format)";
  if (!out.written && !out.awaiting) d << "every request waiting was answered while the batch folder was read";
  out.description = d.str();
  return out;
}

bool files_backend::poll() {
  const std::lock_guard lock(mutex_);
  const auto before = answers_.size();
  std::size_t before_successes = 0, after_successes = 0;
  int before_failures = 0, after_failures = 0;
  for (const auto& [id, a] : answers_) before_successes += a.success.has_value(), before_failures += a.failures;
  scan();
  for (const auto& [id, a] : answers_) after_successes += a.success.has_value(), after_failures += a.failures;
  return answers_.size() != before || after_successes != before_successes || after_failures != before_failures;
}

std::string files_backend::describe() const {
  if (service_) return service_->describe() + " (deferred: batches recorded in " + dir_.string() + "), model " + config_.model;
  return "files " + dir_.string() + " (deferred: requests written as OpenAI batch input, answers read from *.results.jsonl), model " +
         config_.model;
}

}  // namespace kblaster::engine::llm
