// Reading and writing the task format (see task.h and docs/harness.md).
#include "engine/task/task.h"

#include "support/files.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kblaster::engine {
namespace fs = std::filesystem;

namespace {

const char* const embedded_marker = "kblaster-task";

std::string read_file(const fs::path& p) {
  if (auto text = support::read_file_if_exists(p)) return std::move(*text);
  throw task_error(p.string() + ": cannot read");
}

nlohmann::json parse_json(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw task_error(origin + ": not valid JSON: " + e.what());
  }
}

std::string resolve(const std::string& dir, const std::string& p) {
  if (p.empty()) return p;
  fs::path path(p);
  if (path.is_relative()) path = fs::path(dir) / path;
  return fs::weakly_canonical(path).string();
}

std::string need_string(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw task_error(where + ": '" + key + "' is missing");
  if (!j[key].is_string()) throw task_error(where + ": '" + key + "' must be a string");
  return j[key].get<std::string>();
}

std::string opt_string(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return {};
  if (!j[key].is_string()) throw task_error(where + ": '" + key + "' must be a string");
  return j[key].get<std::string>();
}

std::optional<double> opt_number(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return std::nullopt;
  if (!j[key].is_number()) throw task_error(where + ": '" + key + "' must be a number");
  const double v = j[key].get<double>();
  if (v < 0) throw task_error(where + ": '" + key + "' must not be negative");
  return v;
}

// An output's own tolerance: a positive finite number (it widens or narrows one comparison; 0 or
// infinity would say "exact" or "anything", which the task-level and dtype defaults express).
std::optional<double> output_tolerance(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return std::nullopt;
  const auto& v = j[key];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    throw task_error(where + ": '" + key + "' must be a positive finite number");
  return v.get<double>();
}

// A scaffolded task lists the kernel's scalars; one whose value no launch gave is marked
// {"value": null, "fill_in": why} until the user sets it (here and in kb_forward).
void check_scalars_filled_in(const nlohmann::json& j, const std::string& origin) {
  if (!j.contains("scalars") || !j["scalars"].is_array()) return;
  for (std::size_t i = 0; i < j["scalars"].size(); ++i) {
    const auto& s = j["scalars"][i];
    if (s.is_object() && s.contains("value") && s["value"].is_null())
      throw task_error(origin + ".scalars[" + std::to_string(i) + "]: the value of '" + s.value("name", std::string("?")) +
                       "' is to be filled in (" + s.value("fill_in", std::string("no launch in the file gives it")) + ")");
  }
}

input_spec read_input(const nlohmann::json& j, const std::string& dir, const std::string& where, bool output = false) {
  if (!j.is_object()) throw task_error(where + " must be an object");
  input_spec in;
  if (output) {
    in.atol = output_tolerance(j, "atol", where);
    in.rtol = output_tolerance(j, "rtol", where);
    if (j.contains("initial_from")) {
      if (!j["initial_from"].is_number_integer() || j["initial_from"].get<int>() < 0)
        throw task_error(where + ": 'initial_from' must be the index of an input");
      in.initial_from = j["initial_from"].get<int>();
    }
  } else if (j.contains("atol") || j.contains("rtol")) {
    throw task_error(where + ": 'atol' and 'rtol' belong to outputs (an input is not compared)");
  } else if (j.contains("initial_from")) {
    throw task_error(where + ": 'initial_from' belongs to outputs (it names the input an output starts from)");
  }
  in.name = opt_string(j, "name", where);
  in.file = resolve(dir, opt_string(j, "file", where));
  if (j.contains("shape")) {
    if (!j["shape"].is_array()) throw task_error(where + ": 'shape' must be an array of sizes");
    for (const auto& d : j["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
        throw task_error(where + ": 'shape' must hold non-negative integers");
      in.shape.push_back(d.get<std::int64_t>());
    }
  } else if (in.file.empty()) {
    throw task_error(where + ": 'shape' is missing (or give 'file', a saved tensor)");
  }
  if (j.contains("dtype")) in.dtype = need_string(j, "dtype", where);
  if (!is_known_dtype(in.dtype)) throw task_error(where + ": unknown dtype '" + in.dtype + "'");
  if (j.contains("init")) in.init = need_string(j, "init", where);
  if (!is_known_init(in.init)) throw task_error(where + ": unknown init '" + in.init + "'");
  if (in.init == "randint") in.high = 10;
  for (auto [key, field] : {std::pair{"low", &in.low}, std::pair{"high", &in.high}, std::pair{"scale", &in.scale}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_number()) throw task_error(where + ": '" + key + "' must be a number");
    *field = j[key].get<double>();  // may be negative
  }
  if (in.high <= in.low && (in.init == "uniform" || in.init == "randint"))
    throw task_error(where + ": 'high' must be above 'low'");
  if (!in.file.empty() && !fs::exists(in.file)) throw task_error(where + ": file " + in.file + " does not exist");
  if (is_raw_tensor_file(in.file)) {
    // Raw bytes (a capture's memory): the shape and dtype say how to read them, and must add up.
    if (!j.contains("shape")) throw task_error(where + ": a raw .bin file needs 'shape' and 'dtype'");
    std::uint64_t expected = dtype_bytes(in.dtype);
    for (const auto d : in.shape) expected *= static_cast<std::uint64_t>(d);
    if (const auto actual = fs::file_size(in.file); actual != expected)
      throw task_error(where + ": file " + in.file + " holds " + std::to_string(actual) + " bytes; shape and dtype need " +
                       std::to_string(expected));
  }
  return in;
}

reference_spec read_reference(const nlohmann::json& j, const std::string& dir, const std::string& where) {
  reference_spec r;
  if (!j.is_object()) throw task_error(where + ": 'reference' must be an object");
  const int kinds = int(j.contains("torchscript")) + int(j.contains("source")) + int(j.contains("source_file")) +
                    int(j.contains("kernel"));
  if (kinds != 1)
    throw task_error(where + ": 'reference' needs exactly one of 'torchscript', 'source', 'source_file', 'kernel'");
  if (j.contains("torchscript")) {
    r.kind = reference_kind::torchscript_module;
    r.path = resolve(dir, need_string(j, "torchscript", where + ".reference"));
  } else if (j.contains("source")) {
    r.kind = reference_kind::torchscript_source;
    r.source = need_string(j, "source", where + ".reference");
  } else if (j.contains("source_file")) {
    r.kind = reference_kind::torchscript_source;
    r.source = read_file(resolve(dir, need_string(j, "source_file", where + ".reference")));
  } else {
    r.kind = reference_kind::kernel;
    r.path = resolve(dir, need_string(j, "kernel", where + ".reference"));
    r.cpu_path = resolve(dir, opt_string(j, "cpu_kernel", where + ".reference"));
  }
  if (!r.path.empty() && !fs::exists(r.path)) throw task_error(where + ": reference " + r.path + " does not exist");
  if (r.kind == reference_kind::torchscript_source && r.source.find("def forward") == std::string::npos)
    throw task_error(where + ": the reference source must define 'forward'");
  return r;
}

// The spec inside a .cu: the text between "/* kblaster-task" and the next "*/".
std::optional<std::string> embedded_spec(const std::string& source) {
  const auto open = source.find(std::string("/* ") + embedded_marker);
  if (open == std::string::npos) return std::nullopt;
  const auto start = open + 3 + std::string(embedded_marker).size();
  const auto close = source.find("*/", start);
  if (close == std::string::npos) return std::nullopt;
  return source.substr(start, close - start);
}

}  // namespace

namespace {

std::string labelled(const char* what, const std::vector<input_spec>& specs, std::size_t index) {
  std::string out = std::string(what) + " " + std::to_string(index);
  if (index < specs.size() && !specs[index].name.empty()) out += " (" + specs[index].name + ")";
  return out;
}

}  // namespace

std::string output_label(const task_spec& task, std::size_t index) { return labelled("output", task.outputs, index); }
std::string input_label(const task_spec& task, std::size_t index) { return labelled("input", task.inputs, index); }

bool is_raw_tensor_file(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".bin") == 0;
}

std::size_t dtype_bytes(const std::string& d) {
  if (d == "float64" || d == "int64") return 8;
  if (d == "float32" || d == "int32") return 4;
  if (d == "float16" || d == "bfloat16") return 2;
  return 1;  // uint8, bool
}

bool is_known_dtype(const std::string& d) {
  for (const char* k : {"float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool"})
    if (d == k) return true;
  return false;
}

bool is_known_init(const std::string& i) {
  for (const char* k : {"randn", "uniform", "zeros", "ones", "arange", "randint"})
    if (i == k) return true;
  return false;
}

std::string to_string(reference_kind k) {
  switch (k) {
    case reference_kind::torchscript_module: return "torchscript";
    case reference_kind::torchscript_source: return "source";
    case reference_kind::kernel: return "kernel";
  }
  return "?";
}

task_spec task_from_json(const nlohmann::json& j, const std::string& dir, const std::string& origin) {
  if (!j.is_object()) throw task_error(origin + ": the task must be a JSON object");
  task_spec t;
  t.dir = fs::weakly_canonical(fs::path(dir)).string();
  t.name = opt_string(j, "name", origin);
  if (t.name.empty()) t.name = fs::path(t.dir).filename().string();
  t.description = opt_string(j, "description", origin);
  t.kernel = resolve(t.dir, opt_string(j, "kernel", origin));
  t.cpu_kernel = resolve(t.dir, opt_string(j, "cpu_kernel", origin));
  for (const auto* p : {&t.kernel, &t.cpu_kernel})
    if (!p->empty() && !fs::exists(*p)) throw task_error(origin + ": " + *p + " does not exist");
  if (!j.contains("reference")) throw task_error(origin + ": 'reference' is missing");
  t.reference = read_reference(j["reference"], t.dir, origin);
  if (!j.contains("inputs") || !j["inputs"].is_array() || j["inputs"].empty())
    throw task_error(origin + ": 'inputs' must be a non-empty array");
  check_scalars_filled_in(j, origin);
  for (std::size_t i = 0; i < j["inputs"].size(); ++i)
    t.inputs.push_back(read_input(j["inputs"][i], t.dir, origin + ".inputs[" + std::to_string(i) + "]"));
  if (j.contains("outputs")) {
    if (!j["outputs"].is_array()) throw task_error(origin + ": 'outputs' must be an array of {shape, dtype}");
    for (std::size_t i = 0; i < j["outputs"].size(); ++i)
      t.outputs.push_back(read_input(j["outputs"][i], t.dir, origin + ".outputs[" + std::to_string(i) + "]", true));
  }
  for (std::size_t i = 0; i < t.outputs.size(); ++i) {
    const auto& o = t.outputs[i];
    if (o.initial_from < 0) continue;
    const auto where = origin + ".outputs[" + std::to_string(i) + "].initial_from";
    if (static_cast<std::size_t>(o.initial_from) >= t.inputs.size())
      throw task_error(where + ": there is no input " + std::to_string(o.initial_from));
    const auto& in = t.inputs[static_cast<std::size_t>(o.initial_from)];
    if (in.dtype != o.dtype || (!in.shape.empty() && in.shape != o.shape))
      throw task_error(where + ": input " + std::to_string(o.initial_from) + " is not shaped like this output");
  }
  if (t.reference.kind == reference_kind::kernel && t.outputs.empty())
    throw task_error(origin + ": a kernel reference needs 'outputs' (their shapes and dtypes)");
  if (j.contains("tolerance")) {
    const auto& tol = j["tolerance"];
    if (!tol.is_object()) throw task_error(origin + ": 'tolerance' must be an object {atol, rtol}");
    t.atol = opt_number(tol, "atol", origin + ".tolerance");
    t.rtol = opt_number(tol, "rtol", origin + ".tolerance");
  }
  t.arch = opt_string(j, "arch", origin);
  if (j.contains("allow_libraries")) {
    if (!j["allow_libraries"].is_boolean()) throw task_error(origin + ": 'allow_libraries' must be true or false");
    t.allow_libraries = j["allow_libraries"].get<bool>();
  }
  if (j.contains("seeds")) {
    // Inputs drawn from seeds need several draws to catch a kernel right by luck; a task whose
    // every input is a file (a capture's memory) has one data set, and may say so.
    const bool drawn = std::any_of(t.inputs.begin(), t.inputs.end(), [](const input_spec& in) { return in.file.empty(); });
    const int least = drawn || t.inputs.empty() ? 3 : 1;
    if (!j["seeds"].is_number_integer() || j["seeds"].get<int>() < least || j["seeds"].get<int>() > 100)
      throw task_error(origin + ": 'seeds' must be an integer from " + std::to_string(least) + " to 100");
    t.seeds = j["seeds"].get<int>();
  }
  if (j.contains("stress")) {
    const auto& st = j["stress"];
    const auto where = origin + ".stress";
    if (!st.is_object() || !st.contains("skip") || !st["skip"].is_array())
      throw task_error(where + ": must be {\"skip\": [kinds], \"reason\": \"why they are out of the task's domain\"}");
    for (const auto& k : st["skip"]) {
      const auto& kinds = stress_kinds();
      if (!k.is_string() || std::find(kinds.begin(), kinds.end(), k.get<std::string>()) == kinds.end())
        throw task_error(where + ".skip: unknown stress set " + k.dump() + " (large_magnitude, near_limits)");
      t.stress_skip.push_back(k.get<std::string>());
    }
    t.stress_skip_reason = opt_string(st, "reason", where);
    if (!t.stress_skip.empty() && t.stress_skip_reason.empty())
      throw task_error(where + ": skipping a stress set needs a 'reason' (what makes those inputs out of the task's domain)");
  }
  return t;
}

task_spec load_task(const std::string& path) {
  const fs::path p(path);
  if (!fs::exists(p)) throw task_error(path + ": no such task (give a directory with task.json, a .json or a .cu)");
  if (fs::is_directory(p)) {
    const auto spec = p / "task.json";
    if (!fs::exists(spec)) throw task_error(path + ": no task.json in this directory");
    return task_from_json(parse_json(read_file(spec), spec.string()), p.string(), spec.string());
  }
  if (p.extension() == ".json")
    return task_from_json(parse_json(read_file(p), p.string()), p.parent_path().string(), p.string());
  if (p.extension() == ".cu" || p.extension() == ".cuh") {
    auto sibling = p;
    sibling.replace_extension(".task.json");
    nlohmann::json j;
    std::string origin;
    if (auto text = embedded_spec(read_file(p))) {
      origin = p.string() + " (kblaster-task comment)";
      j = parse_json(*text, origin);
    } else if (fs::exists(sibling)) {
      origin = sibling.string();
      j = parse_json(read_file(sibling), origin);
    } else {
      throw task_error(path + ": no '/* kblaster-task {...} */' comment and no " + sibling.filename().string());
    }
    if (!j.is_object()) throw task_error(origin + ": the task must be a JSON object");
    if (!j.contains("kernel")) j["kernel"] = p.filename().string();
    if (!j.contains("name")) j["name"] = p.stem().string();
    return task_from_json(j, p.parent_path().string(), origin);
  }
  throw task_error(path + ": a task is a directory, a .json or a .cu");
}

nlohmann::json to_json(const task_spec& t) {
  nlohmann::json j;
  j["name"] = t.name;
  if (!t.description.empty()) j["description"] = t.description;
  if (!t.kernel.empty()) j["kernel"] = t.kernel;
  if (!t.cpu_kernel.empty()) j["cpu_kernel"] = t.cpu_kernel;
  nlohmann::json r;
  switch (t.reference.kind) {
    case reference_kind::torchscript_module: r["torchscript"] = t.reference.path; break;
    case reference_kind::torchscript_source: r["source"] = t.reference.source; break;
    case reference_kind::kernel:
      r["kernel"] = t.reference.path;
      if (!t.reference.cpu_path.empty()) r["cpu_kernel"] = t.reference.cpu_path;
      break;
  }
  j["reference"] = r;
  j["inputs"] = nlohmann::json::array();
  for (const auto& in : t.inputs) {
    nlohmann::json i{{"dtype", in.dtype}, {"init", in.init}, {"low", in.low}, {"high", in.high}, {"scale", in.scale}};
    if (!in.name.empty()) i["name"] = in.name;
    if (!in.file.empty()) i["file"] = in.file;
    if (!in.shape.empty() || in.file.empty()) i["shape"] = in.shape;
    j["inputs"].push_back(i);
  }
  if (!t.outputs.empty()) {
    j["outputs"] = nlohmann::json::array();
    for (const auto& o : t.outputs) {
      nlohmann::json out{{"shape", o.shape}, {"dtype", o.dtype}};
      if (!o.name.empty()) out["name"] = o.name;  // verdicts name the output they fault
      if (o.atol) out["atol"] = *o.atol;
      if (o.rtol) out["rtol"] = *o.rtol;
      if (o.initial_from >= 0) out["initial_from"] = o.initial_from;
      j["outputs"].push_back(out);
    }
  }
  if (t.atol || t.rtol) {
    j["tolerance"] = nlohmann::json::object();
    if (t.atol) j["tolerance"]["atol"] = *t.atol;
    if (t.rtol) j["tolerance"]["rtol"] = *t.rtol;
  }
  if (!t.arch.empty()) j["arch"] = t.arch;
  j["allow_libraries"] = t.allow_libraries;
  j["seeds"] = t.seeds;
  if (!t.stress_skip.empty()) j["stress"] = {{"skip", t.stress_skip}, {"reason", t.stress_skip_reason}};
  return j;
}

tolerance tolerance_for(const std::string& dtype, const task_spec& t) {
  tolerance tol;
  if (dtype == "float16" || dtype == "bfloat16") tol = {1e-2, 1e-2};
  else if (dtype == "float32" || dtype == "float64") tol = {1e-4, 1e-4};
  else tol = {0, 0};  // integers and bool compare exactly
  if (t.atol) tol.atol = *t.atol;
  if (t.rtol) tol.rtol = *t.rtol;
  return tol;
}

tolerance tolerance_for(const std::string& dtype, const task_spec& t, std::size_t output) {
  auto tol = tolerance_for(dtype, t);
  if (output < t.outputs.size()) {
    if (const auto& o = t.outputs[output]; o.atol) tol.atol = *o.atol;
    if (const auto& o = t.outputs[output]; o.rtol) tol.rtol = *o.rtol;
  }
  return tol;
}

std::string reference_label(const task_spec& t) {
  return t.reference.kind == reference_kind::kernel ? "the original kernel" : "PyTorch";
}

}  // namespace kblaster::engine
