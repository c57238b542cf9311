#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "search/strategy.h"

namespace ak {
namespace {

// 3 x 4 = 12 configs, in declaration order.
std::vector<Config> grid() {
  const TuneSpace space = parse_tune_space("// @tune A: 1, 2, 3\n// @tune B: 8, 16, 32, 64\n");
  return feasible_configs(space, {}, kMaxTuneConfigs);
}

// Runs a strategy to the end the way the loop does, recording each proposal as a trial.
std::vector<Config> drain(Strategy& strategy, std::vector<Trial> history = {}) {
  std::vector<Config> proposed;
  while (auto config = strategy.next(history)) {
    proposed.push_back(*config);
    history.push_back({*config, true, 1e-3});
    if (proposed.size() > 1000) break;  // a strategy that never ends fails below, not here
  }
  return proposed;
}

TEST(Strategy, ExhaustiveVisitsEveryConfigOnceInOrder) {
  auto strategy = make_strategy("exhaustive", grid(), 0);
  EXPECT_EQ(strategy->name(), "exhaustive");
  EXPECT_EQ(drain(*strategy), grid());
  EXPECT_FALSE(strategy->next({}).has_value());
}

TEST(Strategy, ExhaustiveSkipsConfigsAlreadyTried) {
  const auto all = grid();
  std::vector<Trial> history{{all[0], true, 1.0}, {all[5], false, 0.0}};
  auto proposed = drain(*make_strategy("exhaustive", all, 0), history);
  ASSERT_EQ(proposed.size(), all.size() - 2);
  EXPECT_EQ(proposed[0], all[1]);
  EXPECT_EQ(std::count(proposed.begin(), proposed.end(), all[5]), 0);
}

TEST(Strategy, RandomIsDeterministicForASeed) {
  const auto first = drain(*make_strategy("random", grid(), 42));
  const auto second = drain(*make_strategy("random", grid(), 42));
  EXPECT_EQ(first, second);
  EXPECT_NE(first, grid()) << "a random order that is the declaration order";
}

TEST(Strategy, RandomOrderDependsOnTheSeed) {
  const auto order = drain(*make_strategy("random", grid(), 1));
  int differing = 0;
  for (uint64_t seed = 2; seed < 6; ++seed)
    differing += drain(*make_strategy("random", grid(), seed)) != order;
  EXPECT_EQ(differing, 4);
}

TEST(Strategy, RandomOrderIsTheSameOnEveryPlatform) {
  // Drawn from mt19937_64's raw output, which the standard fixes; std::shuffle would not be.
  const auto order = drain(*make_strategy("random", grid(), 7));
  std::vector<std::string> names;
  for (const auto& config : order) names.push_back(to_string(config));
  EXPECT_EQ(names, (std::vector<std::string>{"A=2 B=8", "A=1 B=8", "A=1 B=32", "A=2 B=32", "A=3 B=32",
                                             "A=3 B=16", "A=1 B=16", "A=2 B=16", "A=3 B=64", "A=3 B=8",
                                             "A=2 B=64", "A=1 B=64"}));
}

TEST(Strategy, RandomCoversEveryConfigWithoutRepeats) {
  for (uint64_t seed : {0u, 1u, 99u}) {
    const auto proposed = drain(*make_strategy("random", grid(), seed));
    const std::set<Config> distinct(proposed.begin(), proposed.end());
    const auto all = grid();
    EXPECT_EQ(proposed.size(), all.size());
    EXPECT_EQ(distinct, std::set<Config>(all.begin(), all.end()));
  }
}

TEST(Strategy, NeverProposesWhatTheHistoryHolds) {
  const auto all = grid();
  std::vector<Trial> history;
  for (size_t i = 0; i < all.size(); i += 2) history.push_back({all[i], true, 1.0});
  for (const auto& entry : strategy_table()) {
    const auto proposed = drain(*make_strategy(entry.name, all, 3), history);
    EXPECT_EQ(proposed.size(), all.size() - history.size()) << entry.name;
    for (const auto& trial : history)
      EXPECT_EQ(std::count(proposed.begin(), proposed.end(), trial.config), 0) << entry.name;
  }
}

TEST(Strategy, NeverRepeatsAProposalStillWithoutResults) {
  // A loop that builds candidates ahead asks again before recording the first.
  for (const auto& entry : strategy_table()) {
    auto strategy = make_strategy(entry.name, grid(), 5);
    std::set<Config> seen;
    while (auto config = strategy->next({})) EXPECT_TRUE(seen.insert(*config).second) << entry.name;
    EXPECT_EQ(seen.size(), grid().size()) << entry.name;
  }
}

TEST(Strategy, EmptyFeasibleSetProposesNothing) {
  for (const auto& entry : strategy_table()) EXPECT_FALSE(make_strategy(entry.name, {}, 0)->next({}));
}

TEST(Strategy, TableNamesAreUniqueAndBuildTheirStrategy) {
  std::set<std::string_view> names;
  for (const auto& entry : strategy_table()) {
    EXPECT_TRUE(names.insert(entry.name).second) << entry.name;
    EXPECT_FALSE(entry.summary.empty());
    EXPECT_EQ(make_strategy(entry.name, grid(), 0)->name(), entry.name);
  }
  EXPECT_TRUE(names.contains("exhaustive"));
  EXPECT_TRUE(names.contains("random"));
}

TEST(Strategy, UnknownNameIsAUsageErrorListingTheKnownOnes) {
  try {
    make_strategy("annealing-typo", grid(), 0);
    FAIL() << "expected Error(Usage)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find("annealing-typo"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exhaustive, random"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ak
