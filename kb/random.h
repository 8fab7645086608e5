// A seeded random source whose draws are identical on every platform: std::mt19937_64 is
// specified exactly, but the standard distributions are not, so they are written out here.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace kblaster::kb {

/// Deterministic random draws for the selection policies. Not thread-safe.
class random_source {
 public:
  explicit random_source(std::uint64_t seed) : engine_(seed) {}

  /// Uniform in [0, 1) with 53 bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  /// Standard normal (Box-Muller; the spare value is dropped to keep the stream simple).
  double normal() {
    double u1 = uniform();
    while (u1 <= 0.0) u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  /// Gamma(shape, 1) by Marsaglia and Tsang, with the boost for shape < 1.
  double gamma(double shape) {
    if (shape < 1.0) {
      double u = uniform();
      while (u <= 0.0) u = uniform();
      return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = normal(), v = 1.0 + c * x;
      if (v <= 0.0) continue;
      v = v * v * v;
      const double u = uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

  /// Beta(a, b) from two gammas.
  double beta(double a, double b) {
    const double x = gamma(a), y = gamma(b);
    return x / (x + y);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace kblaster::kb
