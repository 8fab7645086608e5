// The judge's two ways of comparing an output (harness/compare.h) held to the same verdict, on
// the GPU: the one-pass device kernel that serves every floating output living there, and the
// LibTorch chunk loop that serves the rest (and was the only way before). Crafted outputs cover
// each reason a comparison gives: agreement, noise within tolerance, mismatches at known places,
// the NaN poison surviving in whole or part, infinities agreeing and not, a constant output, and
// values near the dtype's range; in float32, float16, bfloat16 and float64, over sizes that end
// mid-block and span several chunks. Then both ways are timed on a KernelBench-sized output.
//   compare_check [--large-elements N]     (exit status 1 on any difference)
#include "harness/compare.h"
#include "harness/compare_device.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace kblaster;
using harness::compare_output;
using harness::compare_route;
using harness::comparison;

namespace {

int failures = 0;

bool close_enough(double a, double b) {
  if (a == b || (std::isnan(a) && std::isnan(b))) return true;
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

// Every field that reaches a verdict or a report must agree; the sums may differ in their last
// bits (a different order of addition), the counts, indices, maxima and reasons not at all.
void check_same(const std::string& name, const comparison& device, const comparison& chunks) {
  std::vector<std::string> diffs;
  if (device.ok != chunks.ok) diffs.push_back("ok");
  if (device.reason != chunks.reason) diffs.push_back("reason: '" + device.reason + "' vs '" + chunks.reason + "'");
  if (device.elements != chunks.elements) diffs.push_back("elements");
  if (device.mismatches != chunks.mismatches)
    diffs.push_back("mismatches " + std::to_string(device.mismatches) + " vs " + std::to_string(chunks.mismatches));
  if (device.first_mismatch != chunks.first_mismatch) diffs.push_back("first_mismatch");
  if (device.unwritten != chunks.unwritten) diffs.push_back("unwritten");
  if (device.first_unwritten != chunks.first_unwritten) diffs.push_back("first_unwritten");
  if (device.max_abs_error != chunks.max_abs_error) diffs.push_back("max_abs_error");
  if (device.max_rel_error != chunks.max_rel_error) diffs.push_back("max_rel_error");
  if (!close_enough(device.relative_l2_error, chunks.relative_l2_error))
    diffs.push_back("relative_l2_error " + std::to_string(device.relative_l2_error) + " vs " +
                    std::to_string(chunks.relative_l2_error));
  if (diffs.empty()) {
    std::printf("  ok    %-44s %s\n", name.c_str(), device.ok ? "passes" : device.reason.substr(0, 70).c_str());
    return;
  }
  ++failures;
  std::printf("  FAIL  %s:", name.c_str());
  for (const auto& d : diffs) std::printf(" [%s]", d.c_str());
  std::printf("\n");
}

harness::device_element element_of(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat64: return harness::device_element::float64;
    case torch::kFloat16: return harness::device_element::float16;
    case torch::kBFloat16: return harness::device_element::bfloat16;
    default: return harness::device_element::float32;
  }
}

// One case: the outputs made on the GPU, compared both ways; the device pass must have run
// (a silent fallback would compare the chunk loop with itself).
void run_case(const std::string& name, const torch::Tensor& out, const torch::Tensor& ref, const engine::tolerance& tol,
              bool expect_ok) {
  harness::output_figures probe;
  const char* error = nullptr;
  if (!harness::compare_on_device(out.data_ptr(), ref.data_ptr(), element_of(out.scalar_type()), out.numel(), tol.atol,
                                  tol.rtol, probe, &error)) {
    ++failures;
    std::printf("  FAIL  %s: the device pass did not run (%s)\n", name.c_str(), error ? error : "?");
    return;
  }
  const auto device = compare_output(out, ref, tol, compare_route::automatic);
  const auto chunks = compare_output(out, ref, tol, compare_route::chunks);
  check_same(name, device, chunks);
  if (device.ok != expect_ok) {
    ++failures;
    std::printf("  FAIL  %s: expected %s\n", name.c_str(), expect_ok ? "a pass" : "a failure");
  }
}

void cases_for(torch::ScalarType type, std::int64_t n) {
  const auto opts = torch::TensorOptions().dtype(type).device(torch::kCUDA);
  const engine::tolerance tol{type == torch::kFloat32 || type == torch::kFloat64 ? 1e-4 : 1e-2,
                              type == torch::kFloat32 || type == torch::kFloat64 ? 1e-4 : 1e-2};
  const std::string tag = std::string(c10::toString(type)) + " n=" + std::to_string(n) + " ";
  const auto ref = torch::randn({n}, opts);
  run_case(tag + "identical", ref.clone(), ref, tol, true);
  run_case(tag + "noise within tolerance", (ref.to(torch::kFloat64) * (1 + 1e-6)).to(type), ref, tol, true);
  {
    auto out = ref.clone();
    const std::int64_t at = n / 3;
    out.narrow(0, at, std::min<std::int64_t>(5, n - at)).add_(1.0);
    if (n > 10) out.narrow(0, n - 1, 1).sub_(2.0);
    run_case(tag + "mismatches from n/3", out, ref, tol, false);
  }
  run_case(tag + "poison never written", torch::full({n}, NAN, opts), ref, tol, false);
  if (n > 4) {
    auto out = ref.clone();
    out.narrow(0, n / 2, n - n / 2).fill_(NAN);
    run_case(tag + "poison in the second half", out, ref, tol, false);
    // NaN where the reference is NaN too, and the same infinity on both sides: agreement.
    auto r2 = ref.clone(), o2 = ref.clone();
    r2.narrow(0, 1, 1).fill_(NAN);
    o2.narrow(0, 1, 1).fill_(NAN);
    r2.narrow(0, 2, 1).fill_(INFINITY);
    o2.narrow(0, 2, 1).fill_(INFINITY);
    r2.narrow(0, 3, 1).fill_(-INFINITY);
    o2.narrow(0, 3, 1).fill_(-INFINITY);
    run_case(tag + "NaN and infinities that agree", o2, r2, tol, true);
    auto o3 = o2.clone();
    o3.narrow(0, 3, 1).fill_(INFINITY);  // +inf where -inf is expected
    run_case(tag + "an infinity of the wrong sign", o3, r2, tol, false);
    auto o4 = ref.clone();
    o4.narrow(0, n - 1, 1).fill_(INFINITY);  // overflow where the reference is finite
    run_case(tag + "an infinity where the reference is finite", o4, ref, tol, false);
  }
  run_case(tag + "zero output", torch::zeros({n}, opts), ref, tol, false);
  run_case(tag + "half the answer (a magnitude failure)", (ref.to(torch::kFloat64) * 0.5).to(type), ref, tol, false);
  if (type == torch::kFloat32 || type == torch::kFloat64) {
    const auto big = ref * 1e30;
    run_case(tag + "values near 1e30", (big.to(torch::kFloat64) * (1 + 1e-7)).to(type), big, tol, true);
  }
}

double seconds_of(const std::function<void()>& f) {
  torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  torch::cuda::synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t large = std::int64_t{4096} * 393216;  // KernelBench level 1's outputs (6.4 GB in float32)
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--large-elements") == 0) large = std::atoll(argv[i + 1]);
  if (!torch::cuda::is_available()) {
    std::printf("compare_check: no CUDA device\n");
    return 2;
  }
  torch::NoGradGuard no_grad;
  torch::manual_seed(7);
  std::printf("the device pass and the chunk loop, case by case:\n");
  for (const auto type : {torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kFloat64})
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{257}, (std::int64_t{1} << 20) + 3})
      cases_for(type, n);
  // Several chunks of the loop (2^24 elements each), ending mid-chunk.
  cases_for(torch::kFloat32, 3 * (std::int64_t{1} << 24) + 1001);

  if (large > 0) {
    const auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA);
    const auto ref = torch::randn({large}, opts);
    const auto out = ref.clone();
    const engine::tolerance tol{1e-4, 1e-4};
    comparison a, b;
    compare_output(out, ref, tol);  // the partials' buffer allocated, the kernel loaded
    const double device_s = seconds_of([&] { a = compare_output(out, ref, tol, compare_route::automatic); });
    const double chunks_s = seconds_of([&] { b = compare_output(out, ref, tol, compare_route::chunks); });
    check_same("timed output of " + std::to_string(large) + " floats", a, b);
    std::printf("compare one output of %lld float32 (%.1f GB): device pass %.4f s, chunk loop %.4f s (%.0fx)\n",
                static_cast<long long>(large), static_cast<double>(large) * 4 / 1e9, device_s, chunks_s, chunks_s / device_s);
  }
  std::printf(failures ? "compare_check: %d failure(s)\n" : "compare_check: all agree\n", failures);
  return failures ? 1 : 0;
}
