// run_ncu against a stand-in ncu (a shell script: this machine has no GPU and no ncu): the
// profiled run and the reading back of its three pages, which must run at the same time (each
// export waits until all three have started, and gives up alone after 20 s), the pages coming
// back unchanged (recorded H100 pages) and the two parts' seconds kept apart.
#include "engine/profile/ncu_runner.h"
#include "support/files.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace kblaster::engine;
namespace fs = std::filesystem;

namespace {

std::string fx(const std::string& p) { return kblaster::support::read_file(std::string(KBLASTER_FIXTURES_DIR) + "/" + p); }

// The stand-in: `-i REPORT ... --page P` prints page-P.csv once all three exports have begun;
// otherwise (the profiled run) it waits 0.3 s and writes BASE.ncu-rep for `-o BASE`.
constexpr const char* stand_in = R"sh(#!/bin/sh
dir=$(dirname "$0")
case " $* " in
  *" --list-sections "*)
    [ -f "$dir/sections.txt" ] || exit 1
    cat "$dir/sections.txt" ;;
  *" -i "*)
    page=""; prev=""
    for a in "$@"; do [ "$prev" = "--page" ] && page=$a; prev=$a; done
    touch "$dir/began-$page"
    n=0
    while [ "$(ls "$dir" | grep -c '^began-')" -lt 3 ]; do
      n=$((n+1)); if [ $n -gt 200 ]; then echo "export $page ran alone for 20 s" >&2; exit 3; fi
      sleep 0.1
    done
    cat "$dir/page-$page.csv" ;;
  *)
    base=""; prev=""
    for a in "$@"; do [ "$prev" = "-o" ] && base=$a; prev=$a; done
    echo "$*" > "$dir/profiled-with"
    sleep 0.3
    echo report > "$base.ncu-rep" ;;
esac
)sh";

struct stand_in_ncu {
  // A folder of its own per test: run_ncu keeps what an ncu path's --list-sections said.
  fs::path dir;
  explicit stand_in_ncu(const std::string& name)
      : dir(fs::temp_directory_path() / ("kblaster-ncu-runner-test-" + std::to_string(::getpid()) + "-" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir / "tool");
    {
      std::ofstream(dir / "tool" / "ncu") << stand_in;
    }
    fs::permissions(dir / "tool" / "ncu", fs::perms::owner_all);
    std::ofstream(dir / "tool" / "page-details.csv") << fx("ncu-h100/matmul_naive.details.csv");
    std::ofstream(dir / "tool" / "page-raw.csv") << fx("ncu-h100/matmul_naive.raw.csv");
    std::ofstream(dir / "tool" / "page-source.csv") << fx("ncu-h100/matmul_naive.source_cuda.csv");
  }
  ~stand_in_ncu() { fs::remove_all(dir); }
  /// run_ncu with this stand-in, its report in the folder, over a program that does nothing.
  ncu_run_result run() const {
    ncu_options o;
    o.report_base = (dir / "profile").string();
    o.timeout = std::chrono::seconds(60);
    return run_ncu((dir / "tool" / "ncu").string(), o, {"/bin/true"});
  }
};

}  // namespace

TEST_CASE("run_ncu reads the report's three pages back at once, and times the profile apart from them") {
  stand_in_ncu ncu("pages");
  const auto run = ncu.run();
  INFO(run.error, run.log);
  REQUIRE(run.ok);
  CHECK(run.details_csv == fx("ncu-h100/matmul_naive.details.csv"));
  CHECK(run.raw_csv == fx("ncu-h100/matmul_naive.raw.csv"));
  CHECK(run.source_csv == fx("ncu-h100/matmul_naive.source_cuda.csv"));
  CHECK(run.profile_seconds >= 0.3);   // the stand-in's profiled run sleeps that long
  CHECK(run.export_seconds > 0);
  CHECK(run.seconds >= run.profile_seconds + run.export_seconds - 1e-6);
  // The pages are kept beside the report.
  const auto kept = ncu_pages_beside(run.report_path);
  CHECK(kblaster::support::read_file(kept.raw) == run.raw_csv);
}

TEST_CASE("run_ncu: a details page that cannot be read fails the run, the others only note it") {
  stand_in_ncu ncu("details");
  fs::remove(ncu.dir / "tool" / "page-details.csv");
  const auto run = ncu.run();
  CHECK_FALSE(run.ok);
  CHECK(run.error.find("exporting details failed") != std::string::npos);
}

// An ncu older than a section kblaster asks for fails the whole run on it: the section is left
// out instead, and the log says so. The table is ncu's --list-sections, abridged.
TEST_CASE("run_ncu asks only for the sections this ncu has") {
  stand_in_ncu ncu("older");
  std::string table =
      "---------------------------------- ------------------------------- ------- --------\n"
      "Identifier                         Display Name                    Enabled Filename\n"
      "---------------------------------- ------------------------------- ------- --------\n";
  for (const auto& s : requested_ncu_sections())
    if (s.identifier != "WorkloadDistribution") table += s.identifier + "    " + s.display_name + "    no    x.section\n";
  std::ofstream(ncu.dir / "tool" / "sections.txt") << table;
  const auto run = ncu.run();
  INFO(run.error, run.log);
  REQUIRE(run.ok);
  const auto asked = kblaster::support::read_file(ncu.dir / "tool" / "profiled-with");
  CHECK(asked.find("--section SpeedOfLight ") != std::string::npos);
  CHECK(asked.find("--section SourceCounters ") != std::string::npos);
  CHECK(asked.find("WorkloadDistribution") == std::string::npos);
  CHECK(run.log.find("this ncu has no section WorkloadDistribution") != std::string::npos);
  // An ncu whose list cannot be read is asked for everything, as before.
  stand_in_ncu unreadable("unreadable");
  REQUIRE(unreadable.run().ok);
  CHECK(kblaster::support::read_file(unreadable.dir / "tool" / "profiled-with").find("--section WorkloadDistribution") !=
        std::string::npos);
}

TEST_CASE("an ncu that does not know a metric is named as such, not as the program failing") {
  kblaster::support::process_result r;
  r.exit_code = 1;
  r.err = "==ERROR== Failed to find metric memory_l2_theoretical_sectors_global\n";
  const auto why = explain_ncu_failure(r, std::chrono::seconds(60));
  CHECK(why.find("this ncu does not know a metric kblaster asked for") != std::string::npos);
  CHECK(why.find("memory_l2_theoretical_sectors_global") != std::string::npos);
  CHECK(why.find("the program failed") == std::string::npos);
}
