// Which CPU cores a process may use, as physical cores, and how the loop splits them between the
// processes that measure (one judge and one launcher per GPU, both spinning while they wait on
// each other) and the compiler pool, so that a compile never shares a core with a timing.
#pragma once

#include <string>
#include <vector>

namespace ak {

// The logical CPUs this process may run on, grouped by physical core (hyperthread siblings
// together), in the order of their first CPU.
std::vector<std::vector<int>> physical_cores();

struct CorePlan {
  std::vector<std::vector<int>> workers;  // each measuring worker's logical CPUs
  std::vector<int> builds;                // the compiler pool's
  bool pinned() const { return !workers.empty(); }
};

// Two physical cores per measuring worker, the rest to the builds; nothing pinned (an empty
// plan) when that would leave the builds fewer than one core.
CorePlan plan_cores(const std::vector<std::vector<int>>& cores, int measuring_workers);

// Pins the calling thread (and the processes it starts from now on) to `cpus`; false on failure.
bool pin_this_thread(const std::vector<int>& cpus);

// "0,16,1,17" and back (what AUTOKERNEL_JUDGE_CPUS holds); a malformed list is empty.
std::string cpu_list(const std::vector<int>& cpus);
std::vector<int> parse_cpu_list(const std::string& text);

// The variable that tells an experiment server where its judges run (harness/experiment_server.h).
inline constexpr const char* kJudgeCpusVariable = "AUTOKERNEL_JUDGE_CPUS";

}  // namespace ak
