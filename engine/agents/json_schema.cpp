// JSON Schema subset (see json_schema.h).
#include "engine/agents/json_schema.h"

#include <regex>

namespace kblaster::engine::agents {
namespace {

using json = nlohmann::json;

bool has_type(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

std::string show(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

}  // namespace

std::vector<std::string> validate_json(const json& v, const json& schema, const std::string& path) {
  std::vector<std::string> errors;
  auto err = [&](const std::string& m) { errors.push_back(path + ": " + m); };
  if (schema.contains("type")) {
    const auto& t = schema["type"];
    bool ok = false;
    if (t.is_string()) ok = has_type(v, t.get<std::string>());
    else for (const auto& one : t) ok = ok || has_type(v, one.get<std::string>());
    if (!ok) {
      err("must be of type " + t.dump() + ", got " + show(v));
      return errors;
    }
  }
  if (schema.contains("const") && v != schema["const"]) err("must be " + schema["const"].dump());
  if (schema.contains("enum")) {
    bool found = false;
    for (const auto& e : schema["enum"]) found = found || e == v;
    if (!found) err("must be one of " + schema["enum"].dump() + ", got " + show(v));
  }
  if (v.is_number()) {
    const double d = v.get<double>();
    if (schema.contains("minimum") && d < schema["minimum"].get<double>()) err("must be >= " + schema["minimum"].dump());
    if (schema.contains("maximum") && d > schema["maximum"].get<double>()) err("must be <= " + schema["maximum"].dump());
    if (schema.contains("exclusiveMinimum") && d <= schema["exclusiveMinimum"].get<double>())
      err("must be > " + schema["exclusiveMinimum"].dump());
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (schema.contains("minLength") && s.size() < schema["minLength"].get<std::size_t>())
      err("must have at least " + schema["minLength"].dump() + " characters");
    if (schema.contains("maxLength") && s.size() > schema["maxLength"].get<std::size_t>())
      err("must have at most " + schema["maxLength"].dump() + " characters (has " + std::to_string(s.size()) + ")");
    if (schema.contains("pattern") && !std::regex_search(s, std::regex(schema["pattern"].get<std::string>())))
      err("must match " + schema["pattern"].get<std::string>() + ", got " + show(v));
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<std::size_t>())
      err("must have at least " + schema["minItems"].dump() + " items");
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<std::size_t>())
      err("must have at most " + schema["maxItems"].dump() + " items");
    if (schema.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i)
        for (auto& e : validate_json(v[i], schema["items"], path + "[" + std::to_string(i) + "]")) errors.push_back(e);
  }
  if (v.is_object()) {
    if (schema.contains("required"))
      for (const auto& r : schema["required"])
        if (!v.contains(r.get<std::string>())) err("lacks required field '" + r.get<std::string>() + "'");
    const json props = schema.value("properties", json::object());
    for (const auto& [k, sub] : v.items()) {
      if (props.contains(k)) {
        for (auto& e : validate_json(sub, props[k], path + "." + k)) errors.push_back(e);
      } else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false) {
        err("has unknown field '" + k + "'");
      }
    }
  }
  if (schema.contains("oneOf")) {
    const auto& branches = schema["oneOf"];
    // Tagged union on "op": validate against the branch the value names.
    bool tagged = v.is_object() && v.contains("op") && v["op"].is_string();
    for (const auto& b : branches)
      tagged = tagged && b.contains("properties") && b["properties"].contains("op") && b["properties"]["op"].contains("const");
    if (tagged) {
      const json* chosen = nullptr;
      std::string names;
      for (const auto& b : branches) {
        names += (names.empty() ? "" : ", ") + b["properties"]["op"]["const"].get<std::string>();
        if (b["properties"]["op"]["const"] == v["op"]) chosen = &b;
      }
      if (!chosen) err("op must be one of " + names + ", got " + show(v["op"]));
      else for (auto& e : validate_json(v, *chosen, path)) errors.push_back(e);
    } else {
      int matches = 0;
      for (const auto& b : branches) matches += validate_json(v, b, path).empty() ? 1 : 0;
      if (matches != 1) err("must match exactly one of the allowed shapes (matched " + std::to_string(matches) + ")");
    }
  }
  return errors;
}

}  // namespace kblaster::engine::agents
