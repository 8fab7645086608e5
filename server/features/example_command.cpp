// kblaster.replayExample: what a machine without a GPU can run in one click. The shipped example
// (engine/optimize/example_replay: scripts/demo's session) is copied into a scratch folder and
// optimized with the options, recordings and fresh KB it was recorded with, so that the replay
// follows the recorded path to its real result; the progress, the result and every sentence say
// it is replayed from a recording, and on which GPU it was measured. The user's settings are not
// read for any of it but the replay's pace and where runs go.
#include "engine/optimize/example_replay.h"
#include "server/features/commands.h"
#include "server/features/optimize_request.h"
#include "server/lsp_server.h"
#include "server/work_done_progress.h"

#include <cstdlib>
#include <filesystem>

namespace kblaster::server {

using protocol::error_code;
using protocol::json;
using protocol::rpc_error;
namespace fs = std::filesystem;
namespace opt = engine::optimize;

namespace {

// The scratch folder: under optimize.outputDir when set, else the user's cache.
fs::path scratch_for(const editor_settings& s, const std::string& name) {
  if (!s.output_dir.empty()) return fs::path(s.output_dir) / ("example-" + name);
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path cache = xdg && *xdg ? fs::path(xdg) : fs::path(home && *home ? home : "/tmp") / ".cache";
  return cache / "kblaster" / "example-replay" / name;
}

}  // namespace

json replay_example_command(const json& arguments, request_context& ctx, editor_state&) {
  auto& server = ctx.server();
  const auto settings = read_editor_settings(server.settings());
  const auto example = opt::find_example_replay();
  if (!example)
    throw rpc_error(error_code::request_failed,
                    "kblaster.replayExample: the example's recordings are not installed beside this kblaster "
                    "(examples/example_replay.json in its source tree, or PREFIX/share/kblaster/examples/)");
  if (arguments.is_array() && !arguments.empty() && arguments[0].is_object()) {
    const auto asked = arguments[0].value("example", json());
    if (asked.is_string() && !asked.get<std::string>().empty() && asked.get<std::string>() != example->name)
      throw rpc_error(error_code::invalid_params,
                      "invalid params: 'arguments[0].example': no example named '" + asked.get<std::string>() + "' (there is " +
                          example->name + ")");
  }
  opt::optimize_request request;
  try {
    request = opt::example_request(*example, scratch_for(settings, example->name), settings.replay_pace);
  } catch (const std::exception& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.replayExample: cannot copy the example: ") + e.what());
  }
  const std::string recorded = example->recorded_on.empty() ? "" : ", recorded on an " + example->recorded_on;
  work_done_progress progress(ctx, "KernelBlaster: replaying the example " + example->name + " (REPLAYED results" + recorded + ")",
                              "");
  optimize_progress reporter(progress, ", replayed");
  const auto events = reporter.events();
  opt::optimize_outcome o;
  try {
    o = opt::optimize_file(request, events, ctx.stop_token());
  } catch (const opt::optimize_refusal& e) {
    throw rpc_error(error_code::request_failed, std::string("kblaster.replayExample: ") + e.what());
  }
  ctx.check_cancelled();
  progress.end(optimize_end_text(o));
  json result = {{"example", example->name},
                 {"bestSpeedup", o.result.best_speedup},
                 {"stopReason", o.result.stop_reason.to_string()},
                 {"candidates", o.result.candidates},
                 {"replayed", o.replayed},
                 {"reportPath", (o.out_dir / "report.md").string()},
                 {"bestPath", (o.out_dir / "best.cu").string()},
                 {"inputPath", o.task.kernel},
                 {"message", optimize_result_message(example->name, o, false)}};
  if (o.result.stop_reason == opt::stop_kind::error) result["error"] = o.result.stop_reason.error;
  if (auto gpu = recorded_gpu(o); !gpu.empty()) result["recordedOn"] = gpu;
  else if (!example->recorded_on.empty()) result["recordedOn"] = example->recorded_on;
  return result;
}

}  // namespace kblaster::server
