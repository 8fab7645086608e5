// What a KB note speaks of, and whether it fits a kernel. A note is the advice a state gives for
// a technique ("combine the partial results of the lanes with shuffles"); one that speaks of an
// operation the kernel does not have misleads the model, so it carries the operations it needs
// (the seed's "note_needs", the column optimizations.note_needs) and is shown only for a kernel
// whose device code shows them (engine::kernel_operations). The technique itself is still
// offered: its own needs (kb/evidence.h) decide that.
#pragma once

#include "kb/sql.h"
#include "kb/types.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kblaster::kb {

/// The operations a note may need, as engine::kernel_operations names them.
namespace note_operation {
inline constexpr const char* reduction = "reduction";
inline constexpr const char* transcendental = "transcendental";
inline constexpr const char* division = "division";
inline constexpr const char* per_thread_array = "per_thread_array";
inline constexpr const char* shared_memory = "shared_memory";
}  // namespace note_operation

/// Every note_operation name.
const std::vector<std::string>& note_operations();

/// Clauses as the seed writes them: [["a", "b"], ["c"]], a bare string being a clause of one
/// name. Anything else (not an array, a clause that is neither, names that are not strings) is
/// left out.
std::vector<std::vector<std::string>> clauses_from_json(const nlohmann::json& clauses);

/// True when `o`'s note may be shown for a kernel whose device code shows `operations`: every
/// clause of note_needs has a name among them. nullopt operations (the source is not known):
/// every note fits.
bool note_fits(const optimization& o, const std::optional<std::set<std::string>>& operations);

/// `o`'s note as it may be shown for that kernel: the note, or empty when it does not fit.
std::string shown_note(const optimization& o, const std::optional<std::set<std::string>>& operations);

/// The schema's version-5 conversion, for a KB seeded before notes carried their needs: every
/// seeded note still as the seed wrote it gets the seed's needs, and the notes the seed has since
/// rewritten for their state (issue 36: "the row's max and sum across the lanes" was a softmax's,
/// shown for an SpMV) are replaced by the new text, unless an agent or a user edited them.
void upgrade_seed_notes(sql::database& db);

}  // namespace kblaster::kb
