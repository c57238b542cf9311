#include "ops/common.h"

#include <sstream>

namespace ak::ops {

void fill_normal(Values& v, std::mt19937_64& rng, double mean, double stddev) {
  std::normal_distribution<double> dist(mean, stddev);
  for (double& x : v.data) x = dist(rng);
}

void fill_uniform(Values& v, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  for (double& x : v.data) x = dist(rng);
}

void expect_rank(const Op& op, const Problem& problem) {
  const auto names = op.dim_names();
  if (problem.dims.size() == names.size()) return;
  std::ostringstream out;
  out << op.name() << ": expected " << names.size() << " dimensions (";
  for (size_t i = 0; i < names.size(); ++i) out << (i ? "x" : "") << names[i];
  out << "), got '" << problem.to_string() << "'";
  throw Error(ErrorKind::Usage, out.str());
}

void require(const Op& op, bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::Usage, std::string(op.name()) + ": " + what);
}

bool apply_rowwise_case(std::string_view input_case, Values& v, std::mt19937_64& rng) {
  const int64_t cols = v.spec.shape.back();
  const int64_t rows = v.spec.numel() / cols;
  if (input_case == kRandomCase) {
    fill_normal(v, rng);
  } else if (input_case == "large") {
    fill_normal(v, rng, 0.0, 1e3);
  } else if (input_case == "extreme") {
    fill_normal(v, rng, 0.0, 60.0);
  } else if (input_case == "near_constant") {
    std::normal_distribution<double> offset(0.0, 1.0), noise(0.0, 1e-3);
    for (int64_t r = 0; r < rows; ++r) {
      const double c = offset(rng);
      for (int64_t j = 0; j < cols; ++j) v.data[r * cols + j] = c + noise(rng);
    }
  } else if (input_case == "dominant") {
    fill_normal(v, rng);
    std::uniform_int_distribution<int64_t> pick(0, cols - 1);
    for (int64_t r = 0; r < rows; ++r) v.data[r * cols + pick(rng)] = 30.0;
  } else {
    return false;
  }
  return true;
}

}  // namespace ak::ops
