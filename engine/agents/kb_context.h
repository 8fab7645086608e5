// Retrieval: the few KB entries an agent needs, rendered compactly for a prompt. The KB is never
// dumped whole; each function takes what one decision needs and caps it.
#pragma once

#include "kb/knowledge_base.h"

#include <optional>
#include <set>

#include <string>
#include <vector>

namespace kblaster::engine::agents {

/// "name (primary; secondaries): description" for one state.
std::string render_state(const kb::state& s);

/// States worth comparing to a signature: the matched one first, then up to `limit` others of
/// the same primary bottleneck family, most shared secondaries first.
std::vector<kb::state> nearby_states(kb::knowledge_base& kb, const std::string& matched, const std::string& primary,
                                     const std::vector<std::string>& secondary, std::size_t limit = 6);

/// A table of a state's optimizations with prior, prediction, confidence and record. With the
/// operations of the kernel at hand (engine::kernel_operations), a note that speaks of one it
/// lacks is left out (kb::shown_note); without them (no kernel), every note is shown.
std::string render_optimizations(const std::vector<kb::optimization>& opts, std::size_t limit = 12,
                                 const std::optional<std::set<std::string>>& operations = std::nullopt);

/// The technique catalogue as "name (category)" items on a few lines, without descriptions.
std::string render_catalogue(const std::vector<kb::technique>& techniques);

/// Up to `limit` newest lessons of `state` about `technique` or about the state as a whole.
std::string render_lessons(kb::knowledge_base& kb, const std::string& state, const std::string& technique,
                           std::size_t limit = 5);

/// The replay buffer's attempts as one line each (id, task, states, technique, predicted,
/// measured, outcome).
std::string render_attempts(const std::vector<kb::attempt>& attempts);


}  // namespace kblaster::engine::agents
