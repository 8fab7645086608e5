// harness_check: runs kblaster-harness through the engine's harness_client over every example
// task (must pass), every adversarial candidate (must be rejected with the check its file names
// in a `kblaster-expect:` line) and every isolation candidate (the harness dies, the client
// reports how and starts a fresh one), and every memoising candidate (memo/: never measured
// faster than the honest kernel it names). --device cpu uses the .cpp host-code versions (CI);
// --device cuda the .cu versions (the GPU machine). --bench N prints candidates evaluated per
// minute (fresh compile, verify, time) over the examples. The escape candidates (escape/*.cpp,
// host code that never touches its tensors, so the same files serve both devices) each try one
// way out of the sandbox; harness_check plants what they look for (API keys in its environment,
// a secret under ~/.config, listeners on loopback and on a Unix socket) and checks from outside
// that nothing got out and that it, the engine, lives on. Exit status: the number of failures.
#include "engine/evaluate/harness_client.h"
#include "engine/task/task.h"
#include "engine/toolchain/task_build.h"
#include "support/files.h"
#include "support/sandbox.h"
#include "support/untrusted_text.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace kblaster::engine;

namespace {

struct options {
  std::string harness, root, device = "cpu", cache, only, json_out, bench_task;
  double watchdog_s = 10, max_seconds = 0.3;
  int bench = 0;
};

struct checker {
  options opt;
  std::unique_ptr<nvcc_driver> nvcc;
  std::unique_ptr<harness_client> client;
  int failures = 0;
  nlohmann::json log = nlohmann::json::array();

  std::string ext() const { return opt.device == "cpu" ? ".cpp" : ".cu"; }

  candidate_build build(const std::string& src, bool use_cache = true) {
    if (is_host_source(src)) return build_host_candidate(src, opt.cache, use_cache, {});
    if (!nvcc) {
      const auto path = find_nvcc();
      if (!path) return {false, false, "", "nvcc not found", {}, 0};
      nvcc = std::make_unique<nvcc_driver>(*path, opt.cache, 4);
    }
    return build_candidate(src, "", *nvcc, use_cache, {});
  }

  // `screening` off: for candidates that test what stands behind the static screening.
  // `reference_library`: the built reference for a task whose reference is a kernel.
  nlohmann::json evaluate(const task_spec& task, const std::string& library, bool screening = true,
                          std::optional<double> slower_than_ms = std::nullopt, const std::string& reference_library = "") {
    nlohmann::json timing{{"max_seconds", opt.max_seconds}};
    if (slower_than_ms) timing["slower_than_ms"] = *slower_than_ms;
    nlohmann::json req{{"op", "evaluate"}, {"task", to_json(task)}, {"candidate", library},
                       {"timing", timing}, {"screening", screening}};
    if (!reference_library.empty()) req["reference_library"] = reference_library;
    return client->request(req, {}).to_json();
  }

  void record(const std::string& section, const std::string& name, bool ok, const std::string& detail,
              const nlohmann::json& reply) {
    if (!ok) ++failures;
    std::cout << (ok ? "  ok    " : "  FAIL  ") << std::left << std::setw(34) << name << std::right << " " << detail << "\n";
    log.push_back({{"section", section}, {"name", name}, {"ok", ok}, {"detail", detail}, {"reply", reply}});
  }

  static std::string tag(const std::string& text, const std::string& key) {
    const std::regex re("// " + key + ": *([A-Za-z0-9_]+)");
    std::smatch m;
    return std::regex_search(text, m, re) ? m[1].str() : "";
  }

  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::vector<fs::path> files(const fs::path& dir) const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ext()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  task_spec task_named(const std::string& name) {
    for (const auto* base : {"examples/tasks/", "tests/harness/tasks/"}) {
      const auto p = fs::path(opt.root) / base / name;
      if (fs::exists(p / "task.json")) return load_task(p.string());
    }
    throw task_error("no task named " + name);
  }

  /// Processes that have `library` mapped now (/proc/PID/maps): a candidate still loaded somewhere.
  static int processes_mapping(const std::string& library) {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      const auto name = e.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream maps(e.path() / "maps");
      for (std::string line; std::getline(maps, line);)
        if (line.find(library) != std::string::npos) {
          ++n;
          break;
        }
    }
    return n;
  }
  std::string source_of(const task_spec& t) const { return opt.device == "cpu" ? t.cpu_kernel : t.kernel; }

  static std::string figures(const nlohmann::json& r) {
    std::ostringstream s;
    s << std::setprecision(3);
    double max_abs = 0;
    for (const auto& seed : r.value("seeds", nlohmann::json::array()))
      for (const auto& o : seed.value("outputs", nlohmann::json::array())) max_abs = std::max(max_abs, o.value("max_abs_error", 0.0));
    s << "max abs err " << max_abs;
    if (r.contains("timing")) {
      const auto& t = r["timing"];
      s << std::fixed << "  cand " << t["candidate"].value("median_ms", 0.0) << " ms (IQR "
        << t["candidate"].value("iqr_ms", 0.0) << ", n=" << t["candidate"].value("samples", 0) << ")  ref "
        << t["reference"].value("median_ms", 0.0) << " ms  speedup " << t.value("speedup", 0.0) << "x";
    }
    return s.str();
  }

  void examples() {
    std::cout << "examples (" << opt.device << "): each must verify and be timed\n";
    for (const auto& e : fs::directory_iterator(fs::path(opt.root) / "examples/tasks")) {
      if (!fs::exists(e.path() / "task.json")) continue;
      const auto task = load_task(e.path().string());
      const auto b = build(source_of(task));
      if (!b.ok) {
        record("examples", task.name, false, "does not build: " + b.log.substr(0, 300), {});
        continue;
      }
      const auto r = evaluate(task, b.library);
      record("examples", task.name, r.value("verdict", "") == "pass" && r.contains("timing"),
             r.value("verdict", "") == "pass" ? figures(r) : r.dump(), r);
    }
  }

  // Legitimate fast candidates (tiled GEMM, shuffle reductions, fast-math): each must pass with
  // its speedup, stress inputs included; a harness that refused everything would prove nothing.
  void controls() {
    std::cout << "controls (" << opt.device << "): legitimate fast candidates, each must pass\n";
    for (const auto& f : files(fs::path(opt.root) / "tests/harness/controls")) {
      const auto task = task_named(tag(read(f), "kblaster-task"));
      const auto b = build(f.string());
      if (!b.ok) {
        record("controls", f.filename().string(), false, "does not build: " + b.log.substr(0, 300), {});
        continue;
      }
      const auto r = evaluate(task, b.library);
      const bool ok = r.value("verdict", "") == "pass" && r.contains("timing");
      record("controls", f.filename().string(), ok, ok ? figures(r) : r.dump().substr(0, 400), r);
    }
  }

  // Timing against the time a candidate must beat: one far below the candidate's own median stops
  // its timing after two samples and leaves the reference untimed; one far above changes nothing.
  void timing() {
    std::cout << "timing (" << opt.device << "): a candidate clearly slower than the time to beat stops early\n";
    const auto task = task_named("square_matmul");
    const auto b = build(source_of(task));
    if (!b.ok) {
      record("timing", "build", false, "square_matmul does not build: " + b.log.substr(0, 300), {});
      return;
    }
    const auto plain = evaluate(task, b.library);
    const double median = plain.contains("timing") ? plain["timing"]["candidate"].value("median_ms", 0.0) : 0.0;
    if (plain.value("verdict", "") != "pass" || median <= 0) {
      record("timing", "plain", false, plain.dump().substr(0, 400), plain);
      return;
    }
    const auto slow = evaluate(task, b.library, true, median / 8);
    const auto& sc = slow["timing"]["candidate"];
    const bool stopped = slow.value("verdict", "") == "pass" && sc.value("stopped_slower", false) &&
                         sc.value("samples", 0) == 2 && !slow["timing"].contains("reference") &&
                         !plain["timing"]["candidate"].value("stopped_slower", true);
    record("timing", "beat " + std::to_string(median / 8) + " ms", stopped,
           "n=" + std::to_string(sc.value("samples", 0)) + " (without a bound: n=" +
               std::to_string(plain["timing"]["candidate"].value("samples", 0)) + "), " + sc.value("note", ""),
           slow);
    const auto fast = evaluate(task, b.library, true, median * 8);
    const bool full = fast.value("verdict", "") == "pass" && !fast["timing"]["candidate"].value("stopped_slower", true) &&
                      fast["timing"].contains("reference");
    record("timing", "beat " + std::to_string(median * 8) + " ms", full, full ? figures(fast) : fast.dump().substr(0, 400), fast);
  }

  void adversarial() {
    std::cout << "adversarial candidates (" << opt.device << "): each must be rejected with its check\n";
    for (const auto& f : files(fs::path(opt.root) / "tests/harness/adversarial")) {
      const auto text = read(f);
      const auto expect = tag(text, "kblaster-expect");
      const auto task = task_named(tag(text, "kblaster-task"));
      const auto b = build(f.string());
      if (!b.ok) {
        record("adversarial", f.filename().string(), false, "does not build: " + b.log.substr(0, 300), {});
        continue;
      }
      // A candidate written to exercise a dynamic check (a thread, a side stream) says so with
      // `kblaster-screening: off`; the screening would refuse it before that check ran.
      const auto r = evaluate(task, b.library, tag(text, "kblaster-screening") != "off");
      const std::string verdict = r.value("verdict", ""), check = r.value("check", "");
      bool ok = verdict != "pass" && check == expect;
      if (ok && expect == "screening") {
        // The refusal must name the rule the file says it breaks.
        ok = r.value("reason", "").find("(rule " + tag(text, "kblaster-rule") + ")") != std::string::npos;
      }
      if (ok && expect == "tolerance") {
        // The reply must name the first mismatching element (the candidate spoils index 12345).
        ok = r.dump().find("\"first_mismatch\":12345") != std::string::npos;
      }
      record("adversarial", f.filename().string(), ok,
             verdict + " (" + check + "): " + r.value("reason", "").substr(0, 160) + (ok ? "" : "  [expected " + expect + "]"), r);
    }
  }

  // Candidates that remember answers (memo/): whatever they try, none may be measured faster
  // than the honest kernel its file names (`kblaster-honest:`); refused is fine too. Inputs
  // rotated between timed calls let a full reduction replay its answer at several times the
  // honest speed; inputs drawn afresh for every call leave such a candidate no shortcut.
  void memo() {
    std::cout << "memoisation (" << opt.device << "): never measured faster than the honest kernel\n";
    for (const auto& f : files(fs::path(opt.root) / "tests/harness/memo")) {
      const auto text = read(f);
      const auto task = task_named(tag(text, "kblaster-task"));
      const std::regex honest_re("// kblaster-honest: *(\\S+)");
      std::smatch m;
      if (!std::regex_search(text, m, honest_re)) {
        record("memo", f.filename().string(), false, "names no honest kernel (kblaster-honest:)", {});
        continue;
      }
      const auto b = build(f.string());
      const auto h = build((fs::path(opt.root) / m[1].str()).string());
      if (!b.ok || !h.ok) {
        record("memo", f.filename().string(), false, "does not build: " + (b.ok ? h.log : b.log).substr(0, 300), {});
        continue;
      }
      const auto honest = evaluate(task, h.library);
      const auto r = evaluate(task, b.library);
      const auto median = [](const nlohmann::json& reply) {
        return reply.contains("timing") ? reply["timing"]["candidate"].value("median_ms", 0.0) : 0.0;
      };
      const double honest_ms = median(honest), ms = median(r);
      const bool refused = r.value("verdict", "") != "pass" && r.value("verdict", "") != "needs_review";
      // Half the honest time: a replayed answer skips the whole reduction (4.1x on an H200, far
      // more on the CPU), while two honest measurements on a CPU shared with other tests differ
      // by up to 2x.
      const bool ok = honest.value("verdict", "") == "pass" && honest_ms > 0 && (refused || ms >= 0.5 * honest_ms);
      std::ostringstream d;
      d << std::setprecision(4) << r.value("verdict", "") << " " << r.value("check", "") << ": " << ms << " ms a call, the honest kernel "
        << honest_ms << " ms (" << honest.value("verdict", "") << " " << honest.value("check", "") << ")";
      record("memo", f.filename().string(), ok, d.str(), r);
    }
  }

  // A kernel that is its own reference and updates memory in place, as a captured program's is:
  // it must verify and read 1.00x (the original timed in a runner of its own, exactly as the
  // candidate, the reply saying "kernel"); the harness starts its output from its input before
  // every call (the honest in-place update passes), and a rewrite that loses the update fails.
  void original() {
    std::cout << "original (" << opt.device << "): a kernel against itself, updating memory in place\n";
    const auto task = task_named("in_place_original");
    const auto dir = fs::path(task.kernel).parent_path();
    const auto same = build(source_of(task));
    const auto wrong = build((dir / ("overwrites" + ext())).string());
    // The reference is built apart, as the engine builds it (the same source: the same code).
    const auto ref = build(opt.device == "cpu" ? task.reference.cpu_path : task.reference.path, /*use_cache=*/false);
    if (!same.ok || !wrong.ok || !ref.ok) {
      record("original", "builds", false, "does not build: " + (!same.ok ? same.log : !wrong.ok ? wrong.log : ref.log).substr(0, 300), {});
      return;
    }
    const auto r = evaluate(task, same.library, true, std::nullopt, ref.library);
    const double x = r.contains("timing") ? r["timing"].value("speedup", 0.0) : 0.0;
    // The CPU shares its two cores with other tests: only a wide band there.
    const double band = opt.device == "cpu" ? 0.5 : 0.03;
    const bool ok = r.value("verdict", "") == "pass" && r["timing"].value("reference_kind", "") == "kernel" &&
                    r["timing"].value("method", "").find("original kernel in a runner of its own") != std::string::npos &&
                    x > 1 - band && x < 1 + band;
    record("original", "unchanged kernel", ok, ok ? figures(r) : r.dump().substr(0, 400), r);
    const auto w = evaluate(task, wrong.library, true, std::nullopt, ref.library);
    const bool refused = w.value("verdict", "") == "fail" && w.value("check", "") == "tolerance";
    record("original", "the in-place update lost", refused,
           w.value("verdict", "") + " (" + w.value("check", "") + "): " + w.value("reason", "").substr(0, 160), w);
  }

  // The profile request: the harness starts a runner under the command the engine gives (ncu on
  // a GPU). Here the command is a stand-in that records its command line as the "report" and runs
  // the runner it was given, so that the exchange (a runner that connects back, its warm-up and
  // profiled calls, ncu's exit and log in the reply) is checked without a GPU; the GPU tests
  // (harness_evaluator_gpu_test) do the same under the real ncu.
  void profile() {
    std::cout << "profile (" << opt.device << "): a runner started under a wrapper, as under ncu\n";
    const auto task = task_named("vector_add");
    const auto good = build(source_of(task));
    // A candidate that kills its runner: a segfault on the CPU, an illegal address on a GPU.
    const auto crash_file = fs::path(opt.root) / "tests/harness/isolation" / (opt.device == "cpu" ? "crash.cpp" : "illegal_access.cu");
    const auto crash_expect = tag(read(crash_file), "kblaster-expect");
    const auto crash = build(crash_file.string());
    if (!good.ok || !crash.ok) {
      record("profile", "builds", false, "the candidates do not build", {});
      return;
    }
    // ncu's stand-ins: `-o BASE`, then the program they wrap; `body` runs it and writes BASE.ncu-rep.
    auto stand_in = [&](const std::string& name, const std::string& what, const std::string& body) {
      const auto path = fs::path(opt.cache) / name;
      std::ofstream(path) << "#!/bin/sh\n# " << what << "\n[ \"$1\" = -o ] || exit 64\nbase=$2; shift 2\n" << body;
      fs::permissions(path, fs::perms::owner_all);
      return path;
    };
    const auto wrapper = stand_in("stand_in_ncu.sh", "ncu's stand-in: its command line as the report, then the program it wraps.",
                                  "printf '%s\\n' \"$@\" > \"$base.ncu-rep\"\n"
                                  "echo '==PROF== stand-in profiling'\n"
                                  "exec \"$@\"\n");
    auto profile_with = [&](const std::vector<std::string>& command, const std::string& library,
                            const std::vector<std::string>& next = {}) {
      nlohmann::json req{{"op", "profile"}, {"task", to_json(task)}, {"candidate", library}, {"ncu", command},
                         {"deadline_ms", 30000}};
      if (!next.empty()) req["next_ncu"] = next;
      return client->request(req, {}).to_json();
    };
    // The report goes where the running harness may write: its scratch folder.
    auto report_base = [&](const std::string& name) {
      client->request({{"op", "ping"}}, {});
      return (client->scratch() / name).string();
    };
    const auto base = report_base("check-profile");
    const auto r = profile_with({wrapper.string(), "-o", base}, good.library);
    const auto report = read(base + ".ncu-rep");
    const auto ncu = r.value("ncu", nlohmann::json::object());
    const bool ok = r.value("verdict", "") == "pass" && ncu.value("exit_code", -1) == 0 &&
                    ncu.value("log", "").find("==PROF== stand-in") != std::string::npos &&
                    report.find("kblaster-runner") != std::string::npos && report.find("--connect") != std::string::npos;
    record("profile", "vector_add under the stand-in", ok, ok ? "runner connected, called, ncu exited 0" : r.dump().substr(0, 400), r);

    // The next profile under the same command finds its runner started ahead (as the first one
    // ended), and its report where it asked for it.
    const auto base2 = report_base("check-profile-2");
    const auto r2 = profile_with({wrapper.string(), "-o", base2}, good.library);
    const auto report2 = read(base2 + ".ncu-rep");
    const bool ahead_ok = r2.value("verdict", "") == "pass" && r2["ncu"].value("started_ahead", false) &&
                          !ncu.value("started_ahead", true) && report2.find("--connect") != std::string::npos;
    record("profile", "the next runner, started ahead", ahead_ok,
           ahead_ok ? "started ahead, its report moved to the requested path" : r2.dump().substr(0, 400), r2);

    const auto c = profile_with({wrapper.string(), "-o", report_base("check-profile-crash")}, crash.library);
    const auto after = evaluate(task, good.library);
    const auto c_ncu = c.value("ncu", nlohmann::json::object());
    const bool crash_ok = c.value("verdict", "") == "error" && c.value("check", "") == crash_expect &&
                          (c_ncu.contains("exit_code") || c_ncu.contains("signal")) &&
                          after.value("verdict", "") == "pass";
    record("profile", crash_file.filename().string() + " under the stand-in", crash_ok,
           crash_ok ? crash_expect + " reported with ncu's exit; the harness goes on" : c.dump().substr(0, 300) + " then " + after.dump().substr(0, 300), c);

    // After a failed profile nothing is started ahead; 'next_ncu' names the command to start
    // ahead, and a request under another command does not use it.
    const auto other = fs::path(opt.cache) / "stand_in_ncu_other.sh";
    fs::copy_file(wrapper, other, fs::copy_options::overwrite_existing);
    const auto r4 = profile_with({wrapper.string(), "-o", report_base("check-profile-4")}, good.library,
                                 {other.string(), "-o", "unused"});
    const auto r5 = profile_with({other.string(), "-o", report_base("check-profile-5")}, good.library);
    const auto r6 = profile_with({wrapper.string(), "-o", report_base("check-profile-6")}, good.library);
    const auto ahead = [](const nlohmann::json& x) { return x.value("ncu", nlohmann::json::object()).value("started_ahead", false); };
    const bool next_ok = c_ncu.value("started_ahead", false) && !ahead(r4) && ahead(r5) && !ahead(r6) &&
                         r4.value("verdict", "") == "pass" && r5.value("verdict", "") == "pass" && r6.value("verdict", "") == "pass";
    record("profile", "what is started ahead, and when", next_ok,
           next_ok ? "the crash used the runner started ahead and left none; next_ncu's command was started ahead, and not used for another"
                   : std::string("started ahead: crash ") + (ahead(c) ? "yes" : "no") + ", after it " + (ahead(r4) ? "yes" : "no") +
                         ", next_ncu's command " + (ahead(r5) ? "yes" : "no") + ", another " + (ahead(r6) ? "yes" : "no") +
                         "; verdicts " + r4.value("verdict", "") + " " + r5.value("verdict", "") + " " + r6.value("verdict", ""),
           r5);

    // report_later: the reply comes once the runner is gone, before the wrapper has written its
    // report (this one takes a second after its program, as ncu takes 0.2 s on an H100); the
    // report, the wrapper's exit and log come with profile_report.
    const auto slow = stand_in("stand_in_ncu_slow.sh", "ncu's stand-in that writes its report a second after its program ends.",
                               "echo '==PROF== slow stand-in'\n"
                               "\"$@\"; rc=$?\n"
                               "sleep 1\n"
                               "printf '%s\\n' \"$@\" > \"$base.ncu-rep\"\n"
                               "exit $rc\n");
    const auto slow_base = report_base("check-profile-later");
    nlohmann::json later_req{{"op", "profile"},  {"task", to_json(task)},          {"candidate", good.library},
                             {"ncu", std::vector<std::string>{slow.string(), "-o", slow_base}},
                             {"report_later", true}, {"deadline_ms", 30000}};
    const auto l0 = std::chrono::steady_clock::now();
    const auto later = client->request(later_req, {}).to_json();
    const double replied_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - l0).count();
    const bool report_absent = !fs::exists(slow_base + ".ncu-rep");
    const auto l1 = std::chrono::steady_clock::now();
    const auto delivered = client->request({{"op", "profile_report"}}, {}).to_json();
    const double delivered_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - l1).count();
    const auto later_ncu = delivered.value("ncu", nlohmann::json::object());
    const bool later_ok = later.value("verdict", "") == "pass" && later.value("report", "") == "pending" &&
                          !later.contains("ncu") && report_absent && delivered.value("verdict", "") == "pass" &&
                          later_ncu.value("exit_code", -1) == 0 &&
                          later_ncu.value("log", "").find("==PROF== slow stand-in") != std::string::npos &&
                          read(slow_base + ".ncu-rep").find("--connect") != std::string::npos && delivered_after > 0.5;
    std::ostringstream ld;
    ld << std::fixed << std::setprecision(2) << "the reply after " << replied_after << " s with the report "
       << (report_absent ? "not yet written" : "already there") << "; profile_report after " << delivered_after << " s more";
    record("profile", "the reply before ncu's report (report_later)", later_ok,
           later_ok ? ld.str() : ld.str() + ": " + later.dump().substr(0, 300) + " then " + delivered.dump().substr(0, 300),
           delivered);
    // One nobody asks the report of is finished before the next request; a profile_report with
    // nothing pending is an error, not a hang.
    const auto base_unasked = report_base("check-profile-unasked");
    later_req["ncu"] = std::vector<std::string>{slow.string(), "-o", base_unasked};
    const auto unasked = client->request(later_req, {}).to_json();
    const auto next_eval = evaluate(task, good.library);
    const bool unasked_written = fs::exists(base_unasked + ".ncu-rep");
    const auto stray = client->request({{"op", "profile_report"}}, {}).to_json();
    const bool unasked_ok = unasked.value("report", "") == "pending" && next_eval.value("verdict", "") == "pass" &&
                            unasked_written && stray.value("verdict", "") == "error" &&
                            stray.value("reason", "").find("no profile is waiting") != std::string::npos;
    record("profile", "a report nobody asked for", unasked_ok,
           unasked_ok ? "written before the next request ran; profile_report with none pending: " + stray.value("reason", "")
                      : unasked.dump().substr(0, 200) + " then " + next_eval.dump().substr(0, 200) + " then " +
                            stray.dump().substr(0, 200),
           stray);

    // A runner that closes its socket at its exit and stays: no reply before it has ended (it is
    // killed at the request's deadline), and nothing left running. Host code: the CPU path only.
    if (opt.device == "cpu") {
      const auto stays = build((fs::path(opt.root) / "tests/harness/profiled/outlives_its_socket.cpp").string());
      nlohmann::json stay_req = later_req;
      stay_req["candidate"] = stays.library;
      stay_req["ncu"] = std::vector<std::string>{wrapper.string(), "-o", report_base("check-profile-stays")};
      stay_req["deadline_ms"] = 3000;
      stay_req["screening"] = false;  // close() is refused by the screening: this tests the layer behind it
      const auto s0 = std::chrono::steady_clock::now();
      const auto stayed = client->request(stay_req, {}).to_json();
      const double stay_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
      const int left_running = processes_mapping(stays.library);
      const auto after_stay = evaluate(task, good.library);
      const auto stay_ncu = stayed.value("ncu", nlohmann::json::object());
      const bool stay_ok = stays.ok && !stayed.contains("report") && stay_ncu.value("timed_out", false) &&
                           stay_secs > 2.5 && left_running == 0 && after_stay.value("verdict", "") == "pass";
      std::ostringstream sd;
      sd << std::fixed << std::setprecision(1) << "replied after " << stay_secs << " s (the deadline: 3 s), "
         << (stayed.contains("report") ? "with its report pending" : "with ncu's wait timed out") << "; "
         << left_running << " process(es) still mapping the candidate; the next request "
         << after_stay.value("verdict", "");
      record("profile", "a runner that closes its socket and stays", stay_ok,
             stay_ok ? sd.str() : sd.str() + ": " + stayed.dump().substr(0, 300) + (stays.ok ? "" : " " + stays.log.substr(0, 300)),
             stayed);
    }

    // A wrapper that never starts the runner (ncu refusing its options) ends the request at once.
    const auto t0 = std::chrono::steady_clock::now();
    const auto f = profile_with({"/bin/false"}, good.library);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const bool false_ok = f.value("verdict", "") == "error" && f.value("check", "") == "runner" &&
                          f.value("reason", "").find("before it connected") != std::string::npos && secs < 10;
    record("profile", "a wrapper that starts nothing", false_ok, false_ok ? f.value("reason", "") : f.dump().substr(0, 400), f);
  }

  void isolation() {
    std::cout << "isolation (" << opt.device << "): the harness dies, the engine reports it and starts afresh\n";
    const auto good_task = task_named("vector_add");
    const auto good = build(source_of(good_task));
    for (const auto& f : files(fs::path(opt.root) / "tests/harness/isolation")) {
      const auto expect = tag(read(f), "kblaster-expect");
      const auto b = build(f.string());
      if (!b.ok) {
        record("isolation", f.filename().string(), false, "does not build: " + b.log.substr(0, 300), {});
        continue;
      }
      const int starts_before = client->starts();
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = evaluate(good_task, b.library);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto after = evaluate(good_task, good.library);  // a fresh harness must take over
      // A reply the client made up (no "device") means the harness died: a fresh one must have
      // been started. An out-of-memory the harness caught itself leaves it running.
      const bool died = !r.contains("device");
      const bool ok = r.value("check", "") == expect && after.value("verdict", "") == "pass" &&
                      client->starts() == starts_before + (died ? 1 : 0);
      std::ostringstream d;
      d << r.value("check", "") << " after " << std::fixed << std::setprecision(1) << secs << " s; next request "
        << after.value("verdict", "") << (died ? " on a fresh harness" : " on the same harness") << " (starts "
        << client->starts() << ")";
      if (!ok) d << "  [expected " << expect << "]: " << r.dump().substr(0, 300) << "; next: " << after.dump().substr(0, 300);
      record("isolation", f.filename().string(), ok, d.str(), r);
    }
  }

  // A listener that counts the connections it accepts (a candidate that reached it escaped).
  struct listener {
    int fd = -1;
    std::atomic<int> accepted{0};
    std::thread thread;
    explicit listener(int f) : fd(f) {
      thread = std::thread([this] {
        for (;;) {
          const int c = ::accept(fd, nullptr, nullptr);
          if (c < 0) return;  // closed by the destructor
          ++accepted;
          ::close(c);
        }
      });
    }
    ~listener() {
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      thread.join();
    }
  };

  static std::vector<int> escapees() {
    std::vector<int> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string cmd = read(e.path() / "cmdline");
      if (cmd.rfind("kblaster-escapee", 0) == 0) out.push_back(std::atoi(e.path().filename().c_str()));
    }
    return out;
  }

  void escape() {
    const auto& sb = kblaster::support::sandbox_support();
    std::cout << "escape (" << opt.device << "): each candidate tries one way out; " << sb.summary << "\n";
    const fs::path probe = "/tmp/kblaster-escape-probe";
    fs::remove_all(probe);
    fs::create_directories(probe);
    fs::permissions(probe, fs::perms::all);  // whoever the harness runs as may try to write here
    const std::string secret = "sk-kblaster-escape-" + std::to_string(::getpid());
    // Planted where a careless daemon would leave them: in its environment (the harness is
    // restarted below so that it inherits them) and in the user's configuration folder.
    ::setenv("OPENAI_API_KEY", secret.c_str(), 1);
    ::setenv("ANTHROPIC_API_KEY", secret.c_str(), 1);
    ::setenv("KBLASTER_ESCAPE_SECRET", secret.c_str(), 1);
    const passwd* pw = ::getpwuid(::getuid());
    const fs::path home = pw ? pw->pw_dir : "/nonexistent";
    const fs::path planted = home / ".config/kblaster-escape-probe";
    std::error_code ec;
    fs::create_directories(planted, ec);
    std::ofstream(planted / "secret") << secret << "\n";
    // And in /tmp, outside every scratch folder (issue 50: a candidate read such a file and threw
    // its contents back in its error). exfiltrate.cpp reads the paths listed in "planted".
    const fs::path planted_tmp = "/tmp/kblaster-escape-planted";
    fs::create_directories(planted_tmp, ec);
    std::ofstream(planted_tmp / "secret") << secret << "\n";
    std::ofstream(probe / "planted") << (planted_tmp / "secret").string() << "\n" << (planted / "secret").string() << "\n";
    // Listeners: loopback TCP, and a Unix socket in the user's scratch folder.
    const int tcp = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(tcp, 8);
    ::getsockname(tcp, reinterpret_cast<sockaddr*>(&a), &len);
    std::ofstream(probe / "port") << ntohs(a.sin_port) << "\n";
    const fs::path unix_path = kblaster::support::user_scratch_root() / "escape-probe.sock";
    fs::remove(unix_path, ec);
    const int ux = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    std::snprintf(u.sun_path, sizeof u.sun_path, "%s", unix_path.c_str());
    ::bind(ux, reinterpret_cast<sockaddr*>(&u), sizeof u);
    ::listen(ux, 8);
    std::ofstream(probe / "unix_socket") << unix_path.string() << "\n";
    auto tcp_listener = std::make_unique<listener>(tcp);
    auto unix_listener = std::make_unique<listener>(ux);
    // The probes' folder is shown to the candidates (read-only), which read the listeners' port
    // and path there; the planted secret stays out of their sight.
    ::setenv("KBLASTER_SANDBOX_ALLOW", probe.c_str(), 1);
    client->stop();  // the next harness starts with the planted environment

    const auto good_task = task_named("vector_add");
    const auto good = build(source_of(good_task));
    for (const auto& e : fs::directory_iterator(fs::path(opt.root) / "tests/harness/escape")) {
      if (e.path().extension() != ".cpp") continue;
      const auto f = e.path();
      const auto b = build_host_candidate(f.string(), opt.cache, true, {});
      if (!b.ok) {
        record("escape", f.filename().string(), false, "does not build: " + b.log.substr(0, 300), {});
        continue;
      }
      const int tcp_before = tcp_listener->accepted, unix_before = unix_listener->accepted;
      const int starts_before = client->starts();
      const auto screened = evaluate(good_task, b.library);  // the outer wall first
      if (screened.value("check", "") != "screening")
        record("escape", f.filename().string() + " (screening)", false,
               "the static screening let it through: " + screened.dump().substr(0, 200), screened);
      const auto r = evaluate(good_task, b.library, false);  // then the sandbox behind it
      const auto after = evaluate(good_task, good.library);
      // The judge is the harness process: the candidate ran in a runner beside it and must not
      // have ended it (a fresh harness for the next request would say it did).
      const bool judge_survived = client->starts() == starts_before + 1;
      client->stop();  // the harness ends: nothing it started may outlive it
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      std::vector<std::string> out;
      if (r.dump().find("returned 77") != std::string::npos) out.push_back("the candidate saw its way out (returned 77)");
      if (r.dump().find(secret) != std::string::npos) out.push_back("a planted secret came back in the reply");
      // What a candidate throws reaches the reason only bounded and marked as its own.
      if (r.value("check", "") == "exception" && (r.value("reason", "").find("(untrusted)") == std::string::npos ||
                                                  r.value("reason", "").find('\x1b') != std::string::npos ||
                                                  r.value("reason", "").size() > 2 * kblaster::support::candidate_text_limit))
        out.push_back("its exception's message came back unmarked or unbounded: " + r.value("reason", "").substr(0, 200));
      if (tcp_listener->accepted > tcp_before) out.push_back("it connected to loopback TCP");
      if (unix_listener->accepted > unix_before) out.push_back("it connected to the Unix socket");
      const fs::path lib_dir = fs::path(b.library).parent_path();
      for (const auto& w : {probe / "written", lib_dir / "kblaster-escape-written", home / "kblaster-escape-written"})
        if (fs::exists(w, ec)) {
          out.push_back("it wrote " + w.string());
          fs::remove(w, ec);
        }
      for (const int pid : escapees()) {
        out.push_back("process " + std::to_string(pid) + " outlived the harness");
        ::kill(pid, SIGKILL);
      }
      if (!judge_survived) out.push_back("the judge (the harness process) did not survive the candidate");
      if (after.value("verdict", "") != "pass") out.push_back("the next good candidate did not pass: " + after.dump().substr(0, 200));
      std::string detail = r.value("verdict", "") + " (" + r.value("check", "") + "); next request " + after.value("verdict", "");
      for (const auto& o : out) detail += "; ESCAPED: " + o;
      record("escape", f.filename().string(), out.empty(), detail, r);
    }
    // harness_check itself is the engine here: being alive to report is the last check.
    record("escape", "engine alive", true, "harness_check (pid " + std::to_string(::getpid()) + ") survived every case", {});
    tcp_listener.reset();
    unix_listener.reset();
    fs::remove(unix_path, ec);
    fs::remove_all(planted, ec);
    fs::remove_all(planted_tmp, ec);
    fs::remove_all(probe, ec);
    for (const char* n : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KBLASTER_ESCAPE_SECRET", "KBLASTER_SANDBOX_ALLOW"}) ::unsetenv(n);
  }

  // Candidates fully evaluated per minute: a fresh compile (cache off), verify on three seeds,
  // time candidate and reference.
  void bench() {
    std::vector<task_spec> tasks;
    for (const auto& e : fs::directory_iterator(fs::path(opt.root) / "examples/tasks"))
      if (fs::exists(e.path() / "task.json") && (opt.bench_task.empty() || e.path().filename() == opt.bench_task))
        tasks.push_back(load_task(e.path().string()));
    std::sort(tasks.begin(), tasks.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    double compile_s = 0, eval_s = 0;
    int done = 0, passed = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int round = 0; round < opt.bench; ++round)
      for (const auto& t : tasks) {
        const auto c0 = std::chrono::steady_clock::now();
        const auto b = build(source_of(t), false);
        const auto c1 = std::chrono::steady_clock::now();
        const auto r = b.ok ? evaluate(t, b.library) : nlohmann::json{{"verdict", "fail"}};
        const auto c2 = std::chrono::steady_clock::now();
        compile_s += std::chrono::duration<double>(c1 - c0).count();
        eval_s += std::chrono::duration<double>(c2 - c1).count();
        ++done;
        passed += r.value("verdict", "") == "pass";
      }
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << std::fixed << std::setprecision(2) << "bench: " << done << " candidates (" << passed << " passed) in "
              << total << " s: " << 60.0 * done / total << " candidates/minute; per candidate: compile "
              << compile_s / done << " s, verify+time " << eval_s / done << " s (timing cap " << opt.max_seconds
              << " s per side)\n";
    log.push_back({{"section", "bench"}, {"candidates", done}, {"passed", passed}, {"seconds", total},
                   {"per_minute", 60.0 * done / total}, {"compile_s", compile_s / done}, {"evaluate_s", eval_s / done}});
  }
};

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--harness") o.harness = v;
    else if (k == "--root") o.root = v;
    else if (k == "--device") o.device = v;
    else if (k == "--cache") o.cache = v;
    else if (k == "--only") o.only = v;
    else if (k == "--watchdog") o.watchdog_s = std::stod(v);
    else if (k == "--max-seconds") o.max_seconds = std::stod(v);
    else if (k == "--bench") o.bench = std::stoi(v);
    else if (k == "--json-out") o.json_out = v;
    else if (k == "--bench-task") o.bench_task = v;
    else {
      std::cerr << "harness_check: unknown option " << k << "\n";
      return 100;
    }
  }
  if (o.harness.empty() || o.root.empty()) {
    std::cerr << "usage: harness_check --harness PATH --root SOURCE_DIR [--device cpu|cuda] [--cache DIR] "
                 "[--only examples|controls|timing|adversarial|profile|isolation|escape|bench] [--watchdog S] [--max-seconds S] [--bench N] [--bench-task NAME] [--json-out F]\n";
    return 100;
  }
  if (o.cache.empty()) o.cache = (fs::temp_directory_path() / "kblaster-harness-check").string();
  checker c{o, nullptr, nullptr, 0, nlohmann::json::array()};
  harness_options ho;
  ho.executable = o.harness;
  ho.device = o.device;
  ho.watchdog = std::chrono::milliseconds(static_cast<long long>(o.watchdog_s * 1000));
  // The tasks and the cache (where the stand-in for ncu is written), nothing else of the tree:
  // a folder a later request names would restart the harness, and its scratch with it.
  ho.readable = {fs::path(o.root) / "examples/tasks", fs::path(o.root) / "tests/harness/tasks", fs::path(o.cache)};
  c.client = std::make_unique<harness_client>(ho);
  try {
    if (o.only.empty() || o.only == "examples") c.examples();
    if (o.only.empty() || o.only == "controls") c.controls();
    if (o.only.empty() || o.only == "timing") c.timing();
    if (o.only.empty() || o.only == "adversarial") c.adversarial();
    if (o.only.empty() || o.only == "memo") c.memo();
    if (o.only.empty() || o.only == "original") c.original();
    if (o.only.empty() || o.only == "profile") c.profile();
    if (o.only.empty() || o.only == "isolation") c.isolation();
    if (o.only.empty() || o.only == "escape") c.escape();
    if (o.bench > 0) c.bench();
  } catch (const std::exception& e) {
    std::cout << "harness_check: " << e.what() << "\n";
    ++c.failures;
  }
  if (!o.json_out.empty()) std::ofstream(o.json_out) << c.log.dump(1) << "\n";
  std::cout << (c.failures ? "FAILED: " : "all passed: ") << c.failures << " failure(s)\n";
  return std::min(c.failures, 99);
}
