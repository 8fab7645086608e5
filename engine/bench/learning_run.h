// The learning-curve experiment in one call (`kblaster bench --learning-curve`): learn a KB on a
// training set of problems, then run a disjoint held-out set from that KB, from a blank KB and
// from the seed KB alone, with the same seeds and budgets, and count what the KB saved (learning_curve.h).
// Every arm is an ordinary bench run in its own folder of OUT, so a stopped experiment resumes
// where it stopped and each arm can be reported like any bench:
//   OUT/learn/          the training set, one KB shared by its problems: OUT/learn/kb.sqlite is the learnt KB
//   OUT/cold-sN/        the held-out set from a blank KB (the paper's empty KB: the seed's states
//                       and techniques, nothing learnt, bench_options::blank_kb), seed N
//   OUT/seed-sN/        the held-out set from the shipped seed KB, seed N
//   OUT/warm-sN/        the held-out set from the learnt KB, seed N
//   OUT/foreign-sN/     with a foreign label: from the learnt KB exported with its statistics
//                       moved under that architecture label and imported (OUT/learn/kb-as-LABEL.json)
//   OUT/tasks/          the imported problems, shared by the arms
//   OUT/experiment.json the sets, seeds, arms and budget; OUT/learning.{json,md,html} the report
// Each held-out problem starts from its own copy of its arm's KB (bench_options::kb_per_problem),
// so that every held-out problem sees the same KB and what one problem learns does not reach the
// next; trajectories run one at a time (loop_options::jobs = 1), so that the attempts' order is
// the order they were measured in and a budget cuts the same runs every time.
// With a server's KB (bench.kb, a postgresql:// URI) the experiment's KBs are on that server: the
// training set learns into that database itself (it must hold no attempts when the experiment
// begins), the held-out arms' KBs are private databases beside it, the warm arm's a whole copy of
// what the training runs wrote there, each dropped when done, with its export kept in the run
// folder (OUT/ARM/kb.json, WORK/kb.json) where a file KB leaves kb.sqlite (bench_kb.h).
#pragma once

#include "engine/bench/learning_curve.h"
#include "engine/bench/runner.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// What to run. `bench` holds the checkout, levels, initial kernels, loop and import settings
/// shared by every arm, and OUT in bench.out; its selection, KB and warm start are set per arm.
struct learning_options {
  bench_options bench;
  std::string train, test;               ///< selections of the training and held-out sets (as --problems)
  std::vector<std::uint64_t> seeds{1, 2};  ///< the held-out runs' seeds; the training set runs with the first
  std::string foreign_arch;              ///< label for the foreign arm; empty: no foreign arm
  int train_breadth = 0;                 ///< the training arm's trajectories per iteration (it explores); 0: bench.loop.breadth
  std::string command;                   ///< the command line, for the report
};

/// What the call did.
struct learning_outcome {
  learning_summary summary;
  bool complete = false;  ///< every arm ran to its end (not stopped, nothing waiting)
  int waiting = 0;        ///< problems waiting for a deferred model's answers
  std::filesystem::path report_markdown, report_html, report_json;
  std::string html_note;  ///< why no HTML (Chart.js missing)
};

/// Runs (or resumes) the experiment, then writes its report. Throws problem_set_error for
/// unusable or overlapping sets, store_error for an unusable folder.
learning_outcome run_learning_curve(const learning_options& options, const bench_hooks& hooks);

}  // namespace kblaster::engine::bench
