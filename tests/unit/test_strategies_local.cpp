// The neighbourhood behind local search and annealing, and how both move through it.
#include <gtest/gtest.h>

#include <set>

#include "search/strategy_space.h"
#include "test_strategies_support.h"

namespace ak {
namespace {

using test::distance;
using test::grid;

Config point(std::vector<int> levels) {
  Config config;
  for (size_t p = 0; p < levels.size(); ++p)
    config.emplace_back(test::param_name(p), std::to_string(levels[p]));
  return config;
}

std::set<Config> configs_at(const SearchSpace& space, const std::vector<size_t>& indices) {
  std::set<Config> configs;
  for (size_t i : indices) configs.insert(space.config(i));
  return configs;
}

TEST(StrategySpace, OrdersIntegerValuesNumericallyAndOthersByAppearance) {
  const TuneSpace tune = parse_tune_space("// @tune T: 512, 64, 128\n// @tune KIND: warp, block, grid\n");
  const SearchSpace space(feasible_configs(tune, {}, kMaxTuneConfigs));
  const auto centre = space.find({{"T", "128"}, {"KIND", "block"}});
  ASSERT_TRUE(centre.has_value());
  EXPECT_EQ(configs_at(space, space.one_step_neighbours(*centre)),
            (std::set<Config>{{{"T", "64"}, {"KIND", "block"}},
                              {{"T", "512"}, {"KIND", "block"}},
                              {{"T", "128"}, {"KIND", "warp"}},
                              {{"T", "128"}, {"KIND", "grid"}}}));
  EXPECT_FALSE(space.find({{"T", "256"}, {"KIND", "block"}}).has_value());
  EXPECT_FALSE(space.find({{"KIND", "block"}, {"T", "128"}}).has_value());
}

TEST(StrategySpace, OneStepSkipsOverConfigsThatRequireRulesOut) {
  // T=128 with V=2 is infeasible, so one step up from T=64 at V=2 lands on T=256.
  const TuneSpace tune =
      parse_tune_space("// @tune T: 64, 128, 256\n// @tune V: 1, 2\n// @require !(T == 128 && V == 2)\n");
  const SearchSpace space(feasible_configs(tune, {}, kMaxTuneConfigs));
  const auto centre = space.find({{"T", "64"}, {"V", "2"}});
  ASSERT_TRUE(centre.has_value());
  EXPECT_EQ(configs_at(space, space.one_step_neighbours(*centre)),
            (std::set<Config>{{{"T", "256"}, {"V", "2"}}, {{"T", "64"}, {"V", "1"}}}));
  EXPECT_EQ(configs_at(space, space.two_step_neighbours(*centre)),
            (std::set<Config>{{{"T", "128"}, {"V", "1"}}}));
}

TEST(StrategySpace, TwoStepMovesChangeExactlyTwoParametersByOneLevel) {
  const SearchSpace space(grid({3, 3, 3}));
  const auto neighbours = space.two_step_neighbours(*space.find(point({2, 2, 2})));
  EXPECT_EQ(neighbours.size(), 12u);  // 3 pairs x 4 directions
  for (const auto& config : configs_at(space, neighbours))
    EXPECT_EQ(distance(config, point({2, 2, 2})), std::pair(2, 1));
}

// A history the strategy did not make: one clearly fastest config among slower and failed ones.
std::vector<Trial> history_with_best(const Config& best) {
  return {{point({1, 1, 1}), true, 5e-3, false},
          {best, true, 1e-3, false},
          {point({5, 5, 5}), true, 4e-3, false},
          {point({4, 4, 4}), false, 0, false}};  // failed: never a place to search around
}

TEST(LocalAndAnneal, FirstSearchTheBestConfigsOneStepThenTwoStepNeighbours) {
  const auto all = grid({5, 5, 5});
  const Config best = point({2, 3, 4});
  for (const auto name : {"local", "anneal"})
    for (uint64_t seed : {0u, 1u, 2u}) {
      auto strategy = make_strategy(name, all, seed);
      auto history = history_with_best(best);
      std::vector<std::pair<int, int>> steps;  // with no result back yet, the best stays the centre
      for (int i = 0; i < 6 + 12; ++i) {
        const auto next = strategy->next(history);
        ASSERT_TRUE(next.has_value());
        history.push_back({*next, false, 0, true});
        steps.push_back(distance(*next, best));
      }
      for (int i = 0; i < 6; ++i) EXPECT_EQ(steps[i], std::pair(1, 1)) << name << " proposal " << i;
      for (int i = 6; i < 18; ++i) EXPECT_EQ(steps[i], std::pair(2, 1)) << name << " proposal " << i;
    }
}

TEST(LocalAndAnneal, MoveToAFasterNeighbour) {
  const auto all = grid({6, 6});
  for (const auto name : {"local", "anneal"}) {
    auto strategy = make_strategy(name, all, 3);
    std::vector<Trial> history{{point({3, 3}), true, 1e-3, false}};
    const auto first = strategy->next(history);
    ASSERT_TRUE(first.has_value());
    history.push_back({*first, true, 0.5e-3, false});  // twice as fast: the new centre
    const auto second = strategy->next(history);
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(distance(*second, *first).first, 1) << name;
    EXPECT_NE(distance(*second, point({3, 3})), std::pair(1, 1)) << name << " stayed at the old centre";
  }
}

TEST(LocalSearch, RestartsElsewhereWhenTheBestsNeighbourhoodIsUsedUp) {
  const auto all = grid({6, 6});
  auto strategy = make_strategy("local", all, 8);
  const Config best = point({1, 1});  // in a corner: two one-step and one two-step neighbour
  std::vector<Trial> history{{best, true, 1e-3, false}};
  for (int i = 0; i < 3; ++i) {
    const auto next = strategy->next(history);
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(distance(*next, best).second, 1);
    history.push_back({*next, true, 2e-3, false});
  }
  const auto restart = strategy->next(history);
  ASSERT_TRUE(restart.has_value());
  history.push_back({*restart, true, 3e-3, false});  // slower than the best, yet the new centre
  const auto after = strategy->next(history);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(distance(*after, *restart).second, 1) << to_string(*restart) << " then " << to_string(*after);
}

TEST(Anneal, SometimesAcceptsASlowerNeighbourWhileHot) {
  // The centre (4,4) and the first proposal's other neighbours share no neighbour, so the next
  // proposal tells which of the two is current.
  const auto all = grid({8, 8});
  int accepted = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    auto strategy = make_strategy("anneal", all, seed);
    std::vector<Trial> history{{point({4, 4}), true, 1e-3, false}};
    const auto move = strategy->next(history);
    ASSERT_TRUE(move.has_value());
    history.push_back({*move, true, 1.1e-3, false});  // 10% slower
    const auto next = strategy->next(history);
    ASSERT_TRUE(next.has_value());
    accepted += distance(*next, *move) == std::pair(1, 1);
  }
  // exp(-0.1 / (0.1 * 0.95^2)) = 0.33 of the time.
  EXPECT_GT(accepted, 15);
  EXPECT_LT(accepted, 55);
}

TEST(Anneal, NeverMovesToAFailedConfig) {
  const auto all = grid({8, 8});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto strategy = make_strategy("anneal", all, seed);
    std::vector<Trial> history{{point({4, 4}), true, 1e-3, false}};
    const auto move = strategy->next(history);
    ASSERT_TRUE(move.has_value());
    history.push_back({*move, false, 0, false});
    const auto next = strategy->next(history);
    ASSERT_TRUE(next.has_value());
    EXPECT_EQ(distance(*next, point({4, 4})), std::pair(1, 1)) << seed;
  }
}

}  // namespace
}  // namespace ak
