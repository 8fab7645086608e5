#include "harness/profile_runner.h"

#include <unistd.h>

#include <system_error>

namespace kblaster::harness {

namespace {
constexpr const char* report_option = "-o";
}

std::string ncu_report_base(const std::vector<std::string>& argv) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == report_option) return argv[i + 1];
  return {};
}

std::vector<std::string> with_ncu_report_base(std::vector<std::string> argv, const std::string& base) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == report_option) {
      argv[i + 1] = base;
      break;
    }
  return argv;
}

std::string ncu_report_file(const std::string& base) {
  const std::string ext = ".ncu-rep";
  if (base.size() >= ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0) return base;
  return base + ext;
}

profile_runner::profile_runner(const std::string& program, const std::string& device,
                               const std::vector<std::string>& ncu_argv, const std::filesystem::path& dir,
                               std::uint64_t serial, bool ahead)
    : ahead_(ahead) {
  const auto n = std::to_string(serial);
  argv_ = ahead ? with_ncu_report_base(ncu_argv, (dir / ("profile-ahead-" + n)).string()) : ncu_argv;
  wrapper_ = {argv_, (dir / ("runner-" + std::to_string(::getpid()) + "-" + n + ".sock")).string(),
              (dir / ("ncu-" + n + ".log")).string()};
  process_ = std::make_unique<runner_process>(program, device, wrapper_);
}

bool profile_runner::serves(const std::vector<std::string>& ncu_argv) const {
  return with_ncu_report_base(ncu_argv, ncu_report_base(argv_)) == argv_;
}

std::string profile_runner::deliver_report(const std::vector<std::string>& ncu_argv) const {
  const auto from = ncu_report_file(ncu_report_base(argv_));
  const auto to = ncu_report_file(ncu_report_base(ncu_argv));
  if (from == to || to == ".ncu-rep") return {};
  std::error_code ec;
  if (!std::filesystem::exists(from, ec)) return {};  // no report written: ncu's log says why
  std::filesystem::rename(from, to, ec);
  return ec ? "moving ncu's report to " + to + ": " + ec.message() : std::string();
}

}  // namespace kblaster::harness
