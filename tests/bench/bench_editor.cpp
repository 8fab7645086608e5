// bench_editor: hover and code-action latency while an optimization runs in the same daemon,
// and the daemon's memory before, during and after the run.
//
//   bench_editor [--task DIR] [--recordings FILE] [--answer-book FILE] [--live] [--rounds N (3)] [--pace F (0.05)]
//
// Copies the task (default examples/tasks/vector_add) into a temporary workspace, starts
// `kblaster serve` with a fresh KB, opens the kernel and waits for its analysis, times hover
// and code actions on the kernel while idle, then starts kblaster.optimize (breadth 2, depth 2,
// iterations 2, seed 1; GPU results replayed from the recordings made on the GPU machine,
// model from the answer book, paced at F x the recorded GPU time so that the run lasts as a
// live one would, scaled; --live measures on this machine's GPU instead) and times the
// same requests, back to back, until the optimization answers. Prints p50/p99 and memory;
// the target (p99 < 10 ms while optimizing) is printed beside the figures, not asserted.
#include "protocol/json_rpc.h"
#include "tests/bench/lsp_daemon.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using kblaster::protocol::json;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

struct options {
  fs::path task = fs::path(KBLASTER_SOURCE_DIR) / "examples/tasks/vector_add";
  fs::path recordings;  // default: tests/optimize/recordings/loop-TASK.jsonl
  fs::path answer_book = fs::path(KBLASTER_SOURCE_DIR) / "tests/optimize/answer_book.jsonl";
  bool live = false;
  int rounds = 3;
  double pace = 0.05;  // a replay waits this fraction of the recorded GPU time (a live-like run)
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

void print_latency(const char* what, const std::vector<double>& ms) {
  std::printf("%-46s p50 %7.3f ms   p99 %7.3f ms   max %7.3f ms   (n=%zu)\n", what, percentile(ms, 0.5),
              percentile(ms, 0.99), percentile(ms, 1.0), ms.size());
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string file_uri(const fs::path& p) { return "file://" + p.string(); }

struct round_figures {
  std::vector<double> idle_hover, idle_action, busy_hover, busy_action;
  long rss_before = 0, rss_peak_during = 0, rss_after = 0, hwm = 0;
  double run_seconds = 0;
  json result;
};

round_figures run_round(const options& o, int round) {
  round_figures f;
  const json task_spec = json::parse(read_text(o.task / "task.json"));
  const std::string task_name = task_spec.value("name", o.task.filename().string());
  const fs::path workspace = fs::temp_directory_path() / ("kblaster-bench-editor-" + std::to_string(::getpid()) + "-" + std::to_string(round));
  fs::remove_all(workspace);
  fs::create_directories(workspace);
  fs::copy(o.task, workspace / task_name, fs::copy_options::recursive);
  const fs::path kernel_path = workspace / task_name / task_spec.at("kernel").get<std::string>();
  const std::string text = read_text(kernel_path);
  const std::string uri = file_uri(kernel_path);

  json settings = {{"knowledgeBase", (workspace / "kb.sqlite").string()},
                   {"analysis", {{"debounceMs", 0}}},
                   {"optimize", {{"breadth", 2}, {"depth", 2}, {"iterations", 2}, {"topK", 3}, {"policy", "weighted"}, {"seed", 1},
                                 {"outputDir", (workspace / "runs").string()}}},
                   {"llm", {{"replay", o.answer_book.string()}}}};
  if (!o.live) {
    settings["optimize"]["replayHarness"] = (o.recordings.empty() ? fs::path(KBLASTER_SOURCE_DIR) / "tests/optimize/recordings" /
                                                                        ("loop-" + task_name + ".jsonl")
                                                                  : o.recordings).string();
    settings["ncuPath"] = "/nonexistent/ncu";
    settings["optimize"]["replayPace"] = o.pace;
  }
  kblaster::bench::lsp_daemon daemon(KBLASTER_BINARY, {"--log-file", "/dev/null", "--log-level", "error"});
  int diagnostics = 0, progress = 0;
  daemon.on_notification([&](const json& m) {
    const auto method = m.value("method", "");
    if (method == "textDocument/publishDiagnostics") ++diagnostics;
    if (method == "$/progress") ++progress;
  });
  daemon.on_server_request([](const std::string& method, const json&) -> json {
    if (method == "workspace/applyEdit") return {{"applied", true}};  // as an editor would answer
    return nullptr;
  });
  const json caps = {{"window", {{"workDoneProgress", true}}},
                     {"workspace", {{"applyEdit", true}}},
                     {"textDocument", {{"codeAction", {{"disabledSupport", true}}}}}};
  daemon.call(0, "initialize", {{"processId", nullptr}, {"rootUri", file_uri(workspace)}, {"capabilities", caps},
                                // The editor trusts the workspace: Optimize runs its code.
                                {"initializationOptions", {{"kblaster", settings}, {"workspaceTrusted", true}}}});
  daemon.send(kblaster::protocol::make_notification("initialized", json::object()));
  daemon.send(kblaster::protocol::make_notification(
      "textDocument/didOpen", {{"textDocument", {{"uri", uri}, {"languageId", "cuda"}, {"version", 1}, {"text", text}}}}));
  // The analysis on open (nvcc): wait for its diagnostics so that hovers hit its result.
  const auto deadline = clock_type::now() + std::chrono::minutes(5);
  while (diagnostics == 0) {
    if (clock_type::now() > deadline) throw std::runtime_error("no diagnostics within 5 minutes of opening " + uri);
    daemon.call(1, "textDocument/documentSymbol", {{"textDocument", {{"uri", uri}}}});
    usleep(50000);
  }
  f.rss_before = daemon.rss_kib();

  // The kernel's name: the first __global__ definition.
  std::size_t at = text.find("__global__");
  const std::size_t paren = text.find('(', at);
  std::size_t name_end = paren;
  while (name_end > at && text[name_end - 1] == ' ') --name_end;
  std::size_t name_begin = name_end;
  while (name_begin > at && (std::isalnum(static_cast<unsigned char>(text[name_begin - 1])) || text[name_begin - 1] == '_')) --name_begin;
  const std::string kernel = text.substr(name_begin, name_end - name_begin);
  int line = 0, column = 0;
  for (std::size_t i = 0; i < name_begin; ++i) {
    if (text[i] == '\n') { ++line; column = 0; } else { ++column; }
  }
  const json hover = {{"textDocument", {{"uri", uri}}}, {"position", {{"line", line}, {"character", column + 1}}}};
  const json action = {{"textDocument", {{"uri", uri}}},
                       {"range", {{"start", {{"line", line}, {"character", column}}}, {"end", {{"line", line}, {"character", column}}}}},
                       {"context", {{"diagnostics", json::array()}}}};

  int id = 10;
  const auto timed = [&](const char* method, const json& params, std::vector<double>& out,
                         const std::function<void(const json&)>& other_reply = {}) {
    const auto start = clock_type::now();
    const json reply = daemon.call(id++, method, params, other_reply);
    out.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - start).count());
    if (!reply.contains("result") || reply["result"].is_null())
      throw std::runtime_error(std::string(method) + " on " + kernel + " found nothing: " + reply.dump().substr(0, 300));
  };
  for (int i = 0; i < 300; ++i) {
    timed("textDocument/hover", hover, f.idle_hover);
    timed("textDocument/codeAction", action, f.idle_action);
  }

  // The optimization, in the background of the same connection.
  const int optimize_id = 5;
  bool done = false;
  const auto started = clock_type::now();
  daemon.send(kblaster::protocol::make_request(
      optimize_id, "workspace/executeCommand",
      {{"command", "kblaster.optimize"}, {"arguments", json::array({{{"uri", uri}, {"kernel", kernel}}})}}));
  const auto on_other = [&](const json& m) {
    if (m.value("id", json()) == optimize_id) {
      done = true;
      f.result = m;
    }
  };
  while (!done) {
    timed("textDocument/hover", hover, f.busy_hover, on_other);
    f.rss_peak_during = std::max(f.rss_peak_during, daemon.rss_kib());
    if (done) break;
    timed("textDocument/codeAction", action, f.busy_action, on_other);
    f.rss_peak_during = std::max(f.rss_peak_during, daemon.rss_kib());
  }
  f.run_seconds = std::chrono::duration<double>(clock_type::now() - started).count();
  usleep(1000000);  // let the run's threads and buffers go
  f.rss_after = daemon.rss_kib();
  f.hwm = daemon.peak_rss_kib();
  if (progress == 0) std::fprintf(stderr, "bench_editor: no $/progress during the run\n");
  daemon.call(id++, "shutdown", nullptr);
  daemon.send(kblaster::protocol::make_notification("exit", nullptr));
  fs::remove_all(workspace);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_editor: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--task") o.task = value();
    else if (a == "--recordings") o.recordings = value();
    else if (a == "--answer-book") o.answer_book = value();
    else if (a == "--live") o.live = true;
    else if (a == "--rounds") o.rounds = std::max(1, std::atoi(value().c_str()));
    else if (a == "--pace") o.pace = std::atof(value().c_str());
    else {
      std::fprintf(stderr, "usage: bench_editor [--task DIR] [--recordings FILE] [--answer-book FILE] [--live] [--rounds N] [--pace F]\n");
      return 2;
    }
  }
  if (!fs::exists(o.task / "task.json")) {
    std::fprintf(stderr, "bench_editor: %s has no task.json\n", o.task.c_str());
    return 2;
  }
  round_figures all;
  try {
    for (int r = 0; r < o.rounds; ++r) {
      auto f = run_round(o, r);
      if (f.result.contains("error")) {
        std::fprintf(stderr, "bench_editor: kblaster.optimize failed: %s\n", f.result["error"].dump().c_str());
        return 1;
      }
      const json& res = f.result["result"];
      std::printf("round %d: optimization %.1f s, %d candidates, %.2fx, stopped %s%s\n", r + 1, f.run_seconds,
                  res.value("candidates", 0), res.value("bestSpeedup", 0.0), res.value("stopReason", "?").c_str(),
                  res.value("replayed", false) ? " (replayed GPU results)" : " (live)");
      all.idle_hover.insert(all.idle_hover.end(), f.idle_hover.begin(), f.idle_hover.end());
      all.idle_action.insert(all.idle_action.end(), f.idle_action.begin(), f.idle_action.end());
      all.busy_hover.insert(all.busy_hover.end(), f.busy_hover.begin(), f.busy_hover.end());
      all.busy_action.insert(all.busy_action.end(), f.busy_action.begin(), f.busy_action.end());
      all.rss_before = std::max(all.rss_before, f.rss_before);
      all.rss_peak_during = std::max(all.rss_peak_during, f.rss_peak_during);
      all.rss_after = std::max(all.rss_after, f.rss_after);
      all.hwm = std::max(all.hwm, f.hwm);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_editor: %s\n", e.what());
    return 1;
  }
  print_latency("hover, idle:", all.idle_hover);
  print_latency("code action, idle:", all.idle_action);
  print_latency("hover, optimizing (target p99 < 10 ms):", all.busy_hover);
  print_latency("code action, optimizing (target p99 < 10 ms):", all.busy_action);
  std::printf("daemon memory (worst round): %.1f MB before the run, %.1f MB at most during it (sampled after each request; "
              "peak RSS %.1f MB), %.1f MB 1 s after\n",
              all.rss_before / 1024.0, all.rss_peak_during / 1024.0, all.hwm / 1024.0, all.rss_after / 1024.0);
  return 0;
}
