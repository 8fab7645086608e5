// kblaster.createTask: scaffolds NAME.task.json beside the file (inputs inferred from the
// kernel's parameters) and a kb_forward stub when the file has none, applied through
// workspace/applyEdit so that the user can undo it. With a model configured, asking it to
// write the reference is a TODO: the scaffold's reference is a stub to be filled in.
#include "server/features/commands.h"

#include "engine/analysis/task_scaffold.h"
#include "server/features/document_edit.h"
#include "server/features/uri_path.h"
#include "server/lsp_server.h"

#include <filesystem>
#include <fstream>

namespace kblaster::server {

using protocol::error_code;
using protocol::json;
using protocol::rpc_error;

namespace {
// One sentence for the user: what the scaffold wrote where, and what is left to them.
std::string what_was_written(const engine::task_scaffold& scaffold, const std::string& cu_path, int stub_line,
                             bool applied) {
  namespace fs = std::filesystem;
  const auto names = [](const json& list) {
    std::string out;
    for (const auto& t : list) out += (out.empty() ? "" : ", ") + t.value("name", std::string("?")) +
                                     (t.contains("initial_from") ? " (in place)" : "");
    return out.empty() ? std::string("none") : out;
  };
  std::string said = (applied ? "Created " : "Proposed ") + fs::path(scaffold.task_path).filename().string() +
                     " beside " + fs::path(cu_path).filename().string() + ": inputs " + names(scaffold.task["inputs"]) +
                     "; outputs " + names(scaffold.task.value("outputs", json::array()));
  std::string fill_in;
  for (const auto& sc : scaffold.task.value("scalars", json::array()))
    if (sc["value"].is_null()) fill_in += (fill_in.empty() ? "" : ", ") + sc.value("name", std::string("?"));
  if (!fill_in.empty()) said += "; fill in the value of " + fill_in + " (no launch in the file gives it)";
  if (!scaffold.entry_stub.empty())
    said += ". Added kb_forward at the end of " + fs::path(cu_path).filename().string() + " (line " +
            std::to_string(stub_line) + ")" + (applied ? ", unsaved: review it and save the file" : "");
  return said + ". Write the reference in the task's \"reference\".";
}

}  // namespace

json create_task_command(const command_args& args, request_context& ctx, editor_state& state) {
  // Not watched: the edit this proposes changes the document (the kb_forward stub), and that
  // change must not cancel the request that made it (the client would lose the task's path);
  // the edit names the version it was made for, which the client checks instead.
  const auto doc = ctx.server().documents().get(args.uri);
  if (!doc) throw rpc_error(error_code::invalid_params, "invalid params: document " + args.uri + " is not open");
  const auto path = uri_to_path(args.uri);
  if (!path) throw rpc_error(error_code::invalid_params, "kblaster.createTask: save the file first (" + args.uri + " is not a file)");
  const engine::cuda_symbol* kernel = nullptr;
  for (const auto& s : doc->symbols())
    if (s.kind == engine::cuda_symbol_kind::global_kernel && s.is_definition && s.name == args.kernel) kernel = &s;
  if (!kernel) throw rpc_error(error_code::invalid_params, "kblaster.createTask: no __global__ kernel named '" + args.kernel + "' in " + args.uri);
  const auto scaffold = engine::scaffold_task(*path, doc->text(), *kernel);
  const bool exists = std::filesystem::exists(scaffold.task_path);
  if (exists) throw rpc_error(error_code::invalid_params, "kblaster.createTask: " + scaffold.task_path + " already exists");

  json document_changes = json::array();
  const std::string task_uri = path_to_uri(scaffold.task_path);
  bool written = false;
  if (state.can_create_files()) {
    document_changes.push_back({{"kind", "create"}, {"uri", task_uri}, {"options", {{"ignoreIfExists", true}}}});
    document_changes.push_back({{"textDocument", {{"uri", task_uri}, {"version", nullptr}}},
                                {"edits", json::array({{{"range", protocol::range{}}, {"newText", scaffold.task_text}}})}});
  } else {
    // The client cannot create files through an edit: write it ourselves (it did not exist).
    std::ofstream out(scaffold.task_path);
    out << scaffold.task_text;
    if (!out) throw std::runtime_error("cannot write " + scaffold.task_path);
    written = true;
  }
  json edits = json::array();
  if (!scaffold.entry_stub.empty()) {
    const auto end = doc->lines().position_of(doc->text().size());
    std::string stub = scaffold.entry_stub;
    if (!doc->text().empty() && doc->text().back() != '\n') stub = "\n" + stub;
    if (scaffold.needs_dlpack_include)
      edits.push_back({{"range", protocol::range{}}, {"newText", "#include <dlpack/dlpack.h>\n"}});
    edits.push_back({{"range", protocol::range{end, end}}, {"newText", stub}});
  }
  json edit;
  if (state.can_create_files()) {
    if (!edits.empty())
      document_changes.push_back({{"textDocument", {{"uri", args.uri}, {"version", doc->version()}}}, {"edits", edits}});
    edit = {{"documentChanges", document_changes}};
  } else {
    edit = {{"changes", json::object({{args.uri, edits}})}};
  }
  bool applied = edits.empty() && written;
  if (!edits.empty() || !written) {
    applied = apply_workspace_edit(ctx.server(), "Create a task for " + args.kernel, edit);
  }
  return {{"taskPath", scaffold.task_path},
          {"applied", applied},
          {"entryPointAdded", !scaffold.entry_stub.empty()},
          {"message", what_was_written(scaffold, *path, doc->lines().position_of(doc->text().size()).line + 1, applied)}};
}

}  // namespace kblaster::server
