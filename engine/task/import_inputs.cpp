// What an import depends on: the files' hashes, PyTorch's version file, the device's name.
#include "engine/task/import_inputs.h"
#include "support/text.h"

#include "engine/task/kernelbench_import.h"
#include "support/files.h"
#include "support/hash.h"
#include "support/run_process.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace kblaster::engine {
namespace fs = std::filesystem;

namespace {

// Finds torch's version.py without importing torch: find_spec locates the package and runs
// none of its code, so this costs the interpreter's start (tens of ms), not torch's (seconds).
const char* const torch_locator =
    "import importlib.util, os\n"
    "s = importlib.util.find_spec('torch')\n"
    "print(os.path.join(os.path.dirname(s.origin), 'version.py') if s and s.origin else '')\n";

std::string without_newlines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text;
}

// The quoted value of `__version__ = '...'` in torch/version.py, or empty.
std::string version_in(const std::string& version_py) {
  const auto at = version_py.find("__version__");
  if (at == std::string::npos) return {};
  const auto open = version_py.find_first_of("'\"", at);
  if (open == std::string::npos) return {};
  const auto close = version_py.find(version_py[open], open + 1);
  return close == std::string::npos ? std::string() : version_py.substr(open + 1, close - open - 1);
}

std::optional<std::string> ask_torch_identity(const std::string& python) {
  const auto r = support::run_process({python, "-c", torch_locator}, std::chrono::seconds(60));
  if (!r.ok()) return std::nullopt;
  const auto path = without_newlines(r.out);
  if (path.empty()) return std::string("none");
  const auto bytes = support::read_file_if_exists(path);
  if (!bytes) return std::nullopt;  // a torch without its version file: a change could not be seen
  return version_in(*bytes) + " at " + path + " (" + support::fnv1a_hex(*bytes) + ")";
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The first entry of CUDA_VISIBLE_DEVICES ("1,2" -> "1"), "0" when unset or empty.
std::string first_visible_gpu() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string first = visible ? std::string(visible).substr(0, std::string(visible).find(',')) : "";
  while (!first.empty() && first.front() == ' ') first.erase(first.begin());
  return first.empty() ? "0" : without_newlines(first);
}

// "cuda: NAME, driver V" of the GPU `visible` names (nvidia-smi's index, or a UUID or its prefix);
// when it names none (a MIG instance), the GPUs' common name, if they all share one.
std::optional<std::string> ask_gpu_identity(const std::string& visible) {
  const auto smi = support::find_in_path("nvidia-smi");
  if (smi.empty()) return std::nullopt;
  const auto r = support::run_process({smi, "--query-gpu=index,uuid,name,driver_version", "--format=csv,noheader"},
                                      std::chrono::seconds(30));
  if (!r.ok()) return std::nullopt;
  std::map<std::string, int> kinds;
  std::istringstream rows(r.out);
  for (std::string row; std::getline(rows, row);) {
    std::vector<std::string> field;
    std::istringstream cells(row);
    for (std::string cell; std::getline(cells, cell, ',');) {
      while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
      field.push_back(without_newlines(cell));
    }
    if (field.size() != 4) continue;
    const auto kind = "cuda: " + field[2] + ", driver " + field[3];
    if (field[0] == visible || (!visible.empty() && field[1].rfind(visible, 0) == 0)) return kind;
    ++kinds[kind];
  }
  if (kinds.size() == 1) return kinds.begin()->first;
  return std::nullopt;
}

// One answer per argument per process: the interpreter and the GPU do not change under a run.
template <typename Ask>
std::optional<std::string> remembered(const std::string& arg, Ask ask) {
  static std::mutex mutex;
  static std::map<std::string, std::optional<std::string>> answers;
  const std::lock_guard lock(mutex);
  if (const auto it = answers.find(arg); it != answers.end()) return it->second;
  return answers[arg] = ask(arg);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> import_inputs::named() const {
  return {{"problem", problem}, {"exporter", exporter}, {"torch", torch}, {"device", device}, {"options", options}};
}

std::string import_inputs::key() const {
  std::uint64_t h = support::fnv1a_offset;
  for (const auto& [name, value] : named()) {
    h = support::fnv1a(name + ":" + std::to_string(value.size()) + ":", h);
    h = support::fnv1a(value, h);
  }
  return support::hex64(h);
}

std::optional<std::string> torch_identity(const std::string& python) {
  return remembered("torch " + python, [&](const std::string&) { return ask_torch_identity(python); });
}

std::optional<std::string> device_identity(const std::string& device) {
  if (device != "cuda") return "cpu: " + cpu_model_name();
  const auto visible = first_visible_gpu();
  return remembered("gpu " + visible, [&](const std::string&) { return ask_gpu_identity(visible); });
}

std::optional<import_inputs> import_inputs_of(const kernelbench_import_options& opts, const std::string& python,
                                              const std::string& exporter, std::string& why) {
  import_inputs in;
  const auto problem = support::read_file_if_exists(opts.problem);
  const auto exporter_bytes = support::read_file_if_exists(exporter);
  if (!problem || !exporter_bytes) {
    why = "cannot read " + (problem ? exporter : opts.problem);
    return std::nullopt;
  }
  in.problem = support::fnv1a_hex(*problem);
  in.exporter = support::fnv1a_hex(*exporter_bytes);
  const auto torch = torch_identity(python);
  if (!torch) {
    why = "cannot tell which PyTorch " + python + " has";
    return std::nullopt;
  }
  in.torch = *torch;
  const auto device = device_identity(opts.device);
  if (!device) {
    why = "cannot tell which GPU the import runs on (nvidia-smi missing or failing)";
    return std::nullopt;
  }
  in.device = *device;
  in.options = opts.device + ", timing " + support::seconds_text(opts.timing_seconds);
  return in;
}

}  // namespace kblaster::engine
