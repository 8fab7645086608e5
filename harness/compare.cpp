// Output comparison, in float64 so that the figures do not depend on the output dtype.
#include "harness/compare.h"

#include "harness/compare_device.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

namespace kblaster::harness {
namespace {
// On a GPU, 2^24 elements: each float64 temporary of a chunk is 128 MiB, few launches per GB.
// On the CPU, 2^21 (16 MiB temporaries): under the size that glibc serves from fresh mappings
// (main.cpp sets it to 32 MiB), so that the forty-odd temporaries of each chunk reuse memory
// already faulted in rather than faulting in new pages every time (seconds per comparison where
// a first touch is slow, as in some virtual machines: 512 MB in 1.5 s).
constexpr std::int64_t device_chunk_elements = std::int64_t{1} << 24;
constexpr std::int64_t host_chunk_elements = std::int64_t{1} << 21;
}  // namespace

nlohmann::json comparison::to_json() const {
  nlohmann::json j{{"ok", ok},
                   {"elements", elements},
                   {"mismatches", mismatches},
                   {"max_abs_error", max_abs_error},
                   {"max_rel_error", max_rel_error},
                   {"relative_l2_error", relative_l2_error}};
  if (first_mismatch >= 0) j["first_mismatch"] = first_mismatch;
  if (unwritten) j["unwritten"] = unwritten;
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

std::string index_string(std::int64_t flat, c10::IntArrayRef sizes) {
  std::vector<std::int64_t> idx(sizes.size());
  for (std::size_t d = sizes.size(); d-- > 0;) {
    const auto n = std::max<std::int64_t>(1, sizes[d]);
    idx[d] = flat % n;
    flat /= n;
  }
  std::ostringstream s;
  s << "[";
  for (std::size_t d = 0; d < idx.size(); ++d) s << (d ? ", " : "") << idx[d];
  s << "]";
  return s.str();
}

namespace {

// The LibTorch route: where the tensors live, chunk by chunk, in float64. A KernelBench output can
// hold over a billion elements, which a host copy (or one float64 copy of the whole) would make
// slow or exhaust memory for. Only a handful of scalars per chunk cross to the host. It serves the
// CPU, a judge's copy kept in host memory, and the dtypes the device pass does not read.
output_figures figures_by_chunks(const torch::Tensor& out, const torch::Tensor& ref, const engine::tolerance& tol) {
  output_figures g;
  const double inf = INFINITY;
  g.ref_min = g.out_min = inf;
  g.ref_max = g.out_max = -inf;
  const auto elements = out.numel();
  const auto chunk = ref.is_cuda() ? device_chunk_elements : host_chunk_elements;
  for (std::int64_t start = 0; start < elements; start += chunk) {
    const auto n = std::min(chunk, elements - start);
    // A judge's copy of a large output lives in host memory (guarded_call.cpp): it crosses to
    // the reference's device one chunk at a time.
    const auto o = out.narrow(0, start, n).to(ref.device(), torch::kFloat64);
    const auto r = ref.narrow(0, start, n).to(torch::kFloat64);
    const auto o_nan = o.isnan(), r_nan = r.isnan();
    const auto unwritten = o_nan.logical_and(r_nan.logical_not());
    // Both NaN, or the same infinity, is agreement; anything else non-finite is an error.
    const auto agree = o_nan.logical_and(r_nan).logical_or(o.isinf().logical_and(o == r));
    const auto zero = torch::zeros({}, o.options());
    const auto err = torch::where(agree, zero, (o - r).abs());
    // Written so that a NaN error counts as a mismatch; agreement never does (|NaN| would make
    // the bound NaN, and NaN against NaN a mismatch).
    const auto mismatch = agree.logical_not().logical_and((err <= tol.atol + tol.rtol * r.abs()).logical_not());
    const auto err_finite = err.isfinite();
    const auto r_finite = r.isfinite(), o_finite = o.isfinite();
    const auto figures = torch::stack({
        unwritten.sum().to(torch::kFloat64),
        unwritten.to(torch::kUInt8).argmax().to(torch::kFloat64),
        mismatch.sum().to(torch::kFloat64),
        mismatch.to(torch::kUInt8).argmax().to(torch::kFloat64),
        torch::where(err_finite, err, zero).max(),
        torch::where(err_finite.logical_and(r != 0), err / r.abs(), zero).max(),
        torch::where(err_finite, err * err, zero).sum(),
        err_finite.logical_not().any().to(torch::kFloat64),
        torch::where(r_finite, r * r, zero).sum(),
        torch::where(r_finite, r, torch::full({}, inf, o.options())).min(),
        torch::where(r_finite, r, torch::full({}, -inf, o.options())).max(),
        torch::where(o_finite, o, torch::full({}, inf, o.options())).min(),
        torch::where(o_finite, o, torch::full({}, -inf, o.options())).max(),
    }).cpu();
    const double* f = figures.data_ptr<double>();
    if (f[0] > 0) {
      if (g.first_unwritten < 0) g.first_unwritten = start + static_cast<std::int64_t>(f[1]);
      g.unwritten += static_cast<std::int64_t>(f[0]);
    }
    if (f[2] > 0) {
      if (g.first_mismatch < 0) g.first_mismatch = start + static_cast<std::int64_t>(f[3]);
      g.mismatches += static_cast<std::int64_t>(f[2]);
    }
    g.max_abs_error = std::max(g.max_abs_error, f[4]);
    g.max_rel_error = std::max(g.max_rel_error, f[5]);
    g.diff2 += f[6];
    g.infinite_error = g.infinite_error || f[7] > 0;
    g.ref2 += f[8];
    g.ref_min = std::min(g.ref_min, f[9]);
    g.ref_max = std::max(g.ref_max, f[10]);
    g.out_min = std::min(g.out_min, f[11]);
    g.out_max = std::max(g.out_max, f[12]);
  }
  return g;
}

// The device route (compare_device.h): both tensors on the GPU in one of the floating dtypes it
// reads. Empty when the route does not apply or the device refused it.
std::optional<output_figures> figures_on_device([[maybe_unused]] const torch::Tensor& out,
                                                [[maybe_unused]] const torch::Tensor& ref,
                                                [[maybe_unused]] const engine::tolerance& tol) {
#ifdef KBLASTER_HARNESS_CUDA
  if (!out.is_cuda() || !ref.is_cuda() || out.scalar_type() != ref.scalar_type() || out.numel() == 0) return std::nullopt;
  device_element type;
  switch (out.scalar_type()) {
    case torch::kFloat32: type = device_element::float32; break;
    case torch::kFloat64: type = device_element::float64; break;
    case torch::kFloat16: type = device_element::float16; break;
    case torch::kBFloat16: type = device_element::bfloat16; break;
    default: return std::nullopt;
  }
  output_figures g;
  // LibTorch's work on these tensors (the contiguous copies) is queued on the legacy stream too.
  if (!compare_on_device(out.data_ptr(), ref.data_ptr(), type, out.numel(), tol.atol, tol.rtol, g, nullptr))
    return std::nullopt;
  return g;
#else
  return std::nullopt;
#endif
}

}  // namespace

comparison compare_output(const torch::Tensor& out_t, const torch::Tensor& ref_t, const engine::tolerance& tol,
                          compare_route route) {
  torch::NoGradGuard no_grad;
  comparison c;
  const auto out = out_t.detach().contiguous().reshape({-1});
  const auto ref = ref_t.detach().contiguous().reshape({-1});
  c.elements = out.numel();
  std::optional<output_figures> on_device;
  if (route == compare_route::automatic) on_device = figures_on_device(out, ref, tol);
  const output_figures g = on_device ? *on_device : figures_by_chunks(out, ref, tol);
  const double inf = INFINITY;
  c.unwritten = g.unwritten;
  c.first_unwritten = g.first_unwritten;
  c.mismatches = g.mismatches;
  c.first_mismatch = g.first_mismatch;
  c.max_abs_error = g.max_abs_error;
  c.max_rel_error = g.max_rel_error;
  double diff2 = g.diff2;
  const double ref2 = g.ref2, omin = g.out_min, omax = g.out_max, rmin = g.ref_min, rmax = g.ref_max;
  if (g.infinite_error) {
    c.max_abs_error = inf;
    c.max_rel_error = inf;
    diff2 = inf;
  }
  c.relative_l2_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  const auto sizes = out_t.sizes();
  const auto value_at = [](const torch::Tensor& t, std::int64_t i) { return t[i].item().toDouble(); };

  // Reasons in order of how much they say about the candidate.
  if (c.unwritten == c.elements && c.elements > 0) {
    c.reason = "the output was never written (it still holds the NaN poison set before the call)";
  } else if (c.unwritten > 0) {
    c.reason = "partial output: " + std::to_string(c.unwritten) + " of " + std::to_string(c.elements) +
               " elements unwritten (still NaN), the first at " + index_string(c.first_unwritten, sizes);
  } else if (c.elements > 1 && omin == omax && rmax - rmin > tol.atol) {
    std::ostringstream v;
    v << omin;
    c.reason = std::string(omin == 0 ? "zero" : "constant") + " output (every element is " + v.str() +
               ") where the reference varies";
  } else if (c.mismatches > 0) {
    std::ostringstream s;
    s << c.mismatches << " of " << c.elements << " elements outside atol=" << tol.atol << " rtol=" << tol.rtol
      << "; first at " << index_string(c.first_mismatch, sizes) << " (got " << value_at(out, c.first_mismatch) << ", expected "
      << value_at(ref, c.first_mismatch) << "); max abs error " << c.max_abs_error << ", max rel error " << c.max_rel_error;
    c.reason = s.str();
  } else if (const double limit = std::max(10 * tol.rtol, 1e-3); ref2 > 0 && c.relative_l2_error > limit) {
    std::ostringstream s;
    s << "relative L2 error " << c.relative_l2_error << " over " << limit
      << " although every element is within atol: the output is wrong at the reference's magnitude";
    c.reason = s.str();
  }
  c.ok = c.reason.empty();
  return c;
}

comparison compare_stressed(const torch::Tensor& out, const torch::Tensor& ref, const engine::tolerance& tol) {
  auto c = compare_output(out, ref, tol);
  if (c.ok) return c;
  const double limit = std::max(10 * tol.rtol, 1e-3);
  if (c.unwritten > 0) {
    // The poison was overwritten before this call's check ran: a NaN here is the kernel's own.
    c.reason = std::to_string(c.unwritten) + " of " + std::to_string(c.elements) +
               " elements are NaN where the reference is finite, the first at " + index_string(c.first_unwritten, out.sizes());
  } else if (!std::isfinite(c.relative_l2_error)) {
    c.reason = "infinite values where the reference is finite (overflow)";
  } else if (c.relative_l2_error > limit) {
    std::ostringstream s;
    s << "relative L2 error " << c.relative_l2_error << " over " << limit;
    c.reason = s.str();
  } else if (c.mismatches > 0) {
    // Element-wise differences alone, at a scale the tolerances were not written for: accepted.
    c.ok = true;
    c.reason.clear();
  }
  return c;
}

}  // namespace kblaster::harness
