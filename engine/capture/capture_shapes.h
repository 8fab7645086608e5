// Verifying a rewrite of a captured kernel on more than the one launch it was captured from. A
// rewrite verified on one shape may hold only there: a tail dropped where the size is a multiple
// of the block, a grid computed from the captured size written as a constant. The user names
// more runs of the program (kblaster.run.shapes, `--shape ARGS`); each run's launch is captured
// as its own task, every candidate the loop verifies on the first is moved onto each of the
// others (its code above the launcher, and that shape's launcher with the rewrite's launch
// carried in) and verified there too, and a candidate that fails on any shape fails, naming the
// shape, the allocation and the first mismatching element.
#pragma once

#include "engine/capture/program_capture.h"
#include "engine/evaluate/evaluator.h"

#include <functional>
#include <stop_token>
#include <string>
#include <vector>

namespace kblaster::engine {

/// Captures the launch of `request.kernel` in each run of `request.run.shapes` (its arguments in
/// place of `request.run.args`), each as a task named KERNEL_shapeN (N from 2: the first shape
/// is `request`'s own). Throws capture_error naming the shape that cannot be captured, or one
/// whose launch is not the same kernel with the same memory layout.
std::vector<capture_result> capture_shapes(const capture_request& request, const capture_result& first,
                                           const std::function<void(const std::string&)>& progress, std::stop_token stop);

/// The candidate of `other`'s task made from `rewritten`, a candidate of `first`'s: the
/// rewrite's code above the launcher, then `other`'s launcher with every line the rewrite left
/// as generated taken from `other` and the rewrite's own lines kept. In a launch (`<<<…>>>`) the
/// rewrite changed, each element it left as generated takes `other`'s (the grid it did not
/// touch is the other shape's grid), each it wrote is kept, in the launcher's terms (the
/// parameters' names), so a grid computed from them follows the shape and a constant does not.
/// Throws capture_error when the two launchers are laid out differently, or the rewrite changed
/// a line that holds a captured value (`const int n = 4096;`): it would carry the first shape's
/// value into the other.
std::string transplant_rewrite(const std::string& first_generated, const std::string& rewritten, const std::string& other_generated);

/// One more shape, as the checking evaluator knows it.
struct other_shape {
  std::string task;       // its task's name
  std::string label;      // "launch 0 of row_reduce.cu 333 77"
  std::string generated;  // its task's kernel.cu as written
};

/// The first shape's task and what checks it on the others.
struct shape_check {
  std::string task;       // the task the loop optimizes
  std::string label;
  std::string generated;  // its kernel.cu as written
  std::vector<other_shape> others;
};

/// The shape check of `first` and `others` (captures of one kernel in runs with other arguments).
shape_check shape_check_of(const capture_result& first, const std::vector<capture_result>& others);

/// An evaluator that verifies every correct candidate of the first task on the other shapes too
/// (verification only: no timing, no profile there), through `inner`. A failure on another
/// shape turns the verdict into that failure, its reason naming the shape; a rewrite that cannot
/// be moved onto another shape fails with check "shape" and why. Other tasks pass straight through.
class shape_checking_evaluator final : public optimize::evaluator {
 public:
  shape_checking_evaluator(optimize::evaluator& inner, shape_check shapes);
  optimize::evaluation evaluate(const std::string& task_name, const std::string& source,
                                const optimize::evaluation_request& request) override;
  void prepare(const std::string& task_name, const std::string& source) override;
  std::string describe() const override;
  int parallelism() const override { return inner_.parallelism(); }

 private:
  optimize::evaluator& inner_;
  shape_check shapes_;
};

}  // namespace kblaster::engine
