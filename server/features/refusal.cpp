// Refusals on the wire and the daemon's own words for them (refusal.h).
#include "server/features/refusal.h"

#include <cctype>
#include <filesystem>

namespace kblaster::server {

using protocol::json;

std::string_view to_string(refusal_kind kind) {
  switch (kind) {
    case refusal_kind::untrusted: return "untrusted";
    case refusal_kind::no_task: return "no_task";
    case refusal_kind::task_unreadable: return "task_unreadable";
    case refusal_kind::not_saved: return "not_saved";
    case refusal_kind::no_gpu: return "no_gpu";
    case refusal_kind::no_model: return "no_model";
  }
  return "unknown";
}

namespace {

// "Optimize" for kblaster.optimize and applyTechnique, "Profiling" for kblaster.profile.
std::string what_of(const std::string& command) { return command == "kblaster.profile" ? "Profiling" : "Optimize"; }

// `text` as a sentence: capitalised, ending in a full stop.
std::string sentence(std::string text) {
  if (text.empty()) return text;
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  if (text.back() != '.') text += '.';
  return text;
}

}  // namespace

std::string refusal::message() const {
  const std::string of_kernel = kernel.empty() ? "" : " " + kernel;
  switch (kind) {
    case refusal_kind::untrusted:
      return what_of(command) + " is off: the workspace is not trusted, and its programs are built and run only once it is.";
    case refusal_kind::no_task:
      if (const auto task_file = facts.is_object() ? facts.value("taskFile", std::string()) : std::string(); !task_file.empty())
        return "Nothing to measure" + of_kernel + " against: the file's task (" +
               std::filesystem::path(task_file).filename().string() +
               ") is another kernel's and the file has no main(). Set run.command to the program that launches it.";
      return "Nothing to measure" + of_kernel +
             " against: the file has no task and no main(). Create a task, or set run.command to the program that "
             "launches it.";
    case refusal_kind::task_unreadable:
      return sentence((kernel.empty() ? std::string("the file's task") : "the task of " + kernel) + " cannot be read" +
                      (detail.empty() ? "" : ": " + detail));
    case refusal_kind::not_saved:
      return "Save " + (detail.empty() ? std::string("the file") : detail) +
             " first: the program is built and run from the file on disk.";
    case refusal_kind::no_gpu:
      // The engine's own sentence says it all (and what to do instead) when there is one.
      return detail.empty() ? "No GPU on this machine: candidates cannot be measured." : sentence(detail);
    case refusal_kind::no_model: return model_message();
  }
  return "Refused.";
}

std::string refusal::model_message() const {
  const auto fact = [&](const char* key) { return facts.is_object() ? facts.value(key, std::string()) : std::string(); };
  const std::string model = fact("model"), key_env = fact("keyEnv"), suggested = fact("suggestedProvider");
  const std::string the_model = model.empty() ? "The model" : "The model " + model;
  if (fact("reason") != "no_key" || key_env.empty())
    return sentence(the_model + " cannot be used" + (detail.empty() ? "" : ": " + detail));
  // Said once, with what to change: the provider, the variable, and where it must be set.
  std::string m = the_model + " cannot be used: its API key is read from the environment variable " + key_env + " (llm.provider " +
                  fact("provider") + (fact("providerFrom") == "default" ? ", the default" : "") +
                  "), which is unset or empty in the environment of the process that runs the KernelBlaster daemon.";
  if (!suggested.empty())
    m += " " + model + " looks like an " + (suggested == "anthropic" ? "Anthropic" : "OpenAI") + " model: set llm.provider to " +
         suggested + " (its key: " + fact("suggestedKeyEnv") + ").";
  else
    m += " Set " + key_env + " where the daemon starts, or name another variable in llm.apiKeyEnv.";
  return m;
}

json refusal::data() const {
  json d = {{"refusal", std::string(to_string(kind))}, {"command", command}};
  if (!uri.empty()) d["file"] = uri;
  if (!kernel.empty()) d["kernel"] = kernel;
  if (!detail.empty()) d["detail"] = detail;
  if (facts.is_object())
    for (const auto& [k, v] : facts.items()) d.emplace(k, v);  // never over the fields above
  return d;
}

protocol::rpc_error refusal::error() const {
  return protocol::rpc_error(protocol::error_code::request_failed, message(), data());
}

void refuse(const refusal& r) { throw r.error(); }

namespace {
// What each editor calls the thing the user trusts.
std::string_view trusted_thing(client_editor editor) {
  switch (editor) {
    case client_editor::vscode: return "folder";
    case client_editor::neovim: return "project";
    case client_editor::other: break;
  }
  return "workspace";
}
}  // namespace

std::string first_step(refusal_kind kind, client_editor editor) {
  switch (kind) {
    case refusal_kind::untrusted: return "trust this " + std::string(trusted_thing(editor)) + " first";
    case refusal_kind::no_task: return "create a task or set the program first";
    case refusal_kind::task_unreadable: return "fix its task file first";
    case refusal_kind::not_saved: return "save the file first";
    case refusal_kind::no_gpu: return "no GPU here";
    case refusal_kind::no_model: return "the model cannot be used";
  }
  return "cannot run";
}

std::string untrusted_note(std::string_view what_is_off, client_editor editor) {
  const std::string thing(trusted_thing(editor));
  std::string how;
  switch (editor) {
    case client_editor::vscode: how = "Trust it with Manage Workspace Trust."; break;
    case client_editor::neovim: how = "Trust it with :KblasterTrust."; break;
    case client_editor::other: how = "Trust it in your editor."; break;
  }
  return std::string(what_is_off) + " until you trust this " + thing + ": KernelBlaster builds and runs a " + thing +
         "'s programs only then (compiler diagnostics, registers and occupancy work meanwhile). " + how;
}

}  // namespace kblaster::server
