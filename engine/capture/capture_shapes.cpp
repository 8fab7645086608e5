// Capturing more shapes of a kernel, moving a rewrite onto them, and checking it there.
#include "engine/capture/capture_shapes.h"
#include "engine/capture/capture_launcher.h"
#include "engine/capture/launch_carry.h"
#include "support/files.h"
#include "support/text.h"

#include <string_view>

namespace kblaster::engine {

namespace {

std::vector<std::string> shape_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) lines.push_back(text.substr(start, nl - start));
  lines.push_back(text.substr(start));
  return lines;
}

// For each line of `b`, the line of `a` it is matched to by a longest common subsequence, or -1.
std::vector<int> matched_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const auto n = a.size(), m = b.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<int> match(m, -1);
  for (std::size_t i = 0, j = 0; i < n && j < m;) {
    if (a[i] == b[j]) {
      match[j] = static_cast<int>(i);
      ++i, ++j;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      ++i;
    } else {
      ++j;
    }
  }
  return match;
}

bool is_comment(std::string_view line) { return support::trim(line).starts_with("//"); }

// `line`'s launch with every element of its configuration that equals the first shape's
// generated one replaced by the other shape's.
std::string carried_to_shape(const std::string& line, const std::vector<std::string>& first, const std::vector<std::string>& other) {
  const auto open = line.find("<<<");
  const auto close = line.find(">>>", open);
  if (close == std::string::npos) return line;
  auto elements = split_top_level(line.substr(open + 3, close - open - 3));
  for (std::size_t k = 0; k < elements.size() && k < first.size() && k < other.size(); ++k)
    if (elements[k] == first[k]) elements[k] = other[k];
  return line.substr(0, open + 3) + support::join(elements, ", ") + line.substr(close);
}

}  // namespace

std::string transplant_rewrite(const std::string& first_generated, const std::string& rewritten, const std::string& other_generated) {
  const auto first_at = launcher_start(first_generated), other_at = launcher_start(other_generated), rewrite_at = launcher_start(rewritten);
  if (first_at == std::string::npos || other_at == std::string::npos)
    throw capture_error("a shape's kernel.cu has no launcher marker: it was not written by kblaster capture");
  if (rewrite_at == std::string::npos)
    throw capture_error("the rewrite dropped the line \"" + std::string(launcher_marker) + "…\", which separates the kernel from the launcher");
  if (first_generated.compare(0, first_at, other_generated, 0, other_at) != 0)
    throw capture_error("the shapes were captured from different sources: capture them again");
  const auto first = shape_lines(first_generated.substr(first_at));
  const auto other = shape_lines(other_generated.substr(other_at));
  const auto rewrite = shape_lines(rewritten.substr(rewrite_at));
  if (first.size() != other.size())
    throw capture_error("the other launch's memory is laid out differently (its launcher has " + std::to_string(other.size()) +
                        " lines, the first's " + std::to_string(first.size()) + ")");
  const auto match = matched_lines(first, rewrite);
  std::vector<bool> kept(first.size(), false);
  for (const int i : match)
    if (i >= 0) kept[static_cast<std::size_t>(i)] = true;
  for (std::size_t i = 0; i < first.size(); ++i)
    if (!kept[i] && first[i] != other[i] && first[i].find("<<<") == std::string::npos && !is_comment(first[i]))
      throw capture_error("the rewrite changed the launcher's line \"" + std::string(support::trim(first[i])) +
                          "\", which holds a value of the captured launch: keep it and compute from the parameters' names instead");
  const auto first_config = split_top_level(launch_configuration(first_generated.substr(first_at)));
  const auto other_config = split_top_level(launch_configuration(other_generated.substr(other_at)));
  std::vector<std::string> out;
  for (std::size_t j = 0; j < rewrite.size(); ++j) {
    if (match[j] >= 0) out.push_back(other[static_cast<std::size_t>(match[j])]);
    else if (rewrite[j].find("<<<") != std::string::npos) out.push_back(carried_to_shape(rewrite[j], first_config, other_config));
    else out.push_back(rewrite[j]);
  }
  return rewritten.substr(0, rewrite_at) + support::join(out, "\n");
}

std::vector<capture_result> capture_shapes(const capture_request& request, const capture_result& first,
                                           const std::function<void(const std::string&)>& progress, std::stop_token stop) {
  std::vector<capture_result> shapes;
  const auto generated = support::read_file(first.task.kernel_path);
  for (std::size_t i = 0; i < request.run.shapes.size(); ++i) {
    auto shape = request;
    shape.run.args = request.run.shapes[i];
    shape.run.shapes.clear();
    shape.task_name = first.task.name + "_shape" + std::to_string(i + 2);
    capture_result r;
    try {
      r = capture_program(shape, progress, stop);
    } catch (const capture_error& e) {
      throw capture_error("shape " + std::to_string(i + 2) + " (" + support::join(shape.run.args, " ") + "): " + e.what());
    }
    if (r.capture.name != first.capture.name)
      throw capture_error("shape " + std::to_string(i + 2) + " (" + r.provenance + ") launched " + r.capture.name + ", the first " +
                          first.capture.name);
    // Its launcher must line up with the first's, or no rewrite could be moved onto it.
    try {
      (void)transplant_rewrite(generated, generated, support::read_file(r.task.kernel_path));
    } catch (const capture_error& e) {
      throw capture_error("shape " + std::to_string(i + 2) + " (" + r.provenance + "): " + e.what());
    }
    shapes.push_back(std::move(r));
  }
  return shapes;
}

shape_check shape_check_of(const capture_result& first, const std::vector<capture_result>& others) {
  shape_check c{first.task.name, first.provenance, support::read_file(first.task.kernel_path), {}};
  for (const auto& o : others) c.others.push_back({o.task.name, o.provenance, support::read_file(o.task.kernel_path)});
  return c;
}

shape_checking_evaluator::shape_checking_evaluator(optimize::evaluator& inner, shape_check shapes)
    : inner_(inner), shapes_(std::move(shapes)) {}

optimize::evaluation shape_checking_evaluator::evaluate(const std::string& task_name, const std::string& source,
                                                        const optimize::evaluation_request& request) {
  auto e = inner_.evaluate(task_name, source, request);
  if (task_name != shapes_.task || !e.correct || optimize::cancelled(e)) return e;
  const auto refuse = [&](const std::string& verdict, const std::string& check, const std::string& reason) {
    e.correct = false;
    e.verdict = verdict;
    e.check = check;
    e.reason = reason;
    e.runtime_ms.reset();  // a candidate that fails is neither timed nor profiled
    e.profile.reset();
    return e;
  };
  for (const auto& shape : shapes_.others) {
    std::string moved;
    try {
      moved = transplant_rewrite(shapes_.generated, source, shape.generated);
    } catch (const capture_error& x) {
      return refuse("fail", "shape", "correct on " + shapes_.label + ", but it cannot be checked on " + shape.label + ": " + x.what());
    }
    optimize::evaluation_request verify_only;
    verify_only.time = false;
    verify_only.profile = false;
    verify_only.stop = request.stop;
    const auto o = inner_.evaluate(shape.task, moved, verify_only);
    e.gpu_seconds += o.gpu_seconds;
    e.build_seconds += o.build_seconds;
    e.phases += o.phases;
    if (optimize::cancelled(o)) return refuse(o.verdict, o.check, o.reason);
    if (!o.compile_ok) e.compile_log = o.compile_log;
    if (!o.correct)
      return refuse(o.verdict.empty() ? "fail" : o.verdict, o.check.empty() ? "shape" : o.check,
                    "correct on " + shapes_.label + ", but not on " + shape.label + ": " + o.reason);
  }
  return e;
}

void shape_checking_evaluator::prepare(const std::string& task_name, const std::string& source) {
  inner_.prepare(task_name, source);
  if (task_name != shapes_.task) return;
  for (const auto& shape : shapes_.others) {
    try {
      inner_.prepare(shape.task, transplant_rewrite(shapes_.generated, source, shape.generated));
    } catch (const capture_error&) {
      // evaluate() says why; a hint needs no answer.
    }
  }
}

std::string shape_checking_evaluator::describe() const {
  std::string labels;
  for (const auto& shape : shapes_.others) labels += (labels.empty() ? "" : "; ") + shape.label;
  return inner_.describe() + ", every correct candidate verified on " + std::to_string(shapes_.others.size() + 1) +
         " captured shapes (also " + labels + ")";
}

}  // namespace kblaster::engine
