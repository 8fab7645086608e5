// The program path of `kblaster optimize`.
#include "cli/program_target.h"
#include "engine/capture/capture_shapes.h"
#include "engine/capture/program_rewrite.h"
#include "support/files.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace kblaster::cli {

namespace fs = std::filesystem;

bool is_program_source(const std::string& path, const engine::program_run& run) {
  if (fs::path(path).extension() != ".cu" || !fs::is_regular_file(path)) return false;
  fs::path sibling = path;
  sibling.replace_extension(".task.json");
  if (fs::exists(sibling)) return false;
  const auto text = support::read_file_if_exists(path).value_or("");
  return text.find("/* kblaster-task") == std::string::npos && engine::runs_as_program(text, run);
}

std::vector<std::string> command_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

program_target capture_target(engine::capture_request request) {
  program_target t;
  const auto say = [](const std::string& line) { std::cerr << "kblaster optimize: " << line << "\n"; };
  t.captured = engine::capture_program(request, say);
  t.shapes = engine::capture_shapes(request, t.captured, say);
  t.request = std::move(request);
  const auto tell = [&](const engine::capture_result& r) {
    const auto& c = r.capture;
    say("captured " + r.provenance + engine::origin_note(r) + ": " + c.name + ", grid " + engine::dims_text(c.grid) + " x block " +
        engine::dims_text(c.block) + ", " + std::to_string(c.time_ms) + " ms in the program, " + std::to_string(c.total_bytes()) +
        " bytes of memory");
  };
  tell(t.captured);
  for (const auto& s : t.shapes) tell(s);
  if (!t.shapes.empty())
    std::cerr << "kblaster optimize: every candidate is verified on all " << t.shapes.size() + 1 << " captured shapes\n";
  // What the verification will do differently (a widened tolerance, hidden pointers, …).
  for (const auto& n : t.captured.task.notes) std::cerr << "kblaster optimize: note: " << n << "\n";
  return t;
}

bool carry_back(const program_target& target, const std::string& best_source, const std::string& out_dir, bool apply,
                std::ostream& out) {
  const fs::path source = fs::absolute(target.request.source);
  const auto program = support::read_file(source);
  const auto r = engine::rewrite_program(target.request, target.captured, target.shapes, program, best_source, out_dir,
                                         [](const std::string& line) { std::cerr << "kblaster optimize: " << line << "\n"; });
  out << "  your program, rewritten: " << r.edited_path << " (diff: " << r.diff_path << ")\n";
  switch (r.check) {
    case engine::rewrite_check::launch_changed:
      out << "  the rewrite also changes the launch, from <<<" << r.edit.captured_launch << ">>> to <<<" << r.edit.rewritten_launch
          << ">>>, and it cannot be carried to your call site";
      for (const auto& s : r.edit.call_sites) out << " <<<" << s << ">>>";
      out << ": " << r.launch_refusal << "; change it to match, then capture again to check; your file was left unchanged\n";
      return true;
    case engine::rewrite_check::differs:
      out << "  the edited program does NOT reproduce the verified outputs: " << r.mismatch << "; your file was left unchanged\n";
      return false;
    case engine::rewrite_check::reproduced:
      break;
  }
  if (r.launch_sites > 0)
    out << "  the rewrite's launch <<<" << r.edit.rewritten_launch << ">>> was carried to " << r.launch_sites
        << " call site(s) of " << r.edit.call_sites.size() << " in your program, in its own terms (see the diff)\n";
  char times[96];
  std::snprintf(times, sizeof times, "%.4f ms in the program, was %.4f ms", r.recaptured_ms, target.captured.capture.time_ms);
  out << (r.replayed ? "  the edited program's recorded re-capture (replayed: nothing was built or run) has the same outputs ("
                     : "  the edited program builds, runs and re-captures to the same outputs (")
      << times << ")";
  if (r.shapes_reproduced > 1) out << ", on all " << r.shapes_reproduced << " captured shapes";
  out << "\n";
  if (apply) {
    const fs::path backup = fs::path(out_dir) / (source.filename().string() + ".orig");
    support::write_file_atomically(backup, program);
    support::write_file_atomically(source, r.edit.edited);
    out << "  applied to " << source.string() << " (the original is kept as " << backup.string() << ")\n";
  }
  return true;
}

}  // namespace kblaster::cli
