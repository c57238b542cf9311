// What a loop run with tests/loop_agents/cheating.sh must leave in results.tsv, on either backend:
// the baseline, then the three cheats rejected with what they did, and nothing kept.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "harness/results_log.h"

namespace ak::test {

inline void expect_cheats_rejected_and_none_kept(const std::vector<ResultRecord>& rows) {
  ASSERT_GE(rows.size(), 4u);
  EXPECT_EQ(rows[0].at("decision"), "baseline") << rows[0].at("reason");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"FAIL", "unexpected message on the launch channel"},
      {"FAIL", "never written"},
      {"CRASH", "called fork"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(rows[i + 1].at("status"), expected[i].first) << rows[i + 1].at("reason");
    EXPECT_NE(rows[i + 1].at("reason").find(expected[i].second), std::string::npos)
        << rows[i + 1].at("reason");
  }
  for (const auto& r : rows) EXPECT_NE(r.at("decision"), "kept") << r.at("reason");
}

}  // namespace ak::test
