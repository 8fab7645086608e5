// textDocument/publishDiagnostics from the analysis service: compiler errors and warnings at
// their ranges, register spills, and (after a live profile) ncu's top findings on the kernel's
// name and the source lines that hurt. Runs on open and save, in the background.
#include "server/features/diagnostics.h"
#include "support/text.h"

#include "engine/profile/source_attribution.h"

#include "server/features/cuda_document.h"
#include "server/features/cuda_symbol_text.h"
#include "server/features/uri_path.h"
#include "server/features/refusal.h"
#include "server/lsp_server.h"

#include <map>

namespace kblaster::server {

using protocol::json;

namespace {

enum severity { error = 1, warning = 2, information = 3, hint = 4 };

// How many ncu findings each kernel shows: more would drown the compiler's own diagnostics.
constexpr std::size_t findings_per_kernel = 3;

// The range of a 1-based line and column: the word at the column, or the whole line.
protocol::range line_range(const document_snapshot& doc, int line, int column) {
  const std::string& text = doc.text();
  const auto last_line = static_cast<int>(doc.lines().line_count()) - 1;
  const int l = std::clamp(line - 1, 0, std::max(0, last_line));
  const std::size_t start = doc.lines().offset_of({l, 0});
  std::size_t end = text.find('\n', start);
  if (end == std::string::npos) end = text.size();
  if (column <= 0) {
    std::size_t first = start;  // skip indentation: the squiggle belongs under the code
    while (first < end && (text[first] == ' ' || text[first] == '\t')) ++first;
    return doc.to_range({first, end});
  }
  const std::size_t at = std::min(start + static_cast<std::size_t>(column - 1), end);
  std::size_t word_end = at;
  while (word_end < end && identifier_char(text[word_end])) ++word_end;
  if (word_end == at && at < end) ++word_end;
  return doc.to_range({at, word_end});
}

json diagnostic_json(const protocol::range& r, int severity, const std::string& source, const std::string& message,
                     const std::string& code = "") {
  json d = {{"range", r}, {"severity", severity}, {"source", source}, {"message", message}};
  if (!code.empty()) d["code"] = code;
  return d;
}

}  // namespace

json to_lsp_diagnostics(const engine::file_analysis& a, const document_snapshot& doc) {
  json out = json::array();
  const auto kernels = kernel_name_ranges(doc);
  const auto kernel_at = [&](const std::string& mangled_or_name) -> std::optional<protocol::range> {
    for (const auto& [name, r] : kernels)
      if (mangled_or_name == name || mangled_or_name.find(std::to_string(name.size()) + name) != std::string::npos)
        return r;
    return std::nullopt;
  };
  for (const auto& d : a.diagnostics()) {
    const int sev = d.severity == engine::diagnostic_severity::error     ? error
                    : d.severity == engine::diagnostic_severity::warning ? warning
                                                                         : information;
    std::string message = d.message;
    protocol::range r{};
    if (d.file == a.path && d.line > 0) {
      r = line_range(doc, d.line, d.column);
    } else if (const auto k = !d.kernel.empty() ? kernel_at(d.kernel) : std::nullopt) {
      r = *k;  // ptxas names the entry, not a line
    } else if (!d.file.empty() && d.file != a.path) {
      message = d.file + (d.line ? ":" + std::to_string(d.line) : "") + ": " + message;  // in a header
    }
    out.push_back(diagnostic_json(r, sev, d.tool.empty() ? "nvcc" : d.tool, message, d.code));
  }
  // A task file that cannot be used, on the kernels it is for (its kb_forward's; every kernel
  // when it launches none): the file and the field are in the engine's words.
  if (!a.task.error.empty())
    for (const auto& [name, r] : kernels)
      if (a.task.is_for(name))
        out.push_back(diagnostic_json(r, warning, "kblaster", "the task of " + name + " cannot be read: " + a.task.error,
                                      "task_unreadable"));
  // Static facts worth a mark on the kernel: spills cost every kernel that has them.
  for (const auto& k : a.static_profile.kernels) {
    const auto where = kernels.find(k.signature.function);
    if (where == kernels.end()) continue;
    for (const auto& c : k.signature.secondary)
      if (c.name == "register_spills")
        out.push_back(diagnostic_json(where->second, information, "kblaster", "register spills: " + c.evidence));
  }
  if (!a.live_profile) return out;
  const std::string tag = a.live_profile->replayed_from ? "[replayed profile] " : "";
  std::map<std::string, bool> done;
  for (const auto& k : a.live_profile->kernels) {
    const auto& sig = k.signature;
    const auto where = kernels.find(sig.function);
    if (where == kernels.end() || done[sig.function]) continue;
    done[sig.function] = true;
    const engine::kernel_view& view = *a.kernel(sig.function);
    json related = json::array();
    const json here = {{"uri", doc.uri()}, {"range", where->second}};
    for (const auto& e : view.signature.primary_evidence) related.push_back({{"location", here}, {"message", e}});
    for (const auto& c : view.signature.secondary)
      related.push_back({{"location", here}, {"message", c.name + ": " + c.evidence}});
    std::size_t shown = 0;
    for (const auto& f : view.signature.findings) {
      if (shown++ >= findings_per_kernel) break;
      std::string message = tag + view.state.state + ": " + f.rule;
      if (f.estimated_speedup) message += " (est. speedup " + support::percent_text(*f.estimated_speedup, 0) + ")";
      if (!f.text.empty()) message += ": " + f.text;
      json d = diagnostic_json(where->second, information, "kblaster", message, f.rule);
      if (!related.empty()) d["relatedInformation"] = related;
      out.push_back(std::move(d));
    }
    if (shown == 0) {
      json d = diagnostic_json(where->second, information, "kblaster", tag + "state: " + view.state.state);
      if (!related.empty()) d["relatedInformation"] = related;
      out.push_back(std::move(d));
    }
    for (const auto& h : view.hot_lines) {
      // A line of a toolkit header is never one of this document's.
      if (h.line <= 0 || engine::is_toolkit_source(h.file)) continue;
      std::string message = tag + std::string(engine::to_string(h.reason)) + ": " + support::percent_text(h.share * 100, 0) +
                            " of " + sig.function + "'s total";
      if (!h.top_stall.empty()) message += ", mostly " + h.top_stall;
      if (!h.inlined_from.empty()) message += "; " + support::percent_text(h.inlined_share * 100, 0) + " of it in " + h.inlined_from + " (inlined)";
      out.push_back(diagnostic_json(line_range(doc, h.line, 0), hint, "kblaster", message));
    }
  }
  return out;
}

std::shared_ptr<const engine::file_analysis> analyze_and_publish(lsp_server& server, editor_state& state,
                                                                const document_ptr& doc, bool wait_for_debounce,
                                                                std::optional<std::uint64_t> ticket,
                                                                std::function<void(const std::string&)> progress,
                                                                std::stop_token stop) {
  const auto settings = read_editor_settings(server.settings());
  auto& analyzer = state.analyzer(settings);
  const std::string missing = analyzer.capabilities().missing();
  // Said once. VS Code names the extension under every notification: no prefix there.
  if (!missing.empty() && state.first_time("capabilities"))
    server.notify("window/showMessage",
                  {{"type", 3}, {"message", (state.editor() == client_editor::vscode ? "" : "KernelBlaster: ") + missing}});
  engine::file_analysis_options options;
  options.arch = settings.arch;
  options.profile_live = settings.profile_on_save;
  // Profiling runs the workspace's program: not before the user trusts the workspace.
  if (!state.workspace_trusted()) options.live_refusal = untrusted_note("Profiling is off", state.editor());
  // A program's kernels are profiled from their captured launches, the program run as Optimize
  // runs it (run.*).
  options.program_capture = program_run_of(settings);
  options.harness = settings.harness;
  options.progress = std::move(progress);
  // The debounce waits for a later save; on a single thread none can be read meanwhile.
  options.debounce = std::chrono::milliseconds(wait_for_debounce && !server.single_threaded() ? settings.debounce_ms : 0);
  // A newer save or closing the document stops this analysis inside the analyzer; `stop` is
  // the request's own cancel.
  auto result = analyzer.analyze(document_path(*doc), doc->text(), options, std::move(stop), ticket);
  if (!result) return nullptr;  // a newer save took over, or the request was cancelled
  // Said once, and only where trust is what stands between this file and a profile. Not to VS
  // Code: its Restricted Mode says so, and the extension's status bar item with the remedy.
  if (result->live_refused && state.editor() != client_editor::vscode && state.first_time("untrusted"))
    server.notify("window/showMessage", {{"type", 3}, {"message", "KernelBlaster: " + result->live_skipped}});
  // A document closed meanwhile keeps no diagnostics.
  if (!server.documents().get(doc->uri())) return result;
  state.diagnostics().publish(server, doc->uri(), doc->version(), diagnostics_origin::analysis,
                              to_lsp_diagnostics(*result, *doc));
  // The lenses show the analysis: without a refresh a client keeps the lenses it fetched before
  // the save (a state above a kernel that no longer compiles) until the text changes again.
  if (state.code_lens_refresh_support())
    server.call_client("workspace/codeLens/refresh", nullptr, std::chrono::seconds(5));
  return result;
}

void publish_analysis(lsp_server& server, editor_state& state, document_ptr doc) {
  if (!is_cuda_document(*doc)) return;
  if (!read_editor_settings(server.settings()).analyze) return;
  // The ticket is taken here, in message order; the pool may start this work after a later save's.
  const auto ticket = state.analyzer(read_editor_settings(server.settings())).reserve(document_path(*doc));
  server.run_in_background(
      [&server, &state, doc = std::move(doc), ticket] { analyze_and_publish(server, state, doc, true, ticket); });
}

void clear_analysis(lsp_server& server, editor_state& state, const std::string& uri) {
  state.analyzer(read_editor_settings(server.settings())).forget(uri_to_path(uri).value_or("untitled.cu"));
  state.diagnostics().clear(server, uri);
}

}  // namespace kblaster::server
