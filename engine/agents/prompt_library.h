// The agents' prompt templates, embedded from engine/agents/prompts/ at build time, and the
// small template language they use: {{name}} is replaced by a value; a line starting with "#"
// before the first blank line is provenance and is dropped from what the model sees.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace kblaster::engine::agents {

/// Every embedded file by name (e.g. "lowering.system.txt"). Generated at build time.
const std::map<std::string, std::string_view>& embedded_prompt_files();

/// The text of an embedded prompt file without its provenance header; throws std::out_of_range
/// naming the file when absent.
std::string prompt_text(const std::string& file);

/// `templ` with each {{key}} replaced by vars[key]; throws std::invalid_argument naming a
/// placeholder that has no value (a prompt bug must not reach a model silently).
std::string render(const std::string& templ, const std::map<std::string, std::string>& vars);

}  // namespace kblaster::engine::agents
