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
  double accounted = r.setup_seconds + r.timing.seconds + r.check_seconds + r.teardown_seconds;
  if (r.setup_seconds > 0) add("setup", r.setup_seconds - r.launcher_seconds);
  if (r.launcher_seconds > 0) add("launcher", r.launcher_seconds);
  for (const StageReport& s : r.stages) {
    add(s.stage, s.seconds);
    accounted += s.seconds;
  }
  if (r.timing.samples > 0) add("timing", r.timing.seconds);
  if (r.check_seconds > 0) add("check", r.check_seconds);
  if (r.teardown_seconds > 0) add("teardown", r.teardown_seconds);
  // The rest: the timed problem's upload.
  if (r.total_seconds - accounted >= 0.005) add("other", r.total_seconds - accounted);
  add("total", r.total_seconds);
  if (r.exit_seconds > 0) add("exit", r.exit_seconds);
  return text.str();
}

}  // namespace ak
