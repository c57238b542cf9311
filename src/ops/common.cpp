#include "ops/common.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/parallel.h"

namespace ak::ops {

namespace {

// Draws in parallel yet reproducibly: fixed-size chunks, each with its own engine seeded from one
// draw of `rng` and the chunk's index, so the values never depend on the number of threads.
template <class Distribution>
void fill_parallel(Values& v, std::mt19937_64& rng, const Distribution& prototype) {
  constexpr int64_t kChunk = 1 << 16;
  const uint64_t base = rng();
  const int64_t n = static_cast<int64_t>(v.data.size());
  parallel_for((n + kChunk - 1) / kChunk, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      std::mt19937_64 engine(base ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(c + 1)));
      Distribution dist = prototype;
      const int64_t end = std::min(n, (c + 1) * kChunk);
      for (int64_t i = c * kChunk; i < end; ++i) v.data[static_cast<size_t>(i)] = dist(engine);
    }
  });
}

}  // namespace

void fill_normal(Values& v, std::mt19937_64& rng, double mean, double stddev) {
  fill_parallel(v, rng, std::normal_distribution<double>(mean, stddev));
}

void fill_uniform(Values& v, std::mt19937_64& rng, double lo, double hi) {
  fill_parallel(v, rng, std::uniform_real_distribution<double>(lo, hi));
}

void require(const Op& op, bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::Usage, std::string(op.name()) + ": " + what);
}

int64_t int_param(const Op& op, const Problem& problem, const std::string& name, int64_t fallback) {
  const double value = problem.param(name, static_cast<double>(fallback));
  if (std::isfinite(value) && value == std::round(value) && std::fabs(value) < 9e15)
    return static_cast<int64_t>(value);
  std::ostringstream out;
  out << name << " must be a whole number, got " << value;
  throw Error(ErrorKind::Usage, std::string(op.name()) + ": " + out.str());
}

double bytes_of(int64_t elements, DType t) {
  return static_cast<double>(elements) * static_cast<double>(size_of(t));
}

void for_each_row(int64_t n_rows, const std::vector<int64_t>& rows,
                  const std::function<void(int64_t)>& body) {
  for (int64_t r : rows)
    if (r < 0 || r >= n_rows)
      throw Error(ErrorKind::Internal, "reference: sampled row " + std::to_string(r) + " is outside [0, " +
                                           std::to_string(n_rows) + ")");
  const int64_t count = rows.empty() ? n_rows : static_cast<int64_t>(rows.size());
  parallel_for(count, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(rows.empty() ? i : rows[static_cast<size_t>(i)]);
  });
}

StageProblems with_param_everywhere(StageProblems problems, const std::string& name, bool on) {
  if (!on) return problems;
  problems.smoke.params[name] = 1.0;
  for (auto* list : {&problems.sweep, &problems.stability, &problems.edge})
    for (Problem& p : *list) p.params[name] = 1.0;
  return problems;
}

StageProblems rowwise_stage_problems(const Problem& extra_sweep) {
  return {{{64, 256}, {}},
          {{{1024, 1024}, {}},
           {{512, 4096}, {}},
           {{256, 8192}, {}},
           {{128, 16384}, {}},
           {{4096, 768}, {}},
           {{2048, 2048}, {}},
           {{300, 5120}, {}},
           extra_sweep},
          {{{256, 4096}, {}}},
          {{{1, 4096}, {}},
           {{7, 1}, {}},
           {{1, 1}, {}},
           {{3, 17}, {}},
           {{33, 1000}, {}},
           {{5, 4095}, {}},
           {{2, 65536}, {}},
           {{129, 127}, {}}}};
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
