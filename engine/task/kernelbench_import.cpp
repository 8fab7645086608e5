// KernelBench import: run the Python exporter, then write the task from its manifest.
#include "engine/task/kernelbench_import.h"

#include "support/run_process.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace kblaster::engine {
namespace fs = std::filesystem;

namespace {

const char* const exporter_name = "kernelbench_export.py";
const char* const error_marker = "kblaster-export-error: ";

// The source directory recorded in a build tree's CMakeCache.txt, or empty.
std::string source_dir_of_build(const fs::path& build) {
  std::ifstream cache(build / "CMakeCache.txt");
  const std::string key = "kblaster_SOURCE_DIR:STATIC=";
  for (std::string line; std::getline(cache, line);)
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  return {};
}

// The last few lines of a child's stderr, for messages.
std::string tail_lines(const std::string& text, std::size_t lines) {
  std::size_t pos = text.size();
  while (pos > 0 && (text[pos - 1] == '\n' || text[pos - 1] == ' ')) --pos;
  std::size_t end = pos;
  for (std::size_t n = 0; n < lines && pos > 0; ++n) {
    const auto nl = text.rfind('\n', pos - 1);
    pos = nl == std::string::npos ? 0 : nl;
  }
  return text.substr(pos == 0 ? 0 : pos + 1, end - (pos == 0 ? 0 : pos + 1));
}

// The exporter's own error ("kblaster-export-error: KIND: message", possibly several lines), or empty.
std::string exporter_error(const std::string& err) {
  const auto at = err.find(error_marker);
  if (at == std::string::npos) return {};
  std::string msg = err.substr(at + std::string(error_marker).size());
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}

std::string shape_text(const nlohmann::json& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i].get<long long>());
  return s + "]";
}

nlohmann::json read_json_file(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw import_error("the exporter wrote no manifest at " + p.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw import_error("the exporter's manifest " + p.string() + " is not valid JSON: " + e.what());
  }
}

// The loosest per-dtype default over the outputs (an fp16 output gets 1e-2, fp32 1e-4).
nlohmann::json tolerance_for_outputs(const nlohmann::json& outputs) {
  task_spec defaults;
  tolerance t{0, 0};
  for (const auto& o : outputs) {
    const auto d = tolerance_for(o.value("dtype", "float32"), defaults);
    t.atol = std::max(t.atol, d.atol);
    t.rtol = std::max(t.rtol, d.rtol);
  }
  return {{"atol", t.atol}, {"rtol", t.rtol}};
}

nlohmann::json task_json_from(const nlohmann::json& m, const std::string& name, const std::string& problem) {
  nlohmann::json inputs = nlohmann::json::array();
  for (auto in : m.at("inputs")) inputs.push_back(std::move(in));
  nlohmann::json kb{{"problem", problem}};
  for (const char* key : {"torch_version", "device", "device_name", "torchscript_method", "script_error", "parameters",
                          "outputs", "eager", "compile"})
    if (m.contains(key)) kb[key] = m[key];
  return {{"name", name},
          {"description", "Imported from " + problem + " (KernelBench format) by `kblaster import kernelbench`."},
          {"kernel", "kernel.cu"},
          {"reference", {{"torchscript", m.value("module", "model.pt")}}},
          {"inputs", inputs},
          {"tolerance", tolerance_for_outputs(m.at("outputs"))},
          {"seeds", 3},
          {"kernelbench", kb}};
}

}  // namespace

std::string find_kernelbench_exporter() {
  if (const char* env = std::getenv("KBLASTER_KERNELBENCH_EXPORTER"); env && *env) return env;
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  // Walk up from the binary: a build tree names its source tree in CMakeCache.txt; an installed
  // kblaster (PREFIX/bin) has PREFIX/share/kblaster/; a build tree inside the source tree has tools/.
  for (auto dir = self.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (const auto src = source_dir_of_build(dir); !src.empty() && fs::exists(fs::path(src) / "tools" / exporter_name, ec))
      return (fs::path(src) / "tools" / exporter_name).string();
    for (const auto& p : {dir / "share" / "kblaster" / exporter_name, dir / "tools" / exporter_name})
      if (fs::exists(p, ec)) return p.string();
  }
  return {};
}

std::string kernelbench_stub(const nlohmann::json& m, const std::string& problem_name) {
  std::ostringstream s;
  const auto& inputs = m.at("inputs");
  const auto& params = m.value("parameters", nlohmann::json::array());
  const auto& outputs = m.at("outputs");
  s << "// " << problem_name << ": the candidate kernel for the task imported from " << problem_name
    << ".py (KernelBench format)\n// by `kblaster import kernelbench`. Replace the body with a CUDA implementation of "
       "Model.forward.\n//\n// kb_forward's arguments, in the order kblaster-harness passes them (inputs, then the "
       "module's\n// parameters in named_parameters() order, then its buffers in named_buffers() order):\n";
  std::size_t width = 6;
  for (const auto& p : params) width = std::max(width, p.value("name", "").size());
  auto row = [&](const std::string& slot, const std::string& name, const nlohmann::json& t, const std::string& what) {
    s << "//   " << std::left << std::setw(7) << slot << std::setw(static_cast<int>(width) + 2) << name << std::setw(9)
      << t.value("dtype", "") << std::setw(18) << shape_text(t.at("shape")) << what << "\n";
  };
  std::size_t i = 0;
  for (const auto& in : inputs) {
    row("in[" + std::to_string(i) + "]", in.value("name", ""), in, "input: get_inputs()[" + std::to_string(i) + "]");
    ++i;
  }
  for (const auto& p : params) {
    row("in[" + std::to_string(i) + "]", p.value("name", ""), p, p.value("kind", "parameter"));
    ++i;
  }
  for (std::size_t o = 0; o < outputs.size(); ++o)
    row("out[" + std::to_string(o) + "]", "", outputs[o], "output, allocated by the harness");
  s << "// Every tensor is contiguous (row-major) on the device. Fill out[] in place on `stream`; return 0\n"
       "// on success. A non-zero status is reported as the candidate's failure.\n"
       "#include <cuda_runtime.h>\n#include <dlpack/dlpack.h>\n\n"
       "extern \"C\" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {\n"
       "  (void)in;\n  (void)out;\n  (void)stream;\n"
    << "  if (n_in != " << i << " || n_out != " << outputs.size() << ") return 1;\n"
    << "  return 2;  // not implemented yet\n}\n";
  return s.str();
}

kernelbench_import_result import_kernelbench(const kernelbench_import_options& opts,
                                             const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& text) {
    if (progress) progress(text);
  };
  const fs::path problem(opts.problem);
  std::error_code ec;
  if (!fs::is_regular_file(problem, ec)) throw import_error(opts.problem + ": no such file");
  if (opts.device != "cpu" && opts.device != "cuda") throw import_error("--device must be cpu or cuda, not " + opts.device);
  const std::string python = support::find_in_path(opts.python);
  if (python.empty())
    throw import_error(opts.python + " not found" + (opts.python.find('/') == std::string::npos ? " in PATH" : "") +
                       ": install Python 3 with PyTorch (Debian: python3 python3-torch) or give --python");
  const std::string exporter = opts.exporter.empty() ? find_kernelbench_exporter() : opts.exporter;
  if (exporter.empty() || !fs::is_regular_file(exporter, ec))
    throw import_error("cannot find " + std::string(exporter_name) + (exporter.empty() ? "" : " at " + exporter) +
                       " (it lives in the source tree's tools/, or PREFIX/share/kblaster/; or set "
                       "KBLASTER_KERNELBENCH_EXPORTER)");
  const fs::path out = fs::absolute(opts.out_dir);
  fs::create_directories(out, ec);
  if (ec) throw import_error("cannot create " + out.string() + ": " + ec.message());
  const auto manifest_path = out / "kernelbench_manifest.json";
  fs::remove(manifest_path, ec);

  std::vector<std::string> argv{python, exporter, fs::absolute(problem).string(), "--out", out.string(),
                                "--manifest", manifest_path.string(), "--device", opts.device};
  if (opts.timing_seconds > 0) argv.insert(argv.end(), {"--timing-seconds", std::to_string(opts.timing_seconds)});
  else argv.push_back("--no-timing");
  say("exporting " + problem.filename().string() + " with " + python + " on " + opts.device +
      (opts.timing_seconds > 0 ? " (TorchScript, eager and torch.compile timings) ..." : " (TorchScript) ..."));
  const auto r = support::run_process(argv, opts.timeout);
  if (r.failed_to_start) throw import_error("cannot run " + python + ": " + r.err);
  if (r.timed_out)
    throw import_error("the exporter did not finish within " + std::to_string(opts.timeout.count()) + " s on " +
                       problem.filename().string() + " (raise --timeout for a large model)" +
                       (r.err.empty() ? "" : ":\n" + tail_lines(r.err, 6)));
  if (r.signal != 0) throw import_error("the exporter was killed by signal " + std::to_string(r.signal) + ":\n" + tail_lines(r.err, 10));
  if (!r.ok()) {
    if (auto msg = exporter_error(r.err); !msg.empty()) throw import_error(msg);
    throw import_error("the exporter failed (status " + std::to_string(r.exit_code) + "):\n" + tail_lines(r.err, 10));
  }
  auto manifest = read_json_file(manifest_path);
  fs::remove(manifest_path, ec);

  const std::string name = problem.stem().string();
  nlohmann::json task;
  try {
    task = task_json_from(manifest, name, fs::absolute(problem).string());
  } catch (const nlohmann::json::exception& e) {
    throw import_error(std::string("the exporter's manifest lacks a field: ") + e.what());
  }
  const auto task_path = out / "task.json";
  {
    std::ofstream f(task_path);
    f << task.dump(2) << "\n";
    std::ofstream k(out / "kernel.cu");
    k << kernelbench_stub(manifest, name);
    if (!f || !k) throw import_error("cannot write into " + out.string());
  }
  kernelbench_import_result result;
  try {
    result.task = load_task(out.string());  // read back: what eval will see
  } catch (const task_error& e) {
    throw import_error(std::string("the written task does not load: ") + e.what());
  }
  result.manifest = std::move(manifest);
  result.task_json = task_path.string();
  return result;
}

}  // namespace kblaster::engine
