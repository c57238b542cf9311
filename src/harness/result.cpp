#include "harness/result.h"

#include <iomanip>
#include <sstream>

namespace ak {

// The names live once, in the JSON mapping of result.h.
std::string to_string(Status s) {
  return nlohmann::json(s).get<std::string>();
}

std::string phase_seconds(const ExperimentResult& r) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2);
  const char* separator = "";
  const auto add = [&](std::string_view name, double seconds) {
    text << separator << name << '=' << seconds;
    separator = " ";
  };
  if (r.compile_seconds > 0 && !r.compile_cached) add("compile", r.compile_seconds);
  double accounted = r.setup_seconds + r.timing.seconds;
  if (r.setup_seconds > 0) add("setup", r.setup_seconds);
  for (const StageReport& s : r.stages) {
    add(s.stage, s.seconds);
    accounted += s.seconds;
  }
  if (r.timing.samples > 0) add("timing", r.timing.seconds);
  // The rest: the timed problem's upload and its check after the timed runs, teardown.
  if (r.total_seconds - accounted >= 0.005) add("other", r.total_seconds - accounted);
  add("total", r.total_seconds);
  return text.str();
}

}  // namespace ak
