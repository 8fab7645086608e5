// What fuzz_lsp reads of the messages both sides write, without building them (a parse into a
// json value for each took a seventh of the target's time): valid JSON, an object whose
// "jsonrpc" is "2.0", and whether it is a request (an "id" and a "method") and which.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace kblaster::fuzz {

struct jsonrpc_facts {
  bool valid = false;    ///< JSON, an object, "jsonrpc": "2.0"
  bool request = false;  ///< has "id" and a string "method"
  std::string method;    ///< the "method", if any
};

/// The facts of one message body.
inline jsonrpc_facts check_jsonrpc(std::string_view body) {
  using json = nlohmann::json;
  struct reader final : nlohmann::json_sax<json> {
    int depth = 0;
    bool object = false, version = false, id = false, method = false;
    std::string method_name;
    std::string key_at_top;

    bool value_here() { return depth == 1; }
    bool scalar() {
      if (value_here() && key_at_top == "id") id = true;
      return true;
    }
    bool null() override { return scalar(); }
    bool boolean(bool) override { return scalar(); }
    bool number_integer(number_integer_t) override { return scalar(); }
    bool number_unsigned(number_unsigned_t) override { return scalar(); }
    bool number_float(number_float_t, const string_t&) override { return scalar(); }
    bool binary(binary_t&) override { return scalar(); }
    bool string(string_t& s) override {
      if (value_here() && key_at_top == "jsonrpc") version = s == "2.0";
      if (value_here() && key_at_top == "method") {
        method = true;
        method_name = s;
      }
      return scalar();
    }
    bool start_object(std::size_t) override {
      if (depth == 0) object = true;
      ++depth;
      return true;
    }
    bool key(string_t& k) override {
      if (depth == 1) key_at_top = k;
      return true;
    }
    bool end_object() override {
      --depth;
      return true;
    }
    bool start_array(std::size_t) override {
      ++depth;
      return true;
    }
    bool end_array() override {
      --depth;
      return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  } r;
  jsonrpc_facts facts;
  if (!json::sax_parse(body, &r) || !r.object || !r.version) return facts;
  facts.valid = true;
  facts.request = r.id && r.method;
  facts.method = std::move(r.method_name);
  return facts;
}

}  // namespace kblaster::fuzz
