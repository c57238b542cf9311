// Search strategies: proposers over a kernel's feasible configurations. A strategy sees the
// history of trials (its own and any a resumed run brings back) and names the next config to
// build, or nothing when it has no more. All strategies live in one table (strategy.cpp), so a
// new one (local search, annealing, model-based) is a class and a row, with no switch elsewhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "search/tune_space.h"

namespace ak {

struct Trial {
  Config config;
  bool ok = false;  // false: did not compile, or failed the harness (or still pending)
  double seconds = 0;
  bool pending = false;  // proposed and being built or run; no result yet
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  // The next config to try given the history, or nullopt when the strategy has nothing left.
  // Never a config already in `history`, nor one it proposed before: a caller that builds
  // several candidates ahead asks again before the earlier ones have results.
  virtual std::optional<Config> next(const std::vector<Trial>& history) = 0;
};

using StrategyFactory = std::unique_ptr<Strategy> (*)(std::vector<Config> feasible, uint64_t seed);

struct StrategyEntry {
  std::string_view name;
  std::string_view summary;  // one line, for --help
  StrategyFactory make;
};

// Every known strategy, in the order --help lists them.
std::span<const StrategyEntry> strategy_table();
// "NAME: summary" for each strategy, one per line, for --help texts.
std::string strategies_help();

// Builds the strategy called `name` over `feasible` (from feasible_configs). A seeded strategy
// proposes the same sequence for the same seed on every machine, so a resumed run continues it.
// Throws Error(Usage) listing the known names for an unknown one.
std::unique_ptr<Strategy> make_strategy(std::string_view name, std::vector<Config> feasible, uint64_t seed);

}  // namespace ak
