// Each worker's share of a run, from results.tsv: experiments, passes, keeps and the rate, for
// optimize's closing lines and report's per-GPU breakdown.
#pragma once

#include <string>
#include <vector>

#include "harness/results_log.h"

namespace ak {

struct WorkerStats {
  std::string worker;
  int experiments = 0, passed = 0, kept = 0;
  double per_hour = 0;  // over the span of the rows counted
};

// The loop's rows finished after `since_s` (the run's elapsed seconds), grouped by the worker
// that measured them, in order of first appearance. Rows without a worker (builds that failed,
// rows from before workers) are left out.
std::vector<WorkerStats> worker_stats(const std::vector<ResultRecord>& rows, double since_s = 0);

}  // namespace ak
