#include "loop/worker_stats.h"

#include <algorithm>

namespace ak {
namespace {

std::string field(const ResultRecord& row, const char* name) {
  const auto it = row.find(name);
  return it == row.end() ? "" : it->second;
}

}  // namespace

std::vector<WorkerStats> worker_stats(const std::vector<ResultRecord>& rows, double since_s) {
  std::vector<WorkerStats> stats;
  double last = since_s;
  for (const auto& row : rows) {
    const std::string elapsed = field(row, "elapsed_s"), worker = field(row, "worker");
    if (elapsed.empty() || std::stod(elapsed) <= since_s) continue;
    last = std::max(last, std::stod(elapsed));
    if (worker.empty()) continue;
    auto it =
        std::find_if(stats.begin(), stats.end(), [&](const WorkerStats& s) { return s.worker == worker; });
    if (it == stats.end()) it = stats.insert(stats.end(), WorkerStats{worker});
    it->experiments += 1;
    it->passed += field(row, "status") == "PASS";
    it->kept += field(row, "decision") == "kept";
  }
  const double hours = (last - since_s) / 3600;
  for (auto& s : stats) s.per_hour = hours > 0 ? s.experiments / hours : 0;
  return stats;
}

}  // namespace ak
