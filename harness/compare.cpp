// Output comparison, in float64 on the CPU so that the figures do not depend on the device.
#include "harness/compare.h"

#include <cmath>
#include <sstream>

namespace kblaster::harness {

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

comparison compare_output(const torch::Tensor& out_t, const torch::Tensor& ref_t, const engine::tolerance& tol) {
  comparison c;
  const auto out = out_t.detach().to(torch::kCPU, torch::kFloat64).contiguous().reshape({-1});
  const auto ref = ref_t.detach().to(torch::kCPU, torch::kFloat64).contiguous().reshape({-1});
  const double* o = out.data_ptr<double>();
  const double* r = ref.data_ptr<double>();
  c.elements = out.numel();
  double diff2 = 0, ref2 = 0;
  double omin = INFINITY, omax = -INFINITY, rmin = INFINITY, rmax = -INFINITY;
  for (std::int64_t i = 0; i < c.elements; ++i) {
    const double ov = o[i], rv = r[i];
    if (std::isnan(ov) && !std::isnan(rv)) {
      if (c.first_unwritten < 0) c.first_unwritten = i;
      ++c.unwritten;
    }
    const bool both_nan = std::isnan(ov) && std::isnan(rv);
    const bool same_inf = std::isinf(ov) && std::isinf(rv) && (ov > 0) == (rv > 0);
    const double err = both_nan || same_inf ? 0 : std::fabs(ov - rv);
    if (!(err <= tol.atol + tol.rtol * std::fabs(rv))) {  // written so that NaN counts as a mismatch
      if (c.first_mismatch < 0) c.first_mismatch = i;
      ++c.mismatches;
    }
    if (std::isfinite(err)) {
      c.max_abs_error = std::max(c.max_abs_error, err);
      if (rv != 0) c.max_rel_error = std::max(c.max_rel_error, err / std::fabs(rv));
      diff2 += err * err;
    } else if (!both_nan && !same_inf) {
      c.max_abs_error = INFINITY;
      c.max_rel_error = INFINITY;
      diff2 = INFINITY;
    }
    if (std::isfinite(rv)) {
      ref2 += rv * rv;
      rmin = std::min(rmin, rv);
      rmax = std::max(rmax, rv);
    }
    if (std::isfinite(ov)) {
      omin = std::min(omin, ov);
      omax = std::max(omax, ov);
    }
  }
  c.relative_l2_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  const auto sizes = out_t.sizes();

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
      << "; first at " << index_string(c.first_mismatch, sizes) << " (got " << o[c.first_mismatch] << ", expected "
      << r[c.first_mismatch] << "); max abs error " << c.max_abs_error << ", max rel error " << c.max_rel_error;
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

}  // namespace kblaster::harness
