// `kblaster kb ...`: inspect, seed, export, import and revert the knowledge base.
#include "cli/command_registry.h"
#include "support/text.h"
#include "kb/knowledge_base.h"
#include "kb/location.h"
#include "kb/schema.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace {

using json = nlohmann::json;
namespace kbns = kblaster::kb;

struct kb_options {
  std::string path;
  bool json = false;
  std::string state, file, arch, policy = "ucb", primary;
  std::vector<std::string> secondary;
  std::int64_t revert_id = 0, show_id = 0;
  std::size_t limit = 20, k = 3;
  std::uint64_t seed = 0;
  double temperature = 0.5;
};

std::string kind_name(kbns::error_kind k) {
  switch (k) {
    case kbns::error_kind::not_sqlite: return "not_sqlite";
    case kbns::error_kind::foreign: return "foreign";
    case kbns::error_kind::corrupt: return "corrupt";
    case kbns::error_kind::too_new: return "too_new";
    case kbns::error_kind::read_only: return "read_only";
    case kbns::error_kind::cannot_open: return "cannot_open";
    case kbns::error_kind::busy: return "busy";
    case kbns::error_kind::io: return "io";
    case kbns::error_kind::not_found: return "not_found";
    case kbns::error_kind::invalid_argument: return "invalid_argument";
    case kbns::error_kind::conflict: return "conflict";
    default: return "internal";
  }
}

kbns::knowledge_base open_kb(const kb_options& o, bool write) {
  kbns::open_options opts;
  opts.access = write ? kbns::open_options::access_mode::read_write : kbns::open_options::access_mode::automatic;
  opts.check_integrity = true;  // a CLI run can afford a quick_check and gives a clear message
  return kbns::knowledge_base::open(o.path.empty() ? kbns::default_kb_path() : std::filesystem::path(o.path), opts);
}

json stats_json(const kbns::optimization& o) {
  const auto& s = o.statistics;
  return {{"technique", o.technique}, {"category", o.category}, {"prior_speedup", o.prior_speedup},
          {"predicted_speedup", o.predicted_speedup}, {"confidence", o.confidence}, {"arch", o.arch},
          {"attempts", s.attempts}, {"compile_failures", s.compile_failures},
          {"incorrect_results", s.incorrect}, {"successes", s.successes},
          {"mean_log_speedup", s.mean_log_speedup}, {"variance_log_speedup", s.variance_log_speedup()},
          {"last_used", s.last_used ? json(*s.last_used) : json(nullptr)}, {"note", o.note},
          {"description", o.description},
          {"search_credit", {{"steps", s.credit.steps}, {"gains", s.credit.gains}, {"new_bests", s.credit.new_bests},
                             {"best_speedup", std::exp(s.credit.best_log_gain)},
                             {"best_parameters", s.credit.best_parameters}}}};
}


std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "-" : out;
}

int cmd_init(const kb_options& o) {
  auto kb = open_kb(o, true);
  const auto s = kb.summary();
  if (o.json) std::cout << json{{"path", s.path}, {"schema_version", s.schema_version}, {"states", s.states}, {"techniques", s.techniques}}.dump(2) << "\n";
  else std::cout << "KB ready at " << s.path << " (schema " << s.schema_version << ", " << s.states << " states, " << s.techniques << " techniques)\n";
  return 0;
}

int cmd_stats(const kb_options& o) {
  auto kb = open_kb(o, false);
  const auto s = kb.summary();
  if (o.json) {
    std::cout << json{{"path", s.path}, {"backend", s.backend}, {"schema_version", s.schema_version}, {"read_only", s.read_only},
                      {"states", s.states}, {"techniques", s.techniques}, {"optimizations", s.optimizations},
                      {"attempts", s.attempts}, {"correct_attempts", s.correct_attempts},
                      {"successful_attempts", s.successful_attempts}, {"attempts_by_arch", s.attempts_by_arch},
                      {"attempts_by_user", s.attempts_by_user}, {"updates_by_user", s.updates_by_user},
                      {"lessons", s.lessons}, {"transitions", s.transitions}, {"updates", s.updates},
                      {"file_bytes", s.file_bytes}}.dump(2) << "\n";
    return 0;
  }
  std::cout << "path           " << s.path << (s.read_only ? " (read-only)" : "") << "\n"
            << "backend        " << s.backend << "\n"
            << "schema         " << s.schema_version << "\n"
            << "states         " << s.states << "\ntechniques     " << s.techniques
            << "\noptimizations  " << s.optimizations << "\nattempts       " << s.attempts << " ("
            << s.correct_attempts << " correct, " << s.successful_attempts << " faster)\n";
  for (const auto& [arch, n] : s.attempts_by_arch) std::cout << "  on " << (arch.empty() ? "?" : arch) << ": " << n << "\n";
  // Who taught them ("" for what older KernelBlasters wrote without saying).
  for (const auto& [user, n] : s.attempts_by_user) std::cout << "  by " << (user.empty() ? "?" : user) << ": " << n << "\n";
  std::cout << "lessons        " << s.lessons << "\ntransitions    " << s.transitions << "\nupdates        "
            << s.updates << "\n";
  for (const auto& [user, n] : s.updates_by_user) std::cout << "  by " << (user.empty() ? "?" : user) << ": " << n << "\n";
  std::cout << (s.backend == "postgresql" ? "database size  " : "file size      ") << s.file_bytes << " bytes\n";
  return 0;
}

int cmd_states(const kb_options& o) {
  auto kb = open_kb(o, false);
  const auto states = kb.states();
  if (o.json) {
    json a = json::array();
    for (const auto& s : states)
      a.push_back({{"name", s.name}, {"primary_bottleneck", s.primary_bottleneck}, {"secondary_characteristics", s.secondary},
                   {"scope", s.scope}, {"origin", s.origin}, {"description", s.description}});
    std::cout << a.dump(2) << "\n";
    return 0;
  }
  for (const auto& s : states)
    std::cout << std::left << std::setw(38) << s.name << std::setw(20) << s.primary_bottleneck << std::setw(8) << s.scope
              << join(s.secondary) << "\n";
  return 0;
}

int cmd_show(const kb_options& o) {
  auto kb = open_kb(o, false);
  const auto s = kb.find_state(o.state);
  if (!s) throw kbns::kb_error(kbns::error_kind::not_found, "no state named '" + o.state + "' (see `kblaster kb states`)");
  const auto opts = kb.optimizations(o.state, o.arch);
  const auto lessons = kb.lessons(o.state);
  const auto trans = kb.transitions_from(o.state);
  if (o.json) {
    json j = {{"name", s->name}, {"primary_bottleneck", s->primary_bottleneck}, {"secondary_characteristics", s->secondary},
              {"criteria", s->criteria}, {"scope", s->scope}, {"origin", s->origin}, {"description", s->description},
              {"notes", s->notes}, {"optimizations", json::array()}, {"lessons", json::array()}, {"transitions", json::array()}};
    for (const auto& x : opts) j["optimizations"].push_back(stats_json(x));
    for (const auto& l : lessons) j["lessons"].push_back({{"technique", l.technique}, {"arch", l.arch}, {"text", l.text}, {"provenance", l.provenance}, {"created_at", l.created_at}});
    for (const auto& t : trans) j["transitions"].push_back({{"technique", t.technique}, {"to", t.to_state}, {"count", t.count}, {"mean_log_speedup", t.mean_log_speedup}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << s->name << "  [" << s->primary_bottleneck << "; " << join(s->secondary) << "; scope " << s->scope << "; " << s->origin << "]\n"
            << s->description << "\n\n";
  std::cout << std::left << std::setw(36) << "technique" << std::setw(10) << "predicted" << std::setw(8) << "conf" << std::setw(10)
            << "attempts" << std::setw(10) << "successes" << std::setw(8) << "arch" << "steps kept (gains/steps, best, winner)\n";
  for (const auto& x : opts) {
    std::cout << std::setw(36) << x.technique << std::setw(10) << kblaster::support::fixed_text(x.predicted_speedup, 2) << std::setw(8) << kblaster::support::fixed_text(x.confidence, 2)
              << std::setw(10) << x.statistics.attempts << std::setw(10) << x.statistics.successes << std::setw(8) << x.arch;
    if (const auto& k = x.statistics.credit; k.steps > 0)
      std::cout << k.gains << "/" << k.steps << ", " << kblaster::support::fixed_text(std::exp(k.best_log_gain), 2) << "x"
                << (k.best_parameters.is_object() ? ", " + k.best_parameters.dump() : std::string());
    std::cout << "\n";
  }
  if (!lessons.empty()) std::cout << "\nlessons:\n";
  for (const auto& l : lessons) std::cout << "  - " << (l.technique.empty() ? "" : l.technique + ": ") << l.text << " (" << l.provenance << ")\n";
  if (!trans.empty()) std::cout << "\ntransitions:\n";
  for (const auto& t : trans) std::cout << "  " << t.technique << " -> " << t.to_state << "  x" << t.count << "  mean speedup " << kblaster::support::fixed_text(std::exp(t.mean_log_speedup), 2) << "\n";
  return 0;
}

int cmd_export(const kb_options& o) {
  auto kb = open_kb(o, false);
  const std::string text = kb.export_json().dump(2) + "\n";
  if (o.file == "-") {
    std::cout << text;
    return 0;
  }
  // Write beside the target and rename, so an interrupted export never leaves half a file.
  const std::string tmp = o.file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw kbns::kb_error(kbns::error_kind::cannot_open, "cannot write " + tmp + ": " + std::strerror(errno));
    out << text;
    if (!out.flush()) throw kbns::kb_error(kbns::error_kind::io, "writing " + tmp + " failed");
  }
  std::filesystem::rename(tmp, o.file);
  if (o.json) std::cout << json{{"file", o.file}, {"bytes", text.size()}}.dump() << "\n";
  else std::cout << "exported " << kb.summary().states << " states to " << o.file << "\n";
  return 0;
}

int cmd_import(const kb_options& o) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) throw kbns::kb_error(kbns::error_kind::cannot_open, "cannot read " + o.file + ": " + std::strerror(errno));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::parse_error& e) {
    throw kbns::kb_error(kbns::error_kind::invalid_argument, o.file + " is not valid JSON: " + e.what());
  }
  auto kb = open_kb(o, true);
  const auto r = kb.import_json(doc, kbns::update_cause{"import", "kblaster kb import " + o.file, {}});
  if (o.json)
    std::cout << json{{"update_id", r.update_id}, {"states", r.states}, {"techniques", r.techniques}, {"optimizations", r.optimizations},
                      {"lessons", r.lessons}, {"transitions", r.transitions}}.dump(2) << "\n";
  else
    std::cout << "imported " << r.states << " states, " << r.optimizations << " optimizations, " << r.lessons << " lessons, "
              << r.transitions << " transitions (update " << r.update_id << "; undo with `kblaster kb history --revert "
              << r.update_id << "`)\n";
  return 0;
}

json record_json(const kbns::update_record& r) {
  return {{"id", r.id}, {"created_at", r.created_at}, {"cause", r.cause.kind}, {"detail", r.cause.detail},
          {"attempt_ids", r.cause.attempt_ids}, {"reverted_by", r.reverted_by ? json(*r.reverted_by) : json(nullptr)},
          {"changes", r.changes}};
}

int cmd_history(const kb_options& o) {
  if (o.revert_id) {
    auto kb = open_kb(o, true);
    const auto id = kb.revert(o.revert_id);
    if (o.json) std::cout << json{{"reverted", o.revert_id}, {"update_id", id}}.dump() << "\n";
    else std::cout << "reverted update " << o.revert_id << " (as update " << id << ")\n";
    return 0;
  }
  auto kb = open_kb(o, false);
  if (o.show_id) {
    const auto r = kb.find_update(o.show_id);
    if (!r) throw kbns::kb_error(kbns::error_kind::not_found, "no update with id " + std::to_string(o.show_id));
    std::cout << record_json(*r).dump(2) << "\n";
    return 0;
  }
  const auto list = kb.history(o.limit);
  if (o.json) {
    json a = json::array();
    for (const auto& r : list) a.push_back(record_json(r));
    std::cout << a.dump(2) << "\n";
    return 0;
  }
  for (const auto& r : list)
    std::cout << std::left << std::setw(7) << r.id << std::setw(26) << r.created_at << std::setw(18) << r.cause.kind
              << std::setw(5) << r.changes.dump() << (r.reverted_by ? "[reverted by " + std::to_string(*r.reverted_by) + "] " : "")
              << r.cause.detail.substr(0, 80) << "\n";
  return 0;
}

int cmd_select(const kb_options& o) {
  auto kb = open_kb(o, false);
  kbns::selection_request req;
  req.state = o.state;
  req.arch = o.arch;
  req.k = o.k;
  req.seed = o.seed;
  req.temperature = o.temperature;
  const auto p = kbns::parse_policy(o.policy);
  if (!p) throw kbns::kb_error(kbns::error_kind::invalid_argument, "unknown policy '" + o.policy + "' (ucb, weighted, mean or thompson)");
  req.policy = *p;
  const auto picks = kb.select(req);
  json a = json::array();
  for (const auto& c : picks) a.push_back({{"technique", c.opt.technique}, {"score", c.score}, {"reason", c.reason}, {"description", c.opt.description}});
  if (o.json) std::cout << a.dump(2) << "\n";
  else
    for (const auto& c : picks) std::cout << std::left << std::setw(36) << c.opt.technique << std::setw(8) << kblaster::support::fixed_text(c.score, 2) << c.reason << "\n";
  return 0;
}

int cmd_match(const kb_options& o) {
  auto kb = open_kb(o, false);
  const auto m = kb.match_state(o.primary, o.secondary, o.arch);
  if (!m) throw kbns::kb_error(kbns::error_kind::not_found, "the KB has no state for that architecture");
  if (o.json) std::cout << json{{"state", m->state}, {"score", m->score}, {"exact", m->exact}}.dump() << "\n";
  else std::cout << m->state << "  score " << kblaster::support::fixed_text(m->score, 2) << (m->exact ? " (exact)" : "") << "\n";
  return 0;
}

int guarded(const kb_options& o, int (*f)(const kb_options&)) {
  try {
    return f(o);
  } catch (const kbns::kb_error& e) {
    if (o.json) std::cout << json{{"error", {{"kind", kind_name(e.kind())}, {"message", e.what()}}}}.dump() << "\n";
    std::cerr << "kblaster kb: error: " << e.what() << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "kblaster kb: error: " << e.what() << "\n";
    return 1;
  }
}

const bool registered = kblaster::cli::register_command([](CLI::App& root) {
  auto* app = root.add_subcommand("kb", "Inspect and manage the knowledge base (states, techniques, what was learnt)");
  auto o = std::make_shared<kb_options>();
  app->add_option("--kb", o->path, "KB file, or a team server's postgresql://... URI (default $XDG_DATA_HOME/kblaster/kb.sqlite)");
  app->add_flag("--json", o->json, "Machine-readable output");
  app->require_subcommand(1);
  auto* init = app->add_subcommand("init", "Create the KB and load the seed (no-op when it exists)");
  auto* stats = app->add_subcommand("stats", "Counts of states, techniques, attempts, updates");
  auto* states = app->add_subcommand("states", "List the performance states");
  auto* show = app->add_subcommand("show", "A state with its optimizations, statistics, lessons and transitions");
  show->add_option("state", o->state, "State name")->required();
  show->add_option("--arch", o->arch, "Statistics for this architecture family (e.g. sm_80)");
  auto* exp = app->add_subcommand("export", "Write the KB as JSON keyed by state ('-' for stdout)");
  exp->add_option("file", o->file, "Output file")->required();
  auto* imp = app->add_subcommand("import", "Merge a JSON KB (from `kb export`) into this one");
  imp->add_option("file", o->file, "Input file")->required()->check(CLI::ExistingFile);
  auto* hist = app->add_subcommand("history", "The log of KB updates; --revert ID undoes one");
  hist->add_option("--revert", o->revert_id, "Update id to revert");
  hist->add_option("--show", o->show_id, "Print one update with its changes");
  hist->add_option("--limit", o->limit, "How many updates to list (0: all)");
  auto* sel = app->add_subcommand("select", "Which techniques the policy would try next in a state");
  sel->add_option("state", o->state, "State name")->required();
  sel->add_option("--arch", o->arch, "Architecture family");
  sel->add_option("--policy", o->policy, "ucb (the default), weighted, mean or thompson");
  sel->add_option("-k", o->k, "How many techniques");
  sel->add_option("--seed", o->seed, "Random seed");
  sel->add_option("--temperature", o->temperature, "Weighted policy temperature");
  auto* match = app->add_subcommand("match", "The KB state closest to a performance signature");
  match->add_option("primary", o->primary, "Primary bottleneck, e.g. memory_bound_dram")->required();
  match->add_option("--secondary", o->secondary, "Secondary characteristics");
  match->add_option("--arch", o->arch, "Architecture family");
  for (auto* sub : {init, stats, states, show, exp, imp, hist, sel, match}) sub->fallthrough();
  return kblaster::cli::command{app, [=] {
    if (init->parsed()) return guarded(*o, cmd_init);
    if (stats->parsed()) return guarded(*o, cmd_stats);
    if (states->parsed()) return guarded(*o, cmd_states);
    if (show->parsed()) return guarded(*o, cmd_show);
    if (exp->parsed()) return guarded(*o, cmd_export);
    if (imp->parsed()) return guarded(*o, cmd_import);
    if (hist->parsed()) return guarded(*o, cmd_history);
    if (sel->parsed()) return guarded(*o, cmd_select);
    if (match->parsed()) return guarded(*o, cmd_match);
    return 2;
  }};
});

}  // namespace
