#include "loop/run_state.h"

#include <algorithm>

#include "core/error.h"
#include "core/paths.h"
#include "loop/alternatives.h"

namespace ak {

RunState load_run_state(const std::filesystem::path& workspace) {
  const auto path = workspace / kRunStateFile;
  if (!std::filesystem::exists(path))
    throw Error(ErrorKind::Usage, "no run in " + workspace.string() + " (no " + kRunStateFile +
                                      "); start one with `autokernel optimize`");
  try {
    return nlohmann::json::parse(read_text_file(path)).get<RunState>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Io, path.string() + " is not a run state: " + e.what());
  }
}

void save_run_state(const std::filesystem::path& workspace, const RunState& state) {
  write_file_atomically(workspace / kRunStateFile, nlohmann::json(state).dump(1) + "\n");
}

double projected_speedup(const std::vector<KernelState>& kernels) {
  double shares = 0, now = 0;
  for (const auto& k : kernels) {
    if (!first_of_slot(kernels, k)) continue;  // alternatives of one slot count once: its fastest
    shares += k.share;
    const KernelState* leader = slot_leader(kernels, k);
    const double baseline_us = slot_baseline_us(kernels, k);
    const double ratio = leader && baseline_us > 0 ? leader->best_us / baseline_us : 1.0;
    now += k.share * ratio;
  }
  const double rest = std::max(0.0, 1.0 - shares);
  const double total = rest + now;
  return total > 0 ? (rest + shares) / total : 1.0;
}

}  // namespace ak
