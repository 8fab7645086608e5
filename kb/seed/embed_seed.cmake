# Turns the seed KB JSON into a C++ source holding its bytes as an array (cmake -P script; an
# array rather than a raw string literal because string literals have compiler length limits).
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR n "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(([^,]*,){16})" "\\1\n" body "${body}")
file(WRITE ${OUTPUT}.tmp
"// Generated from kb/seed/seed_kb.json by kb/seed/embed_seed.cmake. Do not edit.
#include \"kb/seed.h\"
namespace {
const unsigned char seed_bytes[] = {\n${body}0x00};
}
std::string_view kblaster::kb::seed_kb_json() noexcept {
  return {reinterpret_cast<const char*>(seed_bytes), ${n}};
}
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
