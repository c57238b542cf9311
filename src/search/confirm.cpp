#include "search/confirm.h"

#include <algorithm>
#include <cstdio>

namespace ak {
namespace {

std::string ratio_text(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3fx", ratio);
  return text;
}

}  // namespace

Confirmation judge_confirmation(std::vector<ConfirmRound> rounds, double min_gain) {
  Confirmation c;
  c.rounds = std::move(rounds);
  if (c.rounds.empty()) {
    c.why = "no confirming round was timed";
    return c;
  }
  std::vector<double> ratios;
  for (const auto& r : c.rounds) {
    if (r.first_us <= 0 || r.best_us <= 0) {
      c.why = "a confirming round has no time";
      return c;
    }
    ratios.push_back(r.first_us / r.best_us);
  }
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  c.gain = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const size_t slower =
      static_cast<size_t>(std::count_if(ratios.begin(), ratios.end(), [](double r) { return r <= 1; }));
  if (slower > 0) {
    c.why = "not faster in " + std::to_string(slower) + " of " + std::to_string(n) + " rounds (median " +
            ratio_text(c.gain) + "): within the machine's drift";
  } else if (c.gain < 1 + min_gain) {
    c.why = "faster in every round, by " + ratio_text(c.gain) + ", under the " + ratio_text(1 + min_gain) +
            " a gain must reach";
  } else {
    c.confirmed = true;
    c.why = "faster in all " + std::to_string(n) + " rounds, " + ratio_text(c.gain) + " (median)";
  }
  return c;
}

}  // namespace ak
