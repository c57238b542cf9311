#include "cli/kernelbench_score.h"

#include <cmath>
#include <map>

#include "core/error.h"

namespace ak::cli::kb {

Scored scored(const nlohmann::json& record, const std::string& baseline) {
  if (!record.is_object() || !record.contains("status") || !record.contains("problem"))
    throw Error(ErrorKind::Usage, "not a KernelBench evaluation record (no status or problem)");
  Scored s;
  s.level = record["problem"].value("level", 0);
  s.key = record["problem"].value("key", std::string("?"));
  s.status = record["status"].get<std::string>();
  s.correct = s.status == "PASS";
  const auto& timing = record.value("timing", nlohmann::json::object());
  const auto time_of = [&](const std::string& model) -> std::optional<double> {
    if (!timing.contains(model) || !timing[model].contains("median_us")) return std::nullopt;
    const double us = timing[model]["median_us"].get<double>();
    return us > 0 ? std::optional(us) : std::nullopt;
  };
  const auto ours = time_of("solution"), base = time_of(baseline);
  if (s.correct && ours && base) s.speedup = *base / *ours;
  return s;
}

std::vector<LevelScore> score(const std::vector<Scored>& records, const std::vector<double>& ps) {
  std::map<int, std::vector<const Scored*>> by_level;
  for (const auto& r : records) by_level[r.level].push_back(&r);
  std::vector<LevelScore> levels;
  for (const auto& [level, members] : by_level) {
    LevelScore l;
    l.level = level;
    l.attempted = static_cast<int>(members.size());
    double log_sum = 0;
    int timed = 0;
    for (const Scored* r : members) {
      if (!r->correct) continue;
      ++l.correct;
      if (r->speedup) {
        log_sum += std::log(*r->speedup);
        ++timed;
      }
    }
    for (double p : ps) {
      int fast = 0;
      for (const Scored* r : members)
        if (r->correct && (p <= 0 || (r->speedup && *r->speedup > p))) ++fast;
      l.fast.emplace_back(p, static_cast<double>(fast) / l.attempted);
    }
    l.geomean_speedup = timed > 0 ? std::exp(log_sum / timed) : 0;
    levels.push_back(l);
  }
  return levels;
}

nlohmann::json to_json(const std::vector<LevelScore>& levels, const std::string& baseline) {
  nlohmann::json out = {{"baseline", baseline}, {"levels", nlohmann::json::array()}};
  for (const auto& l : levels) {
    nlohmann::json j = {{"level", l.level},
                        {"attempted", l.attempted},
                        {"correct", l.correct},
                        {"geomean_speedup_correct", l.geomean_speedup}};
    for (const auto& [p, value] : l.fast) {
      std::string name = "fast_" + std::to_string(p);
      name.erase(name.find_last_not_of('0') + 1);  // fast_1.000000 -> fast_1., fast_1.5
      if (name.back() == '.') name.pop_back();
      j[name] = value;
    }
    out["levels"].push_back(j);
  }
  return out;
}

}  // namespace ak::cli::kb
