// Alternating whole-program runs and the median ratio's interval.
#include "engine/program/end_to_end.h"
#include "support/text.h"

#include "support/run_process.h"

#include <algorithm>
#include <cmath>

namespace kblaster::engine {

namespace {

// P(B <= k) for B ~ Binomial(n, 1/2).
double binomial_half_cdf(int n, int k) {
  double term = std::pow(0.5, n), sum = 0;  // C(n,0) / 2^n
  for (int i = 0; i <= k; ++i) {
    sum += term;
    term = term * (n - i) / (i + 1);
  }
  return sum;
}

double median_of_sorted(const std::vector<double>& v) {
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A program's wall time: milliseconds to a tenth below a second, else seconds to a millisecond.
std::string wall_time_text(double s) { return s < 1 ? support::ms_text(s * 1000, 1) : support::seconds_text(s, 3); }

// One whole run of a program, timed from outside as the user's shell would time it.
struct timed_run {
  double seconds = 0;
  std::string error;
  bool cancelled = false;
};

timed_run run_once(const program_command& program, const std::string& side, std::chrono::seconds timeout,
                   std::stop_token stop) {
  std::vector<std::string> argv;
  if (!program.env.empty()) {
    argv.push_back("/usr/bin/env");
    argv.insert(argv.end(), program.env.begin(), program.env.end());
  }
  argv.insert(argv.end(), program.argv.begin(), program.argv.end());
  const auto r = support::run_process(argv, timeout,
                                      program.cwd.empty() ? std::nullopt : std::optional<std::string>(program.cwd), stop);
  timed_run out;
  out.seconds = r.seconds;
  out.cancelled = r.cancelled;
  if (r.ok() || r.cancelled) return out;
  const std::string how = r.timed_out         ? "ran past " + std::to_string(timeout.count()) + " s"
                          : r.failed_to_start ? "could not start"
                          : r.signal          ? "was killed by signal " + std::to_string(r.signal)
                                              : "exited with status " + std::to_string(r.exit_code);
  std::string output = r.err.empty() ? r.out : r.err;
  if (output.size() > 1500) output = "..." + output.substr(output.size() - 1500);
  out.error = "the " + side + " program " + how + (output.empty() ? "" : ":\n" + output);
  return out;
}

}  // namespace

ratio_summary summarize_ratios(std::vector<double> ratios) {
  ratio_summary s;
  s.pairs = static_cast<int>(ratios.size());
  if (ratios.empty()) return s;
  std::sort(ratios.begin(), ratios.end());
  s.median = median_of_sorted(ratios);
  // The widest-k interval [x_(k), x_(n-k+1)] whose two tails together hold at most 5 %.
  const int n = s.pairs;
  int k = 1;
  while (k + 1 <= (n + 1) / 2 && 2 * binomial_half_cdf(n, k) <= 0.05) ++k;
  s.low = ratios[static_cast<std::size_t>(k - 1)];
  s.high = ratios[static_cast<std::size_t>(n - k)];
  s.coverage = 1 - 2 * binomial_half_cdf(n, k - 1);
  return s;
}

std::string end_to_end_result::text() const {
  if (!ok()) return error.empty() ? (cancelled ? "cancelled before a pair was timed" : "not measured") : error;
  return support::times_text(speedup.median, 3) + " (" + (speedup.coverage >= 0.95 ? "95%" : "<95%") + " CI " +
         support::fixed_text(speedup.low, 3) + "-" + support::fixed_text(speedup.high, 3) + ", " +
         std::to_string(speedup.pairs) + " pairs)";
}

end_to_end_result measure_end_to_end(const program_command& original, const program_command& optimized,
                                     const end_to_end_options& options,
                                     const std::function<void(const std::string&)>& progress, std::stop_token stop) {
  end_to_end_result out;
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  // A failed or cancelled run ends the measurement: nothing is concluded from a part.
  const auto run = [&](const program_command& program, const std::string& side) -> std::optional<double> {
    const auto r = run_once(program, side, options.run_timeout, stop);
    if (r.cancelled || stop.stop_requested()) out.cancelled = true;
    else if (!r.error.empty()) out.error = r.error;
    else return r.seconds;
    return std::nullopt;
  };
  for (int i = 0; i < options.warmup_runs; ++i) {
    say("warming up (" + std::to_string(i + 1) + "/" + std::to_string(options.warmup_runs) + ")");
    if (!run(original, "original") || !run(optimized, "optimized")) return out;
  }
  const auto started = std::chrono::steady_clock::now();
  const auto spent = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started); };
  for (int pair = 0; pair < options.max_pairs; ++pair) {
    if (pair >= options.min_pairs && spent() >= options.budget) break;
    // ABBA: the original first in even pairs, second in odd ones.
    std::optional<double> a, b;
    if (pair % 2 == 0) {
      if (!(a = run(original, "original")) || !(b = run(optimized, "optimized"))) break;
    } else {
      if (!(b = run(optimized, "optimized")) || !(a = run(original, "original"))) break;
    }
    out.original_seconds.push_back(*a);
    out.optimized_seconds.push_back(*b);
    out.ratios.push_back(*a / *b);
    say("pair " + std::to_string(pair + 1) + ": original " + wall_time_text(*a) + ", optimized " + wall_time_text(*b) +
        " (" + support::times_text(*a / *b, 3) + ")");
  }
  out.speedup = summarize_ratios(out.ratios);
  return out;
}

}  // namespace kblaster::engine
