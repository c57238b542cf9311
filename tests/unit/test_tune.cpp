// `tune` over host kernels: finds the configuration that is really fastest, confirms it against
// the first in alternating rounds before recommending it, and survives a configuration that
// crashes.
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace ak::test {
namespace {

nlohmann::json tune(const std::string& file, std::vector<std::string> extra = {}) {
  const auto dir = scratch_dir("tune");
  std::vector<std::string> args{"tune",       kernel(file), "--op",      "reduce",
                                "--shape",    "512x4096",   "--quick",   "--json",
                                "--max-time", "0.3",        "--results", (dir / "results.tsv").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProcessResult run = run_cli(args, 300);
  auto j = json_of(run);
  EXPECT_TRUE(j.is_object()) << run.output;
  return j;
}

TEST(Tune, FindsTheFastestConfigurationAndConfirmsIt) {
  const auto j = tune("tunable_repeat.cpp", {"--confirm-rounds", "3"});
  ASSERT_TRUE(j["best"].is_object()) << j.dump(2);
  EXPECT_EQ(j["best"]["config"], "REPEAT=1");
  EXPECT_EQ(j["experiments"], 4);
  double slowest = 0;
  for (const auto& t : j["trials"]) {
    EXPECT_EQ(t["status"], "PASS") << t.dump();
    slowest = std::max(slowest, t["timing"]["median_us"].get<double>());
  }
  EXPECT_GT(slowest, 4 * j["best"]["timing"]["median_us"].get<double>());
  EXPECT_GT(j["gain_over_first"].get<double>(), 4.0);  // the first tried is REPEAT=16
  // Timed again against REPEAT=16, three rounds: 16 row sums against one cannot read as noise.
  const auto& c = j["confirmation"];
  ASSERT_TRUE(c.is_object()) << j.dump(2);
  ASSERT_EQ(c["rounds"].size(), 3u) << c.dump(2);
  for (const auto& round : c["rounds"])
    EXPECT_GT(round["first_us"].get<double>(), 4 * round["best_us"].get<double>()) << c.dump(2);
  EXPECT_TRUE(c["confirmed"].get<bool>()) << c.dump(2);
  EXPECT_GT(c["gain"].get<double>(), 4.0);
  EXPECT_EQ(j["recommended"], "REPEAT=1");
}

TEST(Tune, RecordsACrashAndCarriesOn) {
  // The file's own default (MODE=1, the crashing one) is timed first; the search must record the
  // crash, carry on to MODE=0 and pick it.
  const auto j = tune("segfaults.cpp");
  ASSERT_EQ(j["trials"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["trials"][0]["config"], "MODE=1");
  EXPECT_EQ(j["trials"][0]["status"], "CRASH");
  EXPECT_EQ(j["trials"][1]["config"], "MODE=0");
  EXPECT_EQ(j["trials"][1]["status"], "PASS");
  EXPECT_EQ(j["best"]["config"], "MODE=0");
  EXPECT_EQ(j["gain_over_first"], 0.0);      // the first configuration never passed: no gain to claim
  EXPECT_TRUE(j["confirmation"].is_null());  // nothing to confirm against
  EXPECT_EQ(j["recommended"], "MODE=0");
}

TEST(Tune, RespectsAnExperimentBudget) {
  const auto j =
      tune("tunable_repeat.cpp", {"--budget", "2", "--strategy", "random", "--confirm-rounds", "0"});
  EXPECT_EQ(j["experiments"], 2);
  EXPECT_EQ(j["strategy"], "random");
  EXPECT_TRUE(j["confirmation"].is_null());  // --confirm-rounds 0: the search's readings stand
  EXPECT_EQ(j["recommended"], j["best"]["config"]);
}

}  // namespace
}  // namespace ak::test
