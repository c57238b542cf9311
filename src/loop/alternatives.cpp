#include "loop/alternatives.h"

#include <filesystem>

namespace ak {

bool same_slot(const KernelState& a, const KernelState& b) {
  return !a.op.empty() && a.op == b.op && a.shape == b.shape && a.dtype == b.dtype;
}

std::string kernel_backend(const std::string& file) {
  const std::string ext = std::filesystem::path(file).extension().string();
  if (ext == ".cu") return "cuda";
  if (ext == ".py") return "triton";
  if (ext == ".cpp" || ext == ".cc") return "host";
  return ext;
}

const KernelState* slot_leader(const std::vector<KernelState>& kernels, const KernelState& member) {
  const KernelState* leader = member.best_us > 0 ? &member : nullptr;
  for (const auto& k : kernels)
    if (&k != &member && same_slot(k, member) && k.best_us > 0 && (!leader || k.best_us < leader->best_us))
      leader = &k;
  return leader;
}

double slot_baseline_us(const std::vector<KernelState>& kernels, const KernelState& member) {
  double best = member.baseline_us;
  for (const auto& k : kernels)
    if (same_slot(k, member) && k.baseline_us > 0 && (best <= 0 || k.baseline_us < best))
      best = k.baseline_us;
  return best;
}

bool first_of_slot(const std::vector<KernelState>& kernels, const KernelState& k) {
  for (const auto& other : kernels) {
    if (&other == &k) return true;
    if (same_slot(other, k)) return false;
  }
  return true;
}

}  // namespace ak
