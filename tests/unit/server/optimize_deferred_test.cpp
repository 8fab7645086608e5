// kblaster.optimize with a model that answers later (kblaster.llm.batch "files:DIR"), through the
// same engine service as `kblaster optimize --batch`: each Optimize hands the round's questions
// over and answers "waiting"; tools/batch/answer_from_book.py answers them from the answer book;
// Optimize again resumes in the same run folder, until the run ends where the synchronous run
// with the same answers (kblaster.llm.replay) ends. GPU results: vector_add's, recorded on an
// H100 (tests/optimize/recordings/loop-vector_add.jsonl), replayed: no GPU, no model.
#include "server_fixture.h"
#include "support/files.h"
#include "tests/temp_dir.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

using namespace kblaster::testing;
namespace fs = std::filesystem;

namespace {

const fs::path source_root = KBLASTER_SOURCE_DIR;


// One editor session on a copy of vector_add: `model` is the llm.* settings.
class session {
 public:
  session(const fs::path& folder, const json& model) : task_(folder / "vector_add") {
    fs::copy(source_root / "examples/tasks/vector_add", task_, fs::copy_options::recursive);
    json settings;
    settings["analysis"]["enabled"] = false;
    settings["knowledgeBase"] = (folder / "kb.sqlite").string();
    settings["optimize"] = {{"replayHarness", (source_root / "tests/optimize/recordings/loop-vector_add.jsonl").string()},
                            {"breadth", 2}, {"depth", 2}, {"iterations", 2}, {"seed", 1}};
    settings["llm"] = model;
    s_.request(0, "initialize", {{"capabilities", json::object()},
                                 {"initializationOptions", {{"workspaceTrusted", true}, {"kblaster", settings}}}});
    s_.reply(0);
    s_.notify("initialized");
    s_.open(uri(), kblaster::support::read_file(task_ / "kernel.cu"));
  }
  std::string uri() const { return "file://" + (task_ / "kernel.cu").string(); }
  fs::path task() const { return task_; }

  /// Optimize on vector_add; the run's reply (a final edit is accepted as a client would).
  json optimize() {
    const int id = ++id_;
    s_.request(id, "workspace/executeCommand",
               {{"command", "kblaster.optimize"}, {"arguments", json::array({{{"uri", uri()}, {"kernel", "vector_add"}}})}});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(300);
    while (std::chrono::steady_clock::now() < until) {
      auto m = s_.transport().take([&](const json& j) { return (!j.contains("method") && j.value("id", json()) == id) ||
                                                               j.value("method", "") == "workspace/applyEdit"; },
                                   std::chrono::milliseconds(200));
      if (!m) continue;
      if (!m->contains("method")) return *m;
      s_.send({{"jsonrpc", "2.0"}, {"id", (*m)["id"]}, {"result", {{"applied", true}}}});
    }
    throw std::runtime_error("no reply to Optimize");
  }

 private:
  server_fixture s_;
  fs::path task_;
  int id_ = 0;
};

}  // namespace

TEST_CASE("Optimize with a batch model: rounds that wait, then the synchronous run's result") {
  const fs::path book = source_root / "tests/optimize/answer_book.jsonl";
  temp_dir w("lsp-deferred");
  fs::create_directories(w.path / "sync");
  fs::create_directories(w.path / "deferred");
  session sync(w.path / "sync", {{"replay", book.string()}});
  const json want = sync.optimize();
  REQUIRE(want.contains("result"));
  CHECK(want["result"]["stopReason"] == "finished");

  // A relative batch folder is beside the file.
  session later(w.path / "deferred", {{"batch", "files:batch"}, {"batchWait", false}});
  const fs::path batch = later.task() / "batch";
  json got;
  int rounds = 0;
  for (rounds = 1; rounds <= 40; ++rounds) {
    got = later.optimize();
    REQUIRE(got.contains("result"));
    if (got["result"]["stopReason"] != "waiting") break;
    CHECK(fs::exists(batch / ("requests-" + std::to_string(rounds) + ".jsonl")));
    const std::string answer = "python3 '" + (source_root / "tools/batch/answer_from_book.py").string() + "' '" + book.string() +
                               "' '" + batch.string() + "' > /dev/null";
    REQUIRE(std::system(answer.c_str()) == 0);
  }
  MESSAGE(rounds << " Optimize requests, " << rounds - 1 << " of them waiting for answers");
  CHECK(rounds > 1);
  CHECK(got["result"]["stopReason"] == "finished");
  CHECK(got["result"]["candidates"] == want["result"]["candidates"]);
  CHECK(got["result"]["bestSpeedup"] == want["result"]["bestSpeedup"]);
  CHECK(got["result"]["applied"] == want["result"]["applied"]);
}
