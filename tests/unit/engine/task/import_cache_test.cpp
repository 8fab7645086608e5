// Tests of the import cache (engine/task/import_cache.h): the key follows every input, a second
// import of a problem does not run the exporter, a damaged entry is built again, and two processes
// importing the same problem at once leave one whole entry. The exporter is a stand-in that writes
// what kernelbench_export.py writes and counts its runs, so no PyTorch is needed.
#include "engine/task/import_cache.h"
#include "engine/task/kernelbench_import.h"
#include "support/child_process.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

// Writes model.pt (the problem's bytes: an entry's content follows the problem) and the manifest;
// appends a line to $FAKE_EXPORTER_COUNT per run; sleeps $FAKE_EXPORTER_SLEEP seconds first.
const char* const fake_exporter = R"(import json, os, sys, time
args = sys.argv[1:]
problem, out, manifest = args[0], args[args.index("--out") + 1], args[args.index("--manifest") + 1]
with open(os.environ["FAKE_EXPORTER_COUNT"], "a") as f:
    f.write("run\n")
time.sleep(float(os.environ.get("FAKE_EXPORTER_SLEEP", "0")))
with open(problem, "rb") as src, open(os.path.join(out, "model.pt"), "wb") as dst:
    dst.write(src.read())
with open(manifest, "w") as f:
    json.dump({"module": "model.pt", "torchscript_method": "fake", "torch_version": "fake", "device": "cpu",
               "device_name": "cpu", "inputs": [{"name": "x", "shape": [4], "dtype": "float32", "init": "randn"}],
               "parameters": [], "outputs": [{"shape": [4], "dtype": "float32"}],
               "eager": {"status": "skipped", "reason": "fake"}, "compile": {"status": "skipped", "reason": "fake"}}, f)
)";

// An interpreter that runs scripts with python3 but says where torch's version.py is without it:
// a PyTorch of the test's choosing, so that the key can be seen to follow it.
std::string fake_python(const fs::path& dir, const std::string& name, const fs::path& version_py) {
  const auto path = dir / name;
  std::ofstream(path) << "#!/bin/sh\nif [ \"$1\" = -c ]; then echo '" << version_py.string()
                      << "'; exit 0; fi\nexec python3 \"$@\"\n";
  fs::permissions(path, fs::perms::owner_all);
  return path.string();
}

struct sandbox {
  fs::path dir = fs::temp_directory_path() / ("kblaster-import-cache-test-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(counter()++));
  fs::path cache = dir / "cache";
  fs::path problem = dir / "19_ReLU.py";
  fs::path exporter = dir / "fake_export.py";
  fs::path count_file = dir / "count";
  std::string python;

  sandbox() {
    fs::create_directories(dir);
    std::ofstream(problem) << "class Model: pass  # version 1\n";
    std::ofstream(exporter) << fake_exporter;
    std::ofstream(dir / "version.py") << "__version__ = '2.5.1+cu124'\n";
    python = fake_python(dir, "python", dir / "version.py");
    ::setenv("FAKE_EXPORTER_COUNT", count_file.c_str(), 1);
    ::setenv("FAKE_EXPORTER_SLEEP", "0", 1);
  }
  ~sandbox() {
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir, ec))
      fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add, ec);
    fs::remove_all(dir, ec);
  }
  sandbox(const sandbox&) = delete;
  sandbox& operator=(const sandbox&) = delete;

  static int& counter() {
    static int n = 0;
    return n;
  }

  kernelbench_import_options options(const std::string& out) const {
    kernelbench_import_options o;
    o.problem = problem.string();
    o.out_dir = (dir / out).string();
    o.python = python;
    o.exporter = exporter.string();
    o.timing_seconds = 0;
    o.cache_dir = cache;
    return o;
  }

  int exporter_runs() const {
    std::ifstream in(count_file);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

  // The entries in the cache: its folders but the staging one.
  std::vector<fs::path> entries() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(cache))
      if (e.is_directory() && e.path().filename() != ".staging") out.push_back(e.path());
    return out;
  }
};

import_inputs some_inputs() { return {"p1", "e1", "2.5.1 at /x (h1)", "cpu: Xeon", "cpu, timing 0 s"}; }

std::string key_of(const kernelbench_import_options& o, const std::string& python) {
  std::string why;
  const auto in = import_inputs_of(o, python, o.exporter, why);
  REQUIRE_MESSAGE(in, why);
  return in->key();
}

}  // namespace

TEST_CASE("the import cache's key changes with each of its inputs and with nothing else") {
  const auto base = some_inputs();
  CHECK(base.key() == some_inputs().key());
  CHECK(base.key().size() == 16);
  for (auto field : {&import_inputs::problem, &import_inputs::exporter, &import_inputs::torch, &import_inputs::device,
                     &import_inputs::options}) {
    auto changed = base;
    changed.*field += "x";
    CHECK(changed.key() != base.key());
  }
  // A character moved from one input to the next is another list of inputs.
  auto moved = base;
  moved.problem = "p";
  moved.exporter = "1e1";
  CHECK(moved.key() != base.key());
}

TEST_CASE("the key is made from the problem's bytes, the exporter's, PyTorch's version file and the options") {
  sandbox s;
  const auto o = s.options("out");
  const auto first = key_of(o, s.python);
  CHECK(key_of(o, s.python) == first);

  SUBCASE("the problem file's bytes, not its name") {
    const auto copy = s.dir / "elsewhere.py";
    fs::copy_file(s.problem, copy);
    auto moved = o;
    moved.problem = copy.string();
    CHECK(key_of(moved, s.python) == first);
    std::ofstream(copy, std::ios::app) << "# edited\n";
    CHECK(key_of(moved, s.python) != first);
  }
  SUBCASE("the exporter's bytes") {
    std::ofstream(s.exporter, std::ios::app) << "# a newer exporter\n";
    CHECK(key_of(o, s.python) != first);
  }
  SUBCASE("another PyTorch, and none") {
    std::ofstream(s.dir / "version2.py") << "__version__ = '2.6.0+cu126'\n";
    CHECK(key_of(o, fake_python(s.dir, "python-2.6", s.dir / "version2.py")) != first);
    CHECK(key_of(o, fake_python(s.dir, "python-none", "")) != first);
    CHECK(torch_identity(fake_python(s.dir, "python-none2", "")) == "none");
    CHECK(torch_identity(s.python).value_or("").find("2.5.1+cu124") == 0);
  }
  SUBCASE("the device and the timing") {
    auto timed = o;
    timed.timing_seconds = 1;
    CHECK(key_of(timed, s.python) != first);
    std::string why;
    const auto in = import_inputs_of(o, s.python, o.exporter, why);
    REQUIRE(in);
    CHECK(in->device.rfind("cpu: ", 0) == 0);
  }
}

TEST_CASE("a second import of a problem is served from the cache without running the exporter") {
  sandbox s;
  const auto first = import_kernelbench(s.options("run1"));
  CHECK_FALSE(first.cached);
  CHECK(s.exporter_runs() == 1);
  const auto second = import_kernelbench(s.options("run2"));
  CHECK(second.cached);
  CHECK(s.exporter_runs() == 1);
  CHECK(second.task.name == "19_ReLU");
  CHECK(kblaster::support::read_file(s.dir / "run2" / "model.pt") == kblaster::support::read_file(s.problem));
  CHECK(fs::exists(s.dir / "run2" / "task.json"));
  CHECK_FALSE(fs::exists(s.dir / "run2" / exporter_manifest_name));
  REQUIRE(s.entries().size() == 1);
  // The cache's files are read-only, so that a run's linked copy cannot be written through.
  const auto perms = fs::status(s.entries()[0] / "model.pt").permissions();
  CHECK((perms & fs::perms::owner_write) == fs::perms::none);

  SUBCASE("an import again into the same folder replaces its files") {
    CHECK(import_kernelbench(s.options("run2")).cached);
    CHECK(s.exporter_runs() == 1);
  }
  SUBCASE("without the cache the exporter runs, and writes no link into the cache") {
    auto o = s.options("run2");
    o.cache_dir.clear();
    CHECK_FALSE(import_kernelbench(o).cached);
    CHECK(s.exporter_runs() == 2);
    CHECK(import_kernelbench(s.options("run3")).cached);
  }
  SUBCASE("an edited problem is exported again") {
    std::ofstream(s.problem, std::ios::app) << "# version 2\n";
    CHECK_FALSE(import_kernelbench(s.options("run3")).cached);
    CHECK(s.exporter_runs() == 2);
    CHECK(s.entries().size() == 2);
  }
}

TEST_CASE("a damaged entry is noticed, said and built again") {
  sandbox s;
  import_kernelbench(s.options("run1"));
  REQUIRE(s.entries().size() == 1);
  const auto entry = s.entries()[0];
  std::string damage;
  SUBCASE("a file changed") {
    fs::permissions(entry / "model.pt", fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(entry / "model.pt", std::ios::app) << "x";
    damage = "model.pt has";
  }
  SUBCASE("a file missing") {
    fs::remove(entry / "model.pt");
    damage = "model.pt is missing";
  }
  SUBCASE("no entry manifest: a build cut short") {
    fs::remove(entry / "import_entry.json");
    damage = "no import_entry.json";
  }
  SUBCASE("an entry manifest that is not JSON") {
    kblaster::support::write_file_atomically(entry / "import_entry.json", "{\"format\": 1, ");
    damage = "not valid JSON";
  }
  std::string said;
  const auto again = import_kernelbench(s.options("run2"), [&](const std::string& line) { said += line + "\n"; });
  CHECK_FALSE(again.cached);
  CHECK(s.exporter_runs() == 2);
  CHECK_MESSAGE(said.find(damage) != std::string::npos, said);
  CHECK(said.find("importing it again") != std::string::npos);
  CHECK(import_kernelbench(s.options("run3")).cached);
  CHECK(s.exporter_runs() == 2);
  CHECK(s.entries().size() == 1);
}

TEST_CASE("the second process to publish an entry discards its copy and takes the first one's") {
  sandbox s;
  const import_cache cache(s.cache);
  const auto inputs = some_inputs();
  auto build = [&](const std::string& text) {
    const auto staging = cache.new_staging_dir();
    std::ofstream(staging / "model.pt") << text;
    std::ofstream(staging / exporter_manifest_name) << "{}";
    return staging;
  };
  const auto a = build("first"), b = build("second");
  const auto entry = cache.publish(a, inputs, 1);
  CHECK(cache.publish(b, inputs, 1) == entry);
  CHECK_FALSE(fs::exists(b));
  CHECK(kblaster::support::read_file(entry / "model.pt") == "first");
  std::string note;
  CHECK(cache.find(inputs, note) == entry);
  CHECK(note.empty());
}

TEST_CASE("two processes importing one problem at once leave one whole entry, exported once") {
  sandbox s;
  ::setenv("FAKE_EXPORTER_SLEEP", "1", 1);
  auto start = [&](const std::string& out) {
    kblaster::support::spawn_options o;
    o.set_environment = {"KBLASTER_KERNELBENCH_EXPORTER=" + s.exporter.string()};
    return kblaster::support::child_process::spawn(
        {KBLASTER_BINARY, "import", "kernelbench", s.problem.string(), "--out", (s.dir / out).string(), "--no-probe",
         "--no-timing", "--python", s.python, "--import-cache", s.cache.string()},
        o);
  };
  auto one = start("run1");
  auto two = start("run2");
  const int status_one = one.wait(), status_two = two.wait();
  CHECK(WIFEXITED(status_one));
  CHECK(WEXITSTATUS(status_one) == 0);
  CHECK(WIFEXITED(status_two));
  CHECK(WEXITSTATUS(status_two) == 0);
  CHECK(s.exporter_runs() == 1);  // the second waited for the first's entry
  REQUIRE(s.entries().size() == 1);
  CHECK(fs::is_empty(s.cache / ".staging"));
  for (const auto* out : {"run1", "run2"})
    CHECK(kblaster::support::read_file(s.dir / out / "model.pt") == kblaster::support::read_file(s.problem));
  ::setenv("FAKE_EXPORTER_SLEEP", "0", 1);
  auto o = s.options("run3");
  CHECK(import_kernelbench(o).cached);
}
