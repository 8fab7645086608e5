// Strict answer parsing: each malformed shape is detected and named.
#include "engine/agents/answer_parser.h"
#include "engine/agents/json_schema.h"
#include "engine/agents/prompt_library.h"

#include <doctest/doctest.h>

using namespace kblaster::engine;
using namespace kblaster::engine::agents;

namespace {
llm::chat_response said(const std::string& text, const std::string& finish = "stop") {
  llm::chat_response r;
  r.text = text;
  r.finish_reason = finish;
  return r;
}
const std::string kernel = "__global__ void k(float* x) { x[0] = 1; }\nextern \"C\" int kb_forward(float* x) { k<<<1, 1>>>(x); return 0; }\n";
}  // namespace

TEST_CASE("parser: code in one fence, out of fences, and the same block twice") {
  auto a = extract_cuda_source(said("Here:\n```cuda\n" + kernel + "```\nDone."), "kb_forward");
  REQUIRE(a.value);
  CHECK(*a.value == kernel);
  auto b = extract_cuda_source(said("#include <cuda_runtime.h>\n" + kernel), "kb_forward");
  REQUIRE(b.value);
  auto c = extract_cuda_source(said("```cuda\n" + kernel + "```\nAgain:\n```cu\n" + kernel + "```\n"), "kb_forward");
  CHECK(c.value);
  // A helper snippet that does not define the entry point does not count as a second version.
  auto d = extract_cuda_source(said("```cuda\n" + kernel + "```\nCall it like:\n```cpp\nkb_forward(ptr);\n```\n"), "kb_forward");
  CHECK(d.value);
}

TEST_CASE("parser: defines_function wants the name as a word, a parameter list, then a body") {
  CHECK(defines_function(kernel, "kb_forward"));
  CHECK(defines_function(kernel, "k"));
  CHECK(defines_function("int f (int a,\n      int b)\n{ return a; }", "f"));
  CHECK(defines_function("int S::size() const noexcept { return 0; }", "size"));
  CHECK(defines_function("int S::size() const{ return 0; }", "size"));
  CHECK(defines_function("void g(int (*cb)(int)) {}", "g"));
  CHECK(defines_function("f(); int f() {}", "f"));  // the call first, the definition later
  CHECK_FALSE(defines_function("int f(int a);", "f"));                // a prototype
  CHECK_FALSE(defines_function("kb_forward(ptr);", "kb_forward"));  // a call
  CHECK_FALSE(defines_function("int my_f() { }", "f"));            // not a word of its own
  CHECK_FALSE(defines_function("int f() override { }", "f"));
  CHECK_FALSE(defines_function("int f(", "f"));
  CHECK_FALSE(defines_function("int f() const", "f"));
  CHECK_FALSE(defines_function("int f() { }", "g"));
  // A long answer full of calls stays linear (the regex this replaced backtracked over each).
  std::string calls;
  for (int i = 0; i < 20000; ++i) calls += "kb_forward(a, b, c) + ";
  CHECK_FALSE(defines_function(calls, "kb_forward"));
  CHECK(defines_function(calls + "; int kb_forward() {}", "kb_forward"));
}

TEST_CASE("parser: several different versions, truncation, refusal, wrong name, wrong language") {
  const std::string other = kernel + "// tuned\n";
  CHECK(extract_cuda_source(said("```cuda\n" + kernel + "```\n```cuda\n" + other + "```"), "kb_forward").problem.kind ==
        problem_kind::several_versions);
  CHECK(extract_cuda_source(said("```cuda\n" + kernel.substr(0, 30)), "kb_forward").problem.kind == problem_kind::truncated);
  CHECK(extract_cuda_source(said("```cuda\n" + kernel + "```", "length"), "kb_forward").problem.kind ==
        problem_kind::truncated);
  CHECK(extract_cuda_source(said("```cuda\nextern \"C\" int kb_forward(float* x) {\n  if (x) {\n    return 0;\n}\n```"),
                            "kb_forward").problem.kind == problem_kind::truncated);
  CHECK(extract_cuda_source(said("I'm sorry, but I can't help with that."), "kb_forward").problem.kind ==
        problem_kind::refusal);
  auto wrong = extract_cuda_source(said("```cuda\n__global__ void k2(float* x) { x[0] = 2; }\n```"), "kb_forward");
  CHECK(wrong.problem.kind == problem_kind::wrong_entry_point);
  CHECK(wrong.problem.message.find("`k2`") != std::string::npos);
  CHECK(extract_cuda_source(said("```python\nimport torch\ndef f(x):\n    return x\n```"), "kb_forward").problem.kind ==
        problem_kind::wrong_language);
  CHECK(extract_cuda_source(said("```\n@triton.jit\ndef k(x):\n    pass\n```"), "kb_forward").problem.kind ==
        problem_kind::wrong_language);
  CHECK(extract_cuda_source(said("It is already optimal."), "kb_forward").problem.kind == problem_kind::no_code);
}

TEST_CASE("parser: JSON alone, fenced, with trailing text, truncated, invalid") {
  CHECK(extract_json_object(said(R"({"a": 1})")).value);
  CHECK(extract_json_object(said("```json\n{\"a\": \"}\"}\n```")).value->at("a") == "}");
  CHECK(extract_json_object(said("{\"a\": 1}\n\nHope this helps!")).problem.kind == problem_kind::trailing_text);
  CHECK(extract_json_object(said("Sure! {\"a\": 1}")).problem.kind == problem_kind::not_json);
  CHECK(extract_json_object(said("{\"a\": [1, 2")).problem.kind == problem_kind::truncated);
  CHECK(extract_json_object(said("{\"a\": 1}", "length")).problem.kind == problem_kind::truncated);
  CHECK(extract_json_object(said("{a: 1}")).problem.kind == problem_kind::not_json);
  CHECK(extract_json_object(said("I cannot help with that request.")).problem.kind == problem_kind::refusal);
}

TEST_CASE("schema: KB edits are validated with paths and the op's own branch") {
  const auto schema = nlohmann::json::parse(embedded_prompt_files().at("kb_edit.schema.json"));
  nlohmann::json ok = {{"rationale", "r"},
                       {"operations", {{{"op", "adjust_prediction"}, {"state", "s_a"}, {"technique", "t_b"},
                                        {"predicted_speedup", 1.2}, {"reason", "x"}}}}};
  CHECK(validate_json(ok, schema).empty());
  auto bad = ok;
  bad["operations"][0]["predicted_speedup"] = 90;
  bad["operations"][0]["extra"] = 1;
  const auto errors = validate_json(bad, schema);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0] == "$.operations[0]: has unknown field 'extra'");
  CHECK(errors[1] == "$.operations[0].predicted_speedup: must be <= 50");
  bad = ok;
  bad["operations"][0]["op"] = "set_confidence";
  CHECK(validate_json(bad, schema).at(0).find("op must be one of adjust_prediction") != std::string::npos);
  CHECK(validate_json(nlohmann::json::array(), schema).at(0).find("must be of type") != std::string::npos);
}

TEST_CASE("prompts: provenance lines are dropped and every placeholder must have a value") {
  for (const auto& file : embedded_prompt_files()) {
    const std::string& name = file.first;  // not a structured binding: CAPTURE makes a lambda
    const std::string_view text = file.second;
    if (name.size() < 4 || name.substr(name.size() - 4) != ".txt") continue;
    CAPTURE(name);
    CHECK(text.substr(0, 9) == "# Source:");
    CHECK(prompt_text(name).find("# Source:") == std::string::npos);
  }
  CHECK(render("a {{x}} b {{y}}", {{"x", "1"}, {"y", "{{x}}"}}) == "a 1 b {{x}}");
  CHECK_THROWS_WITH(render("{{missing}}", {}), doctest::Contains("{{missing}}"));
}
