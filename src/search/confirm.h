// A search's winner confirmed against the configuration it started from. Each experiment's median
// is steady within itself, but between experiments a machine drifts (clocks, caches, placement):
// on an H200, configurations that run the same code read 8.4 and 9.1 us a few seconds apart. So
// the winner and the first configuration are timed again in rounds that alternate which goes
// first, and a gain counts only when every round agrees on it.
//   judge_confirmation   the verdict from the rounds' medians
#pragma once

#include <string>
#include <vector>

namespace ak {

struct ConfirmRound {
  double first_us = 0, best_us = 0;  // each configuration's median in this round
};

struct Confirmation {
  std::vector<ConfirmRound> rounds;
  double gain = 0;         // the median over the rounds of first_us / best_us
  bool confirmed = false;  // faster in every round, and the median gain at least 1 + min_gain
  std::string why;         // the verdict in words
};

// The rounds' verdict: confirmed when the winner was faster in every round and its median gain is
// at least min_gain (relative). Never confirmed without rounds or with a round that has no time.
Confirmation judge_confirmation(std::vector<ConfirmRound> rounds, double min_gain);

}  // namespace ak
