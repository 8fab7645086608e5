// engine.harness_evaluator_gpu (label gpu): the live evaluator on a real GPU with the
// vector_add example's CUDA kernel: verified, timed against the PyTorch reference, profiled
// under Nsight Compute (a runner the harness starts under ncu), classified; a wrong kernel fails;
// every visible GPU gets its own harness. With KBLASTER_EVALUATOR_RECORDING=FILE the
// evaluations are also recorded there (a fixture for replays in CI). Run it with
// tests/evaluator/gpu_evaluator_test.sh, which builds a CUDA kblaster-harness first.
#include "engine/evaluate/harness_evaluator.h"
#include "engine/evaluate/recorded_evaluator.h"
#include "engine/task/task.h"
#include "support/device_lock.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <iostream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace kblaster::engine;
using namespace kblaster::engine::optimize;

namespace {

// The checkout: $KBLASTER_ROOT where the test binary was carried to another machine.
std::string root() {
  const char* r = std::getenv("KBLASTER_ROOT");
  return r && *r ? r : KBLASTER_SOURCE_DIR;
}

// Sources, builds and ncu reports: $KBLASTER_EVALUATOR_WORK (kept, for a look at the report),
// else a temporary directory.
fs::path work_dir() {
  const char* w = std::getenv("KBLASTER_EVALUATOR_WORK");
  if (w && *w) return w;
  return fs::temp_directory_path() / ("kblaster-heval-gpu-" + std::to_string(::getpid()));
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// GPU 0 alone, timing capped at half a second a side, a fresh profile cache: what the cases below share.
harness_evaluator_options first_gpu_options() {
  harness_evaluator_options o;
  o.device = "cuda";
  o.gpus = {0};
  o.work_dir = work_dir();
  o.max_seconds = 0.5;
  // A profile cache of this run's own: a kept one answered the slow case's profile from an
  // earlier run on a warm machine, and the figure it prints was 0 s.
  o.profile_cache_dir = work_dir() / ("profiles-" + std::to_string(::getpid()));
  return o;
}

}  // namespace

TEST_CASE("live evaluator on a GPU: vector_add passes, is timed and profiled by ncu") {
  const auto task = load_task(root() + "/examples/tasks/vector_add");
  const auto source = read(task.kernel);
  harness_evaluator_options o;
  o.device = "cuda";
  o.work_dir = work_dir();
  o.max_seconds = 1;
  harness_evaluator live({task}, o);
  std::cout << "evaluator: " << live.describe() << "\n";
  CHECK(live.parallelism() >= 1);

  std::unique_ptr<recording_evaluator> rec;
  evaluator* eval = &live;
  if (const char* path = std::getenv("KBLASTER_EVALUATOR_RECORDING"); path && *path) {
    rec = std::make_unique<recording_evaluator>(live, path);
    eval = rec.get();
  }

  const auto e = eval->evaluate("vector_add", source, {true, true});
  std::cout << to_json(e).dump(2).substr(0, 6000) << "\n";
  CHECK(e.compile_ok);
  CHECK(e.correct);
  CHECK(e.verdict == "pass");
  REQUIRE(e.runtime_ms);
  REQUIRE(e.reference_ms);
  CHECK(*e.runtime_ms > 0);
  CHECK(*e.reference_ms > 0);
  CHECK(e.gpu_name.find("NVIDIA") != std::string::npos);
  CHECK(e.arch.rfind("sm_", 0) == 0);
  CHECK(e.profile_note == "");  // empty: the profile is ncu's, not a fallback
  REQUIRE(e.profile);
  CHECK(e.profile->source == "ncu");
  CHECK(e.profile->kernel == "vector_add");
  CHECK(!e.profile->primary.empty());
  CHECK(e.profile->primary != "unknown");
  CHECK(e.profile->summary.size() > 100);
  CHECK(e.profile->view.contains("primary"));
  CHECK(e.profile->elapsed_cycles.value_or(0) > 0);
  std::cout << "vector_add: " << *e.runtime_ms << " ms, reference " << *e.reference_ms << " ms, primary "
            << e.profile->primary << ", gpu_seconds " << e.gpu_seconds << "\n";

  // A loop's candidate is given the reference's figure timed with its input: the reference is not
  // timed again, and the figure stands in the evaluation.
  evaluation_request given_request{true, false};
  given_request.reference_ms = *e.reference_ms;
  const auto given = eval->evaluate("vector_add", source + "\n// given the reference's figure\n", given_request);
  CHECK(given.correct);
  REQUIRE(given.reference_ms);
  CHECK(*given.reference_ms == doctest::Approx(*e.reference_ms));
  CHECK(given.harness["timing"]["reference"].value("given", false));
  CHECK(given.harness["timing"]["method"].get<std::string>().find("not timed again") != std::string::npos);
  std::cout << "vector_add given the reference's figure: time " << given.phases.time << " s (first: " << e.phases.time
            << " s)\n";

  const auto wrong = eval->evaluate("vector_add", [&] {
    auto s = source;
    s.replace(s.find("a[i] + b[i]"), 11, "a[i] - b[i]");
    return s;
  }(), {true, true});
  CHECK_FALSE(wrong.correct);
  CHECK(wrong.check == "tolerance");
  CHECK_FALSE(wrong.profile);

  // One candidate per GPU at once: each runs in its own harness.
  std::vector<std::thread> threads;
  std::vector<evaluation> results(static_cast<std::size_t>(live.parallelism()));
  for (std::size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      results[i] = eval->evaluate("vector_add", source + "\n// copy " + std::to_string(i) + "\n", {true, false});
    });
  for (auto& t : threads) t.join();
  for (const auto& r : results) CHECK(r.correct);
  // No harness was restarted, and with several GPUs more than one served (evaluations take
  // seconds, so the threads overlap).
  CHECK(live.harness_starts() <= live.parallelism());
  if (live.parallelism() > 1) CHECK(live.harness_starts() >= 2);
}

TEST_CASE("live evaluator on a GPU: a kernel profiled before is not profiled again, wherever its task sits") {
  // The editor's profile on save and Optimize's first profile of the same launch: two harnesses,
  // the task in two folders, one profile cache.
  const auto base = work_dir() / "profile-cache";
  fs::remove_all(base);
  for (const char* where : {"on-save", "optimize"}) {
    fs::create_directories(base / where);  // fs::copy makes the folder, not its parents
    fs::copy(root() + "/examples/tasks/vector_add", base / where / "vector_add", fs::copy_options::recursive);
  }
  auto o = first_gpu_options();
  o.work_dir = base / "work";
  o.profile_cache_dir = base / "cache";
  const auto source = read(root() + "/examples/tasks/vector_add/kernel.cu") + "\n// cached\n";
  const auto first = [&] {
    harness_evaluator live({load_task((base / "on-save" / "vector_add").string())}, o);
    return live.evaluate("vector_add", source, {false, true});
  }();
  REQUIRE(first.correct);
  REQUIRE(first.profile);
  CHECK(first.profile->source == "ncu");
  CHECK_FALSE(first.profile->view.contains("reused"));
  CHECK(first.phases.profile > 0.5);  // ncu ran: its start alone is about a second
  harness_evaluator again({load_task((base / "optimize" / "vector_add").string())}, o);
  const auto second = again.evaluate("vector_add", source, {false, true});
  REQUIRE(second.correct);
  REQUIRE(second.profile);
  INFO("second profile's view: " << second.profile->view.dump().substr(0, 600));
  CHECK(second.profile->view.contains("reused"));
  CHECK(second.phases.profile == 0);  // no GPU time spent on the profile
  CHECK(second.profile->primary == first.profile->primary);
  CHECK(second.profile->summary == first.profile->summary);
  std::cout << "profile: " << first.phases.profile << " s the first time, " << second.phases.profile
            << " s the second (reused); state " << second.profile->primary << "\n";
  // The save's profile and an Optimize at once, in one process: ncu runs once, the other reads its pages.
  {
    const auto fresh = source + "// at once\n";
    harness_evaluator a({load_task((base / "on-save" / "vector_add").string())}, o);
    harness_evaluator b({load_task((base / "optimize" / "vector_add").string())}, o);
    evaluation ea, eb;
    std::thread ta([&] { ea = a.evaluate("vector_add", fresh, {false, true}); });
    std::thread tb([&] { eb = b.evaluate("vector_add", fresh, {false, true}); });
    ta.join();
    tb.join();
    for (const auto* e : {&ea, &eb}) {
      INFO("verdict " << e->verdict << " (" << e->check << "): " << e->reason << "; profile note: " << e->profile_note);
      REQUIRE(e->profile);
    }
    CHECK(ea.profile->view.contains("reused") != eb.profile->view.contains("reused"));
    CHECK(ea.profile->primary == eb.profile->primary);
  }
  // Other data at the same place: profiled afresh (the cache never answers for other inputs).
  {
    auto t = load_task((base / "optimize" / "vector_add").string());
    t.inputs[0].shape[0] /= 2;
    t.inputs[1].shape[0] /= 2;
    t.outputs.clear();
    harness_evaluator other({t}, o);
    const auto e = other.evaluate("vector_add", source, {false, true});
    REQUIRE(e.profile);
    CHECK_FALSE(e.profile->view.contains("reused"));
  }
  fs::remove_all(base);
}

TEST_CASE("live evaluator on a GPU: a request waits while another kblaster measurement holds the GPU") {
  const auto task = load_task(root() + "/examples/tasks/vector_add");
  auto o = first_gpu_options();
  o.ncu = "none";
  // Another process's profile on save, say: it holds GPU 0 until the request has waited for
  // it 0.8 s. (A hold of fixed length would end while the candidate is still being built.)
  std::promise<void> waiting;
  std::once_flag told;
  o.on_device_wait = [&](const std::string& line) {
    std::cout << line << "\n";
    std::call_once(told, [&] { waiting.set_value(); });
  };
  harness_evaluator live({task}, o);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  auto other = kblaster::support::device_lock::acquire(
      kblaster::support::device_lock::gpu(visible && *visible ? std::string(visible) : "0"), "a profile on save", {});
  REQUIRE(other);
  std::thread release([&, heard = waiting.get_future()]() mutable {
    const bool waited = heard.wait_for(std::chrono::seconds(120)) == std::future_status::ready;
    if (waited) std::this_thread::sleep_for(std::chrono::milliseconds(800));
    other.reset();
  });
  const auto e = live.evaluate("vector_add", read(task.kernel) + "\n// waits\n", {true, false});
  release.join();
  CHECK(e.correct);
  CHECK(e.phases.device_wait > 0.5);  // waited, and not counted as the candidate's device time
  CHECK(e.gpu_seconds < e.phases.device() + 0.05);  // the wait is in neither
  std::cout << "waited " << e.phases.device_wait << " s for the GPU; device " << e.phases.device() << " s\n";
}

TEST_CASE("live evaluator on a GPU: without ncu the profile is static and says so") {
  const auto task = load_task(root() + "/examples/tasks/vector_add");
  auto o = first_gpu_options();
  o.ncu = "none";
  harness_evaluator live({task}, o);
  CHECK(live.parallelism() == 1);
  const auto e = live.evaluate("vector_add", read(task.kernel) + "\n// static\n", {true, true});
  CHECK(e.correct);
  INFO("profile note: " << e.profile_note);
  REQUIRE(e.profile);
  CHECK(e.profile->source == "static");
  CHECK(e.profile_note.find("static profile") != std::string::npos);
  CHECK_THROWS_AS(harness_evaluator({task}, [&] {
                    auto bad = o;
                    bad.gpus = {99};
                    return bad;
                  }()),
                  evaluation_error);
}

TEST_CASE("live evaluator on a GPU: a slow task is profiled at a smaller batch, or at its own shape where it must") {
  // vector_add over 2^24 floats, each thread adding a hundred thousand dependent terms too small
  // to change c (a thousand took 0.53 ms a call on an H200; this, tens of ms): verified and timed
  // at 2^24, profiled at the first halving under 25 ms a call that keeps 2M elements.
  auto task = load_task(root() + "/examples/tasks/vector_add");
  task.name = "vector_add_slow";
  for (auto& in : task.inputs) in.shape = {std::int64_t{1} << 24};
  auto o = first_gpu_options();
  harness_evaluator live({task}, o);
  auto source = read(task.kernel);
  source.replace(source.find("if (i < n) c[i] = a[i] + b[i];"), 30,
                 "if (i < n) {\n    float s = 0.f;\n    for (int r = 0; r < 100000; ++r) s += a[i] * 1e-30f;\n"
                 "    c[i] = a[i] + b[i] + s;\n  }");
  const auto e = live.evaluate("vector_add_slow", source, {true, true});
  CHECK(e.correct);
  REQUIRE(e.runtime_ms);
  REQUIRE(e.profile);
  INFO("runtime " << *e.runtime_ms << " ms; profile note: " << e.profile_note << "\nsummary:\n" << e.profile->summary);
  CHECK(*e.runtime_ms > 25);
  CHECK(e.profile->source == "ncu");
  CHECK(e.profile->shape_note.find("of the task's 16777216 (1/") != std::string::npos);
  CHECK(e.profile->summary.rfind("Shape: ", 0) == 0);
  CHECK(e.profile->summary.find("grid (65536, 1, 1)") == std::string::npos);  // not 2^24 / 256
  std::cout << "slow vector_add at 2^24: " << *e.runtime_ms << " ms a call, profiled " << e.phases.profile << " s; "
            << e.profile->shape_note << "; primary " << e.profile->primary << "\n";

  // A candidate that runs only at the task's own size is profiled there, and the profile says why.
  auto fixed = source;
  fixed.replace(fixed.find("const long long n = in[0].shape[0];"), 35,
                "const long long n = in[0].shape[0];\n  if (n != 16777216) return 7;");
  const auto f = live.evaluate("vector_add_slow", fixed, {true, true});
  CHECK(f.correct);
  REQUIRE(f.profile);
  INFO("summary:\n" << f.profile->summary);
  CHECK(f.profile->source == "ncu");
  CHECK(f.profile->shape_note.find("at the task's own shape") != std::string::npos);
  CHECK(f.profile->summary.find("grid (65536, 1, 1)") != std::string::npos);

  // --profile-full-shape: the task's own shape, nothing said.
  o.profile_full_shape = true;
  harness_evaluator full({task}, o);
  const auto g = full.evaluate("vector_add_slow", source + "\n// full\n", {true, true});
  REQUIRE(g.profile);
  CHECK(g.profile->shape_note.empty());
  CHECK(g.profile->summary.find("grid (65536, 1, 1)") != std::string::npos);
  std::cout << "slow vector_add at 2^24, full shape: profiled " << g.phases.profile << " s; primary " << g.profile->primary
            << "\n";
}

TEST_CASE("live evaluator on a GPU: a version profiled for its state's counters has the state the sections give") {
  const auto task = load_task(root() + "/examples/tasks/vector_add");
  const auto source = read(task.kernel);
  harness_evaluator live({task}, first_gpu_options());
  evaluation_request sections;
  sections.next_scope = profile_scope::state_counters;  // as the loop asks for its input
  const auto full = live.evaluate("vector_add", source, sections);
  evaluation_request counters;
  counters.scope = profile_scope::state_counters;
  const auto lean = live.evaluate("vector_add", source + "\n// the same kernel, profiled for its counters\n", counters);
  REQUIRE(full.profile);
  REQUIRE(lean.profile);
  INFO("sections: " << full.profile->summary.substr(0, 600));
  INFO("counters: " << lean.profile->summary.substr(0, 600));
  CHECK(full.profile->source == "ncu");
  CHECK(lean.profile->source == "ncu_counters");
  CHECK(lean.profile->summary.find("ncu's counters for the state alone") != std::string::npos);
  CHECK(lean.profile->primary == full.profile->primary);
  CHECK(lean.profile->secondary == full.profile->secondary);
  CHECK(lean.profile->elapsed_cycles.value_or(0) > 0);
  // The sections profile named the counters as the next scope: that runner was started under ncu
  // as it ended (harness/profile_runner.h), and its report moved where it was asked; the next
  // counters profile's runner was started as this one ended, under the same command.
  CHECK_FALSE(full.profile->view.contains("started_ahead"));
  CHECK(lean.profile->view.contains("started_ahead"));
  CHECK(fs::exists(lean.profile->report_path));
  const auto again = live.evaluate("vector_add", source + "\n// profiled for its counters again\n", counters);
  REQUIRE(again.profile);
  CHECK(again.profile->view.contains("started_ahead"));
  CHECK(again.profile->primary == full.profile->primary);
  // Each reply came once the profiled runner was gone; ncu's report was waited for after, without
  // the GPU (report_later): a phase of its own, not one of the device's.
  CHECK(full.phases.profile_report > 0);
  CHECK(again.phases.profile_report > 0);
  std::cout << "profile of vector_add: sections " << full.phases.profile << " s (" << full.profile->primary
            << "), the state's counters " << lean.phases.profile << " s and " << again.phases.profile << " s ("
            << lean.profile->primary << "), their runners started ahead; ncu's reports written "
            << full.phases.profile_report << ", " << lean.phases.profile_report << " and " << again.phases.profile_report
            << " s after the replies\n";
}

TEST_CASE("live evaluator on a GPU: an ncu that refuses one of the state's counters profiles with the sections") {
  const auto task = load_task(root() + "/examples/tasks/vector_add");
  auto o = first_gpu_options();
  o.ncu = root() + "/tests/evaluator/ncu_refusing_counters.sh";
  harness_evaluator live({task}, o);
  evaluation_request counters;
  counters.scope = profile_scope::state_counters;
  const auto e = live.evaluate("vector_add", read(task.kernel), counters);
  INFO("profile note: " << e.profile_note);
  REQUIRE(e.profile);
  CHECK(e.profile->source == "ncu");
  CHECK(e.profile->view.value("scope", "").find("the state's counters alone failed") != std::string::npos);
  CHECK(e.profile->summary.find("Profile: ncu's sections") != std::string::npos);
  std::cout << "an ncu without memory_l2_theoretical_sectors_global: " << e.profile->view.value("scope", "") << "\n";
}
