// Which KernelBench problems a bench runs: found in a KernelBench checkout (KERNELBENCH_DIR/
// KernelBench/levelN/*.py, or KERNELBENCH_DIR/levelN/*.py, or a folder of problems itself; a
// folder there that holds a task.json is a task of our own, e.g. one of examples/tasks, run as is),
// filtered by a selection ("1-10,23,Softmax": numbers and ranges of the problems' leading ids,
// or words their names contain) and split into shards (one per GPU worker or Slurm array task).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace kblaster::engine::bench {

/// A checkout or selection that cannot be used; the message says why.
class problem_set_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One problem: a KernelBench file, or a task folder (already a task: nothing to import).
struct problem_ref {
  int level = 0;
  int id = 0;                  ///< the leading number of the file name ("23_Softmax.py" -> 23), 0 if none
  std::string name;            ///< the file stem: "23_Softmax", or the task folder's name
  std::filesystem::path file;  ///< the .py file, or the task folder
  bool task_folder = false;    ///< `file` is a folder holding task.json
};

/// The problems of `level` (KernelBench files and task folders), ordered by id then name. Throws problem_set_error when the level's
/// folder does not exist (naming the places looked at).
std::vector<problem_ref> find_problems(const std::filesystem::path& kernelbench_dir, int level);

/// The problems `selection` names (empty: all). Throws problem_set_error for a malformed selection
/// or one that matches nothing.
std::vector<problem_ref> select_problems(const std::vector<problem_ref>& problems, const std::string& selection);

/// Shard `index` of `count` (round robin, so shards get a mix of early and late problems).
/// Throws problem_set_error unless 0 <= index < count.
std::vector<problem_ref> shard(const std::vector<problem_ref>& problems, int index, int count);

}  // namespace kblaster::engine::bench
