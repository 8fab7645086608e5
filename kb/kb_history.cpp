// Reading the update log and reverting an update.
#include "kb/change_log.h"
#include "kb/knowledge_base.h"
#include "kb/log_format.h"

namespace kblaster::kb {
namespace {

using json = nlohmann::json;

update_record record_from(const sql::statement& s) {
  update_record r;
  r.id = s.get_int(0);
  r.created_at = s.get_text(1);
  r.cause.kind = s.get_text(2);
  r.cause.detail = s.get_text(3);
  const auto ids = json::parse(s.get_text(4), nullptr, false);
  if (ids.is_array())
    for (const auto& v : ids)
      if (v.is_number_integer()) r.cause.attempt_ids.push_back(v.get<std::int64_t>());
  r.reverted_by = s.get_opt_int(5);
  return r;
}

void load_changes(sql::database& db, update_record& r) {
  for (const auto& c : read_changes(db, r.id)) r.changes.push_back(display(c));
}

}  // namespace

std::vector<update_record> knowledge_base::history(std::size_t limit) {
  std::string q = "SELECT id, created_at, cause, detail, attempt_ids, reverted_by FROM updates ORDER BY id DESC";
  if (limit) q += " LIMIT " + std::to_string(limit);
  auto s = db_->prepare(q);
  std::vector<update_record> out;
  while (s.step()) out.push_back(record_from(s));
  auto n = db_->prepare("SELECT count(*) FROM update_changes WHERE update_id = ?");
  for (auto& r : out) {
    n.bind(1, r.id);
    // History lists only the number of changes; find_update gives them in full.
    r.changes = n.step() ? json(n.get_int(0)) : json(0);
    n.reset();
  }
  return out;
}

std::optional<update_record> knowledge_base::find_update(std::int64_t id) {
  auto s = db_->prepare("SELECT id, created_at, cause, detail, attempt_ids, reverted_by FROM updates WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  auto r = record_from(s);
  load_changes(*db_, r);
  return r;
}

std::int64_t knowledge_base::revert(std::int64_t update_id, const std::string& detail) {
  require_writable();
  const std::int64_t id = sql::write_transaction(*db_, [&] {
    auto s = db_->prepare("SELECT reverted_by FROM updates WHERE id = ?");
    s.bind(1, update_id);
    if (!s.step()) throw kb_error(error_kind::not_found, "no update with id " + std::to_string(update_id));
    if (!s.is_null(0))
      throw kb_error(error_kind::conflict, "update " + std::to_string(update_id) +
                                               " was already reverted by update " + std::to_string(s.get_int(0)));
    s.reset();
    change_log log(*db_);
    revert_changes(*db_, update_id, log);
    const std::int64_t revert_id = log.commit(
        update_cause{"revert", detail.empty() ? "revert of update " + std::to_string(update_id) : detail, {}});
    auto m = db_->prepare("UPDATE updates SET reverted_by = ? WHERE id = ?");
    m.bind(1, revert_id).bind(2, update_id).run();
    return revert_id;
  });
  matcher_->invalidate();
  return id;
}

}  // namespace kblaster::kb
