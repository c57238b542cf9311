// Properties every searching strategy (local, anneal, model) must keep, whatever it searches for.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <set>

#include "test_strategies_support.h"

namespace ak {
namespace {

using test::grid;

const std::vector<std::string_view> kSearching = {"local", "anneal", "model"};

// A smooth bowl with its minimum at levels (3, 2, 4, ...), plus a failing corner.
std::optional<double> bowl(const Config& config) {
  const auto levels = test::levels_of(config);
  if (levels[0] == 1 && levels[1] == 1) return std::nullopt;
  double seconds = 1e-3;
  for (size_t p = 0; p < levels.size(); ++p) {
    const int off = levels[p] - static_cast<int>(2 + p % 3);
    seconds *= 1.0 + 0.2 * off * off;
  }
  return seconds;
}

std::set<Config> as_set(const std::vector<Config>& configs) {
  return {configs.begin(), configs.end()};
}

TEST(Strategies, ProposeEveryUntriedConfigOnceThenNothing) {
  const auto all = grid({4, 3, 5});
  for (const auto name : kSearching)
    for (size_t in_flight : {1u, 4u}) {
      // A baseline, a failure and a still-pending config the strategy did not propose.
      std::vector<Trial> history{
          {all[7], true, 2e-3, false}, {all[0], false, 0, false}, {all[30], false, 0, true}};
      auto strategy = make_strategy(name, all, 11);
      const auto proposed = test::run(*strategy, bowl, history, all.size() + 10, in_flight);
      EXPECT_EQ(proposed.size(), all.size() - 3) << name;
      EXPECT_EQ(as_set(proposed).size(), proposed.size()) << name << ": a config proposed twice";
      for (const auto& taken : {all[7], all[0], all[30]})
        EXPECT_FALSE(as_set(proposed).contains(taken)) << name;
      EXPECT_FALSE(strategy->next(history).has_value()) << name << ": proposes after the space is used up";
    }
}

TEST(Strategies, NeverRepeatAProposalWhoseResultHasNotArrived) {
  const auto all = grid({3, 4, 2});
  for (const auto name : kSearching) {
    auto strategy = make_strategy(name, all, 2);
    std::set<Config> seen;
    while (auto config = strategy->next({})) ASSERT_TRUE(seen.insert(*config).second) << name;
    EXPECT_EQ(seen, as_set(all)) << name;
  }
}

TEST(Strategies, AreDeterministicForASeedAndVaryWithIt) {
  const auto all = grid({5, 4, 3});
  for (const auto name : kSearching) {
    auto sequence = [&](uint64_t seed) {
      std::vector<Trial> history;
      return test::run(*make_strategy(name, all, seed), bowl, history, 25, 3);
    };
    const auto first = sequence(9);
    EXPECT_EQ(first, sequence(9)) << name;
    int differing = 0;
    for (uint64_t seed = 10; seed < 14; ++seed) differing += sequence(seed) != first;
    EXPECT_GE(differing, 3) << name;
  }
}

TEST(Strategies, StartFromAnEmptyHistoryOrOneOfFailuresOnly) {
  const auto all = grid({4, 4});
  for (const auto name : kSearching) {
    auto first = make_strategy(name, all, 1)->next({});
    ASSERT_TRUE(first.has_value()) << name;
    EXPECT_TRUE(as_set(all).contains(*first)) << name;

    std::vector<Trial> history;
    for (size_t i = 0; i < all.size(); i += 3) history.push_back({all[i], false, 0, false});
    const size_t failures = history.size();
    auto strategy = make_strategy(name, all, 1);
    const auto proposed = test::run(*strategy, bowl, history, all.size(), 2);
    EXPECT_EQ(proposed.size(), all.size() - failures) << name;
    EXPECT_EQ(as_set(proposed).size(), proposed.size()) << name;
  }
}

TEST(Strategies, IgnoreHistoryConfigsOutsideTheFeasibleSet) {
  const auto all = grid({3, 3});
  const Config stranger{{"P0", "9"}, {"P1", "1"}};
  for (const auto name : kSearching) {
    std::vector<Trial> history{{stranger, true, 1e-6, false}, {all[4], true, 1e-3, false}};
    const auto proposed = test::run(*make_strategy(name, all, 4), bowl, history, 100);
    EXPECT_EQ(proposed.size(), all.size() - 1) << name;
    EXPECT_FALSE(as_set(proposed).contains(stranger)) << name;
  }
}

TEST(Strategies, StayFastOnTheLargestSpace) {
  const auto all = grid({10, 10, 10, 10, 25});  // kMaxTuneConfigs
  ASSERT_EQ(all.size(), kMaxTuneConfigs);
  for (const auto name : kSearching) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<Trial> history;
    const auto proposed = test::run(*make_strategy(name, all, 5), bowl, history, 60, 4);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(proposed.size(), 60u) << name;
    // Quadratic work in the space (6e10 steps) would take minutes; linear work takes well under this.
    EXPECT_LT(took.count(), 10.0) << name;
  }
}

}  // namespace
}  // namespace ak
