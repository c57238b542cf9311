// A search budget: a number of experiments, a duration, or both unlimited.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

namespace ak {

struct Budget {
  size_t experiments;
  std::chrono::steady_clock::duration duration;
};

// "" → every candidate, "20" → 20 experiments, "90s" / "10m" / "1h" → a duration.
// Throws Error(Usage) for anything else.
Budget parse_budget(std::string_view text, size_t candidates);

}  // namespace ak
