// The program path of `kblaster optimize`.
#include "cli/program_target.h"
#include "engine/capture/program_edit.h"
#include "engine/optimize/unified_diff.h"
#include "support/files.h"

#include <filesystem>
#include <iostream>
#include <regex>

namespace kblaster::cli {

namespace fs = std::filesystem;

bool is_program_source(const std::string& path) {
  if (fs::path(path).extension() != ".cu" || !fs::is_regular_file(path)) return false;
  fs::path sibling = path;
  sibling.replace_extension(".task.json");
  if (fs::exists(sibling)) return false;
  const auto text = support::read_file_if_exists(path).value_or("");
  static const std::regex main_function(R"(\bint\s+main\s*\()");
  return text.find("/* kblaster-task") == std::string::npos && std::regex_search(text, main_function);
}

program_target capture_target(engine::capture_request request) {
  program_target t;
  t.captured = engine::capture_program(request, [](const std::string& line) { std::cerr << "kblaster optimize: " << line << "\n"; });
  t.request = std::move(request);
  const auto& c = t.captured.capture;
  std::cerr << "kblaster optimize: captured " << t.captured.provenance << (t.captured.cached ? " (cached)" : "") << ": "
            << c.name << ", " << c.time_ms << " ms in the program, " << c.total_bytes() << " bytes of memory\n";
  return t;
}

bool carry_back(const program_target& target, const std::string& best_source, const std::string& out_dir, bool apply,
                std::ostream& out) {
  const fs::path source = fs::absolute(target.request.source);
  const auto program = support::read_file(source);
  const auto generated = support::read_file(target.captured.task.kernel_path);
  const auto edit = engine::edit_program(program, generated, best_source, target.captured.task.kernel.qualified_name);
  const fs::path edited = fs::path(out_dir) / source.filename();
  support::write_file_atomically(edited, edit.edited);
  support::write_file_atomically(fs::path(out_dir) / "program.diff",
                                 engine::optimize::unified_diff(program, edit.edited, "a/" + source.filename().string(),
                                                      "b/" + source.filename().string()));
  out << "  your program, rewritten: " << edited.string() << " (diff: " << (fs::path(out_dir) / "program.diff").string() << ")\n";
  if (edit.launch_changed) {
    out << "  the rewrite also changes the launch, for the captured shape, from <<<" << edit.captured_launch << ">>> to <<<"
        << edit.rewritten_launch << ">>>; your call site";
    for (const auto& s : edit.call_sites) out << " <<<" << s << ">>>";
    out << " was left as written: change it to match (the new configuration is in " << target.captured.task.dir
        << "'s best kernel), then capture again to check.\n";
    return true;
  }
  // Re-capture the edited copy, run as the original was, and compare what the launch left.
  auto request = target.request;
  request.source = edited.string();
  if (request.run.cwd.empty()) request.run.cwd = source.parent_path().string();
  request.nvcc_flags.push_back("-I" + source.parent_path().string());  // its own headers, as the original found them
  const auto again = engine::capture_program(request, [](const std::string& line) { std::cerr << "kblaster optimize: " << line << "\n"; });
  const auto mismatch = engine::compare_capture_outputs(target.captured.capture, again.capture, target.captured.task.views);
  if (mismatch) {
    out << "  the edited program does NOT reproduce the verified outputs: " << engine::describe(*mismatch)
        << "; your file was left unchanged\n";
    return false;
  }
  out << "  the edited program builds, runs and re-captures to the same outputs (" << again.capture.time_ms
      << " ms in the program, was " << target.captured.capture.time_ms << " ms)\n";
  if (apply) {
    const fs::path backup = fs::path(out_dir) / (source.filename().string() + ".orig");
    support::write_file_atomically(backup, program);
    support::write_file_atomically(source, edit.edited);
    out << "  applied to " << source.string() << " (the original is kept as " << backup.string() << ")\n";
  }
  return true;
}

}  // namespace kblaster::cli
