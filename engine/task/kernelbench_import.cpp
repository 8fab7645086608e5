// KernelBench import: run the Python exporter, then write the task from its manifest.
#include "engine/task/kernelbench_import.h"

#include "engine/task/import_cache.h"
#include "support/run_process.h"

#include <unistd.h>

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

namespace {

using progress_fn = std::function<void(const std::string&)>;

// Runs the exporter into `dir`: its files and kernelbench_manifest.json. Throws import_error.
void run_exporter(const kernelbench_import_options& opts, const std::string& python, const std::string& exporter,
                  const fs::path& dir, const progress_fn& say) {
  const fs::path problem(opts.problem);
  std::vector<std::string> argv{python, exporter, fs::absolute(problem).string(), "--out", dir.string(),
                                "--manifest", (dir / exporter_manifest_name).string(), "--device", opts.device};
  if (opts.timing_seconds > 0) argv.insert(argv.end(), {"--timing-seconds", std::to_string(opts.timing_seconds)});
  else argv.push_back("--no-timing");
  say("exporting " + problem.filename().string() + " with " + python + " on " + opts.device +
      (opts.timing_seconds > 0 ? " (TorchScript, eager and torch.compile timings) ..." : " (TorchScript) ..."));
  const auto r = support::run_process(argv, opts.timeout, std::nullopt, opts.stop);
  if (r.cancelled) throw import_error("stopped: the exporter was killed");
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
}

// Where the exporter's files are, and how they came.
struct exported_files {
  fs::path dir;
  bool cached = false;
  double seconds = 0;    // the exporter's wall time, when it ran
  bool scratch = false;  // `dir` is this import's own, removed once its files are copied
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The exporter run into a scratch folder inside `out` (one file system: its files are then linked).
exported_files export_uncached(const kernelbench_import_options& opts, const std::string& python,
                               const std::string& exporter, const fs::path& out, const progress_fn& say) {
  const auto dir = out / (".kblaster-export-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_exporter(opts, python, exporter, dir, say);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw;
  }
  return {dir, false, seconds_since(start), true};
}

// The cache's entry for this import, built first when it is not there (or is damaged). A cache that
// cannot be used (its folder unwritable, the inputs unknown) is said and the import goes on without it.
exported_files export_through_cache(const kernelbench_import_options& opts, const std::string& python,
                                    const std::string& exporter, const fs::path& out, const progress_fn& say) {
  std::string why;
  const auto inputs = import_inputs_of(opts, python, exporter, why);
  if (!inputs) {
    say("import cache not used: " + why);
    return export_uncached(opts, python, exporter, out, say);
  }
  const import_cache cache(opts.cache_dir);
  std::optional<import_cache::build_lock> lock;
  fs::path staging;
  try {
    std::string note;
    if (auto entry = cache.find(*inputs, note)) return {*entry, true, 0, false};
    if (!note.empty()) say(note + ": importing it again");
    lock = cache.lock_for_build(inputs->key(), std::chrono::seconds(0), opts.stop);
    if (!lock) {
      say("waiting for another kblaster importing the same problem ...");
      lock = cache.lock_for_build(inputs->key(), opts.timeout + std::chrono::seconds(60), opts.stop);
      if (opts.stop.stop_requested()) throw import_error("stopped while waiting for another import of the problem");
      // Built by the one we waited for (or, should the wait have run out, built alongside it).
      if (auto entry = cache.find(*inputs, note)) return {*entry, true, 0, false};
    }
    if (lock) cache.discard_if_damaged(*inputs);
    staging = cache.new_staging_dir();
  } catch (const fs::filesystem_error& e) {
    say(std::string("import cache not used: ") + e.what());
    return export_uncached(opts, python, exporter, out, say);
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    run_exporter(opts, python, exporter, staging, say);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  const double seconds = seconds_since(start);
  try {
    return {cache.publish(staging, *inputs, seconds), false, seconds, false};
  } catch (const std::exception& e) {  // the export stands; only keeping it failed
    say(std::string("the import was not kept in the cache: ") + e.what());
    return {staging, false, seconds, true};
  }
}

// The outermost folder of `dir` that does not exist yet: what creating `dir` makes. Empty when
// `dir` exists.
fs::path outermost_missing_folder(const fs::path& dir) {
  std::error_code ec;
  fs::path missing;
  for (fs::path at = dir; !at.empty() && !fs::exists(at, ec); at = at.parent_path()) {
    missing = at;
    if (at == at.parent_path()) break;
  }
  return missing;
}

}  // namespace

kernelbench_import_result import_kernelbench(const kernelbench_import_options& opts, const progress_fn& progress) {
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
  const fs::path made = outermost_missing_folder(out);
  fs::create_directories(out, ec);
  if (ec) throw import_error("cannot create " + out.string() + ": " + ec.message());

  exported_files files;
  try {
    files = opts.cache_dir.empty() ? export_uncached(opts, python, exporter, out, say)
                                   : export_through_cache(opts, python, exporter, out, say);
  } catch (const import_error&) {
    // A stopped import leaves nothing: not even the task folder it made for the exporter's files.
    if (!made.empty() && opts.stop.stop_requested()) fs::remove_all(made, ec);
    throw;
  }
  nlohmann::json manifest;
  try {
    copy_import_files(files.dir, out);
    manifest = read_json_file(files.dir / exporter_manifest_name);
  } catch (const fs::filesystem_error& e) {
    throw import_error(std::string("cannot put the exporter's files into ") + out.string() + ": " + e.what());
  }
  if (files.scratch) fs::remove_all(files.dir, ec);
  manifest["problem"] = fs::absolute(problem).string();  // a cached export may have been of a copy elsewhere
  say(files.cached ? "served from the import cache: " + files.dir.string()
                   : "exported in " + std::to_string(static_cast<int>(files.seconds + 0.5)) + " s");

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
  result.cached = files.cached;
  result.export_seconds = files.seconds;
  return result;
}

}  // namespace kblaster::engine
