#include "search/budget.h"

#include <charconv>
#include <string>

#include "core/error.h"

namespace ak {

Budget parse_budget(std::string_view text, size_t candidates) {
  const Budget unlimited{candidates, std::chrono::steady_clock::duration::max()};
  if (text.empty()) return unlimited;
  const char unit = text.back();
  const bool has_unit = unit == 's' || unit == 'm' || unit == 'h';
  const std::string_view digits = has_unit ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || value <= 0)
    throw Error(ErrorKind::Usage, "bad budget '" + std::string(text) +
                                      "' (expected a count like 20 or a time like 90s, 10m, 1h)");
  if (!has_unit) return {static_cast<size_t>(value), unlimited.duration};
  const double seconds = value * (unit == 'h' ? 3600 : unit == 'm' ? 60 : 1);
  return {candidates, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(seconds))};
}

}  // namespace ak
