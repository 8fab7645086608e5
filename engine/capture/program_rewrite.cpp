// Carrying a rewrite back into the program and checking it by re-capture.
#include "engine/capture/program_rewrite.h"
#include "engine/capture/launch_carry.h"
#include "engine/source/kernel_parameters.h"
#include "engine/source/unified_diff.h"
#include "support/files.h"

#include <filesystem>

namespace kblaster::engine {

namespace fs = std::filesystem;

program_rewrite rewrite_program(const capture_request& request, const capture_result& captured,
                                const std::vector<capture_result>& shapes, const std::string& program_text,
                                const std::string& best_source, const std::string& out_dir,
                                const std::function<void(const std::string&)>& progress, std::stop_token stop) {
  const fs::path source = fs::absolute(request.source);
  program_rewrite r;
  r.edit = edit_program(program_text, support::read_file(captured.task.kernel_path), best_source, captured.task.kernel.qualified_name);
  if (r.edit.launch_changed) {
    // The new launch goes to every call site, in the program's terms; the re-capture below then
    // checks it on the captured shape.
    std::vector<std::string> names;
    for (const auto& p : parameters_of(captured.task.kernel.signature)) names.push_back(p.name);
    auto carried = carry_launch(r.edit.edited, r.edit.rewritten_end, captured.task.kernel.name, names, r.edit.captured_launch,
                                r.edit.rewritten_launch);
    if (carried.refusal.empty()) {
      r.edit.edited = std::move(carried.edited);
      r.launch_sites = carried.sites;
    } else {
      r.launch_refusal = std::move(carried.refusal);
    }
  }
  r.edited_path = (fs::path(out_dir) / source.filename()).string();
  r.diff_path = (fs::path(out_dir) / "program.diff").string();
  support::write_file_atomically(r.edited_path, r.edit.edited);
  const auto label = source.filename().string();
  support::write_file_atomically(r.diff_path, unified_diff(program_text, r.edit.edited, "a/" + label, "b/" + label));
  if (!r.launch_refusal.empty()) {
    r.check = rewrite_check::launch_changed;
    return r;
  }
  // The edited copy, run as the original was (its folder, its headers, its arguments), but in
  // the sandbox: it holds model-written code.
  auto again_request = request;
  again_request.source = r.edited_path;
  again_request.sandboxed = true;  // everything above the launcher may be the model's
  if (again_request.run.cwd.empty()) again_request.run.cwd = source.parent_path().string();
  again_request.nvcc_flags.push_back("-I" + source.parent_path().string());
  // Each captured run of the program again, the rewrite in place, compared with the original's
  // capture of that run; the first mismatch (which shape, allocation, element) is the verdict.
  const auto recapture_all = [&] {
    std::vector<const capture_result*> originals{&captured};
    for (const auto& s : shapes) originals.push_back(&s);
    for (std::size_t i = 0; i < originals.size(); ++i) {
      auto shape_request = again_request;
      if (i > 0) {
        shape_request.run.args = request.run.shapes.at(i - 1);
        if (progress) progress("re-capturing shape " + std::to_string(i + 1) + " of " + std::to_string(originals.size()) + ": " +
                               originals[i]->provenance);
      }
      const auto again = capture_program(shape_request, progress, stop);
      if (i == 0) {
        r.recaptured_ms = again.capture.time_ms;
        r.replayed = again.replayed;
      }
      if (const auto m = compare_capture_outputs(originals[i]->capture, again.capture, originals[i]->task.views)) {
        r.check = rewrite_check::differs;
        r.mismatch = (originals.size() > 1 ? "on " + originals[i]->provenance + ": " : std::string()) + describe(*m);
        return;
      }
      ++r.shapes_reproduced;
    }
    r.check = rewrite_check::reproduced;
  };
  // No driver here: refused before the user's file is touched or anything is built.
  if (const auto blocked = capture_blocker(again_request); !blocked.empty()) throw capture_error(blocked);
  if (request.run.command.empty()) {
    recapture_all();
  } else {
    // The user's build compiles the file where it is: the edit goes there for the check, and the
    // file (and the build, built again) is put back whatever happens; applying it is the caller's.
    again_request.source = source.string();
    const auto original = support::read_file(source);
    struct put_back {  // on every way out, exceptions included
      fs::path file;
      std::string text;
      capture_request request;
      std::function<void(const std::string&)> progress;
      ~put_back() {
        try {
          support::write_file_atomically(file, text);
          if (request.run.build.empty()) return;
          if (progress) progress("putting " + file.filename().string() + " back and building it again with your command");
          run_user_build(request, {});
        } catch (const std::exception& e) {
          if (progress) progress(std::string("putting your program back failed: ") + e.what());
        }
      }
    } restore{source, original, request, progress};
    support::write_file_atomically(source, r.edit.edited);
    recapture_all();
  }
  return r;
}

}  // namespace kblaster::engine
