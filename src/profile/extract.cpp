#include "profile/extract.h"

#include "core/error.h"
#include "loop/run_state.h"
#include "profile/starter_fit.h"

namespace ak {

std::string kernel_name(const RankedEntry& entry) {
  std::string name = *entry.entry.op + "_";
  for (char c : entry.problem) {
    if (c == ':' || c == ',')
      name += '_';
    else if (c != '=')
      name += c;
  }
  return name + "_" + entry.entry.dtype;
}

Plan extract_plan(const std::filesystem::path& workspace, const Profile& profile, const Ranking& ranking,
                  size_t top, Backend backend, const std::vector<std::string>& kinds,
                  std::vector<std::string>* passed_over) {
  const std::vector<std::string> starters = kinds.empty() ? starter_kinds("auto", backend) : kinds;
  if (std::filesystem::exists(workspace / kRunStateFile))
    throw Error(ErrorKind::Usage, workspace.string() +
                                      " already holds an optimization run; extract into a new workspace "
                                      "(or `autokernel run --restart`)");
  std::filesystem::remove_all(workspace / "kernels");  // what an earlier extract left is not this plan
  Plan plan{profile.short_name(), false, {}};
  size_t entries = 0;
  std::vector<std::string> refusals;
  for (const RankedEntry& e : ranking.entries) {
    if (entries >= top) break;
    if (!ranking.extractable(e)) continue;
    std::vector<std::string> usable;
    for (const auto& kind : starters) {
      if (auto why = starter_refusal(kind, *e.entry.op, e.problem))
        refusals.push_back(kernel_name(e) + ": " + *why);
      else
        usable.push_back(kind);
    }
    if (usable.empty()) continue;
    ++entries;
    for (const auto& kind : usable) {
      const std::string name = kernel_name(e) + (kind == starters.front() ? "" : "_" + kind);
      plan.kernels.push_back({name, *e.entry.op, copy_starter(workspace, kind, *e.entry.op, name), e.problem,
                              e.entry.dtype, e.share});
    }
  }
  if (passed_over) *passed_over = refusals;
  if (plan.kernels.empty())
    throw Error(ErrorKind::Usage,
                refusals.empty()
                    ? "the profile has no operator autokernel can extract (every entry is unknown)"
                    : "no starter takes the profile's operators (" + refusals.front() + ")");
  write_plan(workspace, plan);
  return plan;
}

}  // namespace ak
