# Turns the agents' prompt files into a C++ source holding each one's bytes as an array, keyed by
# file name (cmake -P script; arrays because string literals have compiler length limits).
set(entries "")
set(arrays "")
set(i 0)
list(SORT INPUTS)
foreach(input IN LISTS INPUTS)
  get_filename_component(name ${input} NAME)
  file(READ ${input} hex HEX)
  string(LENGTH "${hex}" hex_len)
  math(EXPR n "${hex_len} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  string(REGEX REPLACE "(([^,]*,){16})" "\\1\n" body "${body}")
  string(APPEND arrays "const unsigned char file_${i}[] = {\n${body}0x00};\n")
  string(APPEND entries "    {\"${name}\", {reinterpret_cast<const char*>(file_${i}), ${n}}},\n")
  math(EXPR i "${i} + 1")
endforeach()
file(WRITE ${OUTPUT}.tmp
"// Generated from engine/agents/prompts/ by embed_prompts.cmake. Do not edit.
#include \"engine/agents/prompt_library.h\"
namespace {
${arrays}}
const std::map<std::string, std::string_view>& kblaster::engine::agents::embedded_prompt_files() {
  static const std::map<std::string, std::string_view> files{
${entries}  };
  return files;
}
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
