// How many rounds a run asks of a model that answers through a batch interface (`--batch
// files:DIR`), where each round may take hours (issue 36): the loop over a feature-priced
// evaluator (no GPU; tests/unit/engine/optimize/feature_evaluator.h), its questions answered
// round by round in the batch folder by a stand-in model (deferred_rounds.h). Prints figures and
// asserts nothing; tests/unit/engine/optimize/loop_rounds_test.cpp holds the bound.
//   build/tests/bench/bench_rounds
#include "engine/llm/cassette.h"
#include "tests/unit/engine/optimize/deferred_rounds.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace {

using namespace kblaster::engine;
using namespace kblaster::engine::optimize;
namespace fs = std::filesystem;

// The answer book of the loop's tests as a stand-in: the first entry of the role whose match
// strings all occur in the request, as tools/batch/answer_from_book.py answers a batch folder.
loop_test::answerer answer_book() {
  auto player = std::make_shared<llm::cassette_player>(
      llm::read_cassette(fs::path(KBLASTER_SOURCE_DIR) / "tests/optimize/answer_book.jsonl"), llm::replay_mode::by_content);
  return [player](const std::string& role, const std::string& text) {
    llm::chat_request r;
    r.agent_role = role;
    r.messages = {{"user", text}};
    return player->next(r).response.text;
  };
}

struct config {
  const char* model;
  loop_test::answerer answer;
  int breadth, depth, iterations;
  bool mechanical_first;
};

}  // namespace

int main() {
  const auto task = load_task(fs::path(KBLASTER_SOURCE_DIR) / "examples/tasks/vector_add");
  const auto kernel = kblaster::support::read_file(fs::path(KBLASTER_SOURCE_DIR) / "examples/tasks/vector_add/kernel.cu");
  const std::vector<config> configs = {
      {"every rewrite a new best", loop_test::improving_model(kernel), 8, 4, 2, false},
      {"every rewrite a new best", loop_test::improving_model(kernel), 8, 4, 2, true},
      {"every rewrite a new best", loop_test::improving_model(kernel), 2, 1, 1, false},
      {"answer book", answer_book(), 8, 4, 2, false},
  };
  std::cout << "| model | breadth | depth | iterations | mechanical first | rounds | bound (depth + 2) x iterations | requests | candidates | tokens |\n"
               "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& c : configs) {
    std::string tmpl = (fs::temp_directory_path() / "kblaster-bench-rounds-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) return 1;
    loop_options o;
    o.breadth = c.breadth;
    o.depth = c.depth;
    o.iterations = c.iterations;
    o.seed = 1;
    o.mechanical_first = c.mechanical_first;
    loop_test::feature_evaluator eval;
    try {
      const auto r = loop_test::run_in_rounds(task, o, tmpl, eval, c.answer);
      int requests = 0;
      for (int n : r.requests) requests += n;
      std::cout << "| " << c.model << " | " << c.breadth << " | " << c.depth << " | " << c.iterations << " | "
                << (c.mechanical_first ? "yes" : "no") << " | " << r.rounds << " | " << (c.depth + 2) * c.iterations << " | "
                << requests << " | " << r.result.candidates << " | " << r.result.tokens << " |" << std::endl;
    } catch (const std::exception& e) {
      std::cout << "| " << c.model << " | " << c.breadth << " | " << c.depth << " | " << c.iterations << " | "
                << (c.mechanical_first ? "yes" : "no") << " | failed: " << e.what() << " |" << std::endl;
    }
    std::error_code ec;
    fs::remove_all(tmpl, ec);
  }
  return 0;
}
