// Reading the collector's timeline and running a program under it.
#include "engine/profile/program_timeline.h"

#include "engine/toolchain/ptxas_parser.h"
#include "support/child_process.h"
#include "support/files.h"
#include "support/run_process.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace kblaster::engine {

namespace {

std::array<int, 3> dims_of(const nlohmann::json& line, const char* key) {
  std::array<int, 3> out{};
  if (const auto at = line.find(key); at != line.end() && at->is_array())
    for (std::size_t i = 0; i < 3 && i < at->size(); ++i) out[i] = (*at)[i].get<int>();
  return out;
}

timeline_activity activity_of(const nlohmann::json& line, activity_kind kind) {
  timeline_activity a;
  a.kind = kind;
  a.start_ns = line.at("start").get<std::uint64_t>();
  a.end_ns = line.at("end").get<std::uint64_t>();
  a.device = line.value("device", 0u);
  a.stream = line.value("stream", 0u);
  a.correlation = line.value("correlation", 0u);
  a.bytes = line.value("bytes", std::uint64_t{0});
  if (kind == activity_kind::kernel) {
    a.mangled = line.value("mangled", "");
    a.name = line.value("name", a.mangled);
    a.function = function_name_of(a.name);
    a.grid = dims_of(line, "grid");
    a.block = dims_of(line, "block");
  }
  if (kind == activity_kind::memcpy) a.copy = line.value("copy", "");
  return a;
}

}  // namespace

program_timeline parse_timeline(const std::string& jsonl) {
  program_timeline out;
  std::istringstream lines(jsonl);
  std::size_t number = 0;
  for (std::string text; std::getline(lines, text);) {
    ++number;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const auto line = nlohmann::json::parse(text);
      const std::string kind = line.at("kind").get<std::string>();
      if (kind == "kernel") out.activities.push_back(activity_of(line, activity_kind::kernel));
      else if (kind == "memcpy") out.activities.push_back(activity_of(line, activity_kind::memcpy));
      else if (kind == "memset") out.activities.push_back(activity_of(line, activity_kind::memset));
      else if (kind == "end") {
        out.complete = true;
        out.dropped = line.value("dropped", std::uint64_t{0});
      }
    } catch (const nlohmann::json::exception& e) {
      // A program killed mid-write leaves a cut last line: what came before still stands.
      if (lines.peek() == std::char_traits<char>::eof() && !text.ends_with('}')) break;
      throw timeline_parse_error("timeline line " + std::to_string(number) + ": " + e.what());
    }
  }
  return out;
}

std::vector<std::string> timeline_warnings(const program_timeline& timeline) {
  std::vector<std::string> out;
  if (!timeline.complete)
    out.push_back("the program did not exit through exit() (a crash, a signal or _exit): GPU work not yet handed "
                  "back by CUPTI then is missing from the timeline");
  if (timeline.dropped > 0)
    out.push_back(std::to_string(timeline.dropped) + " activity records were dropped by CUPTI: the times are a lower bound");
  return out;
}

std::string find_timeline_collector() {
  return support::find_companion("KBLASTER_TIMELINE_COLLECTOR",
                                 {"cli/libkblaster_timeline.so", "libkblaster_timeline.so", "lib/libkblaster_timeline.so"},
                                 "libkblaster_timeline.so");
}

timeline_run run_under_timeline(const std::vector<std::string>& program, const timeline_run_options& options) {
  timeline_run out;
  const std::string collector = options.collector.empty() ? find_timeline_collector() : options.collector;
  std::error_code ec;
  if (collector.empty() || !fs::exists(collector, ec)) {
    out.error = "libkblaster_timeline.so was not found beside kblaster (built without CUPTI?; or set KBLASTER_TIMELINE_COLLECTOR)";
    return out;
  }
  fs::remove(options.output, ec);  // a file left by an earlier run must not pass for this one's
  std::vector<std::string> argv{"env", "CUDA_INJECTION64_PATH=" + fs::absolute(collector).string(),
                                "KBLASTER_TIMELINE_OUT=" + fs::absolute(options.output).string()};
  argv.insert(argv.end(), options.env.begin(), options.env.end());
  argv.insert(argv.end(), program.begin(), program.end());
  const auto ran = support::run_process(argv, options.timeout,
                                        options.cwd.empty() ? std::nullopt : std::optional<std::string>(options.cwd), options.stop);
  out.seconds = ran.seconds;
  out.program_output = ran.out + ran.err;
  if (out.program_output.size() > 4000) out.program_output = out.program_output.substr(out.program_output.size() - 4000);
  if (ran.cancelled) {
    out.error = "cancelled";
    return out;
  }
  if (!ran.ok()) {
    out.error = ran.timed_out ? "the program did not finish within " + std::to_string(options.timeout.count()) + " s"
                : ran.signal ? "the program was killed by signal " + std::to_string(ran.signal)
                             : "the program failed (exit code " + std::to_string(ran.exit_code) + ")";
    return out;
  }
  const auto text = support::read_file_if_exists(options.output);
  if (!text || text->empty()) {
    out.error = "the collector wrote no timeline: CUPTI (libcupti.so) could not be loaded, or the program never "
                "initialised CUDA";
    return out;
  }
  try {
    out.timeline = parse_timeline(*text);
  } catch (const timeline_parse_error& e) {
    out.error = e.what();
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace kblaster::engine
