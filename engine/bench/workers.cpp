// workers: one process per GPU, and where the run happened.
#include "engine/bench/workers.h"

#include "engine/task/kernelbench_import.h"
#include "support/run_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace kblaster::engine::bench {

std::string parse_shard(const std::string& text, int& index, int& count) {
  const auto slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t a = 0, b = 0;
    index = std::stoi(text.substr(0, slash), &a);
    count = std::stoi(text.substr(slash + 1), &b);
    if (a != slash || b != text.size() - slash - 1) throw std::invalid_argument("trailing text");
  } catch (const std::exception&) {
    return "--shard '" + text + "' is not I/N (e.g. 0/4)";
  }
  if (count < 1 || index < 0 || index >= count) return "--shard " + text + ": I must be in 0..N-1";
  return {};
}

std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  return args;
}

std::vector<std::string> without_option(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i;  // its value
      continue;
    }
    if (args[i].rfind(name + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

int run_workers(const std::vector<std::string>& args, int gpus) {
  // In the CLI's process group (not their own), so that the terminal's Ctrl-C reaches every
  // worker as it reaches us: each stops and stores what it finished.
  std::map<int, support::child_process> running;
  int failed = 0;
  for (int i = 0; i < gpus; ++i) {
    std::vector<std::string> argv{"/proc/self/exe"};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const auto& extra : {std::string("--shard"), std::to_string(i) + "/" + std::to_string(gpus), std::string("--worker"),
                              "gpu" + std::to_string(i), std::string("--no-report")})
      argv.push_back(extra);
    support::spawn_options options;
    options.out = options.err = support::stream::inherit;
    options.own_process_group = false;
    options.set_environment = {"CUDA_VISIBLE_DEVICES=" + std::to_string(i)};
    try {
      running.emplace(i, support::child_process::spawn(argv, options));
    } catch (const support::spawn_error& e) {
      ++failed;
      std::cerr << "kblaster bench: worker gpu" << i << " did not start: " << e.what() << "\n";
    }
  }
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      const auto status = it->second.try_wait();
      if (!status) {
        ++it;
        continue;
      }
      if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
        ++failed;
        std::cerr << "kblaster bench: worker gpu" << it->first << " failed (status " << *status << ")\n";
      }
      it = running.erase(it);
    }
    if (!running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return failed;
}

std::string gpu_description() {
  const auto smi = support::find_in_path("nvidia-smi");
  if (smi.empty()) return "none found";
  const auto r = support::run_process({smi, "--query-gpu=name", "--format=csv,noheader"}, std::chrono::seconds(20));
  if (!r.ok()) return "unknown (nvidia-smi failed)";
  std::map<std::string, int> names;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) ++names[line];
  std::string out;
  for (const auto& [name, n] : names) out += (out.empty() ? "" : ", ") + name + " x " + std::to_string(n);
  return out.empty() ? "none found" : out;
}

std::string git_version() {
  const auto exporter = find_kernelbench_exporter();  // SOURCE/tools/kernelbench_export.py in a build tree
  const auto git = support::find_in_path("git");
  if (exporter.empty() || git.empty()) return "unknown";
  const auto src = fs::path(exporter).parent_path().parent_path();
  const auto r = support::run_process({git, "-C", src.string(), "describe", "--always", "--dirty"}, std::chrono::seconds(20));
  if (!r.ok()) return "unknown";
  auto v = r.out;
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return v;
}

}  // namespace kblaster::engine::bench
