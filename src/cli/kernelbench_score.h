// KernelBench's score over a set of evaluation records: fast_p, the share of the attempted
// problems whose solution is correct and more than p times faster than the baseline (PyTorch eager
// by default, as KernelBench's level 1 reports; torch.compile on request). fast_0 is the share
// correct. A record without a time (timing skipped, or the baseline failed) counts for fast_0 only.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ak::cli::kb {

struct Scored {
  int level = 0;
  std::string key;
  std::string status;
  bool correct = false;
  std::optional<double> speedup;  // baseline time / solution time
};

// Throws Error(Usage) for a document that is not an evaluation record.
Scored scored(const nlohmann::json& record, const std::string& baseline);

struct LevelScore {
  int level = 0;
  int attempted = 0;
  int correct = 0;
  std::vector<std::pair<double, double>> fast;  // (p, fast_p)
  double geomean_speedup = 0;                   // over the correct ones with a time; 0 if none
};

// One entry per level present, in level order, with fast_p for each p of `ps`.
std::vector<LevelScore> score(const std::vector<Scored>& records, const std::vector<double>& ps);

nlohmann::json to_json(const std::vector<LevelScore>& levels, const std::string& baseline);

}  // namespace ak::cli::kb
