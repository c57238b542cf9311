#include "profile/ranking.h"

#include <algorithm>

#include "core/error.h"
#include "core/problem.h"
#include "core/registry.h"
#include "runtime/ceilings_cache.h"

namespace ak {
namespace {

// Fills op, problem, roofline and bound of an entry of ours; a note instead when the engine
// cannot take it (an operator or dtype it does not know, a problem it does not allow).
void classify(RankedEntry& r, const Ceilings& ceilings) {
  try {
    const Op& op = find_op(*r.entry.op);
    const Problem problem = parse_problem(r.entry.problem);
    op.validate(problem);
    const DType dtype = parse_dtype(r.entry.dtype);
    r.op = &op;
    r.problem = problem.to_string();
    const RooflineTimes per_call = roofline_times(ceilings, op.flops(problem), op.bytes(problem, dtype));
    r.roofline_us = per_call.seconds() * 1e6 * std::max(r.entry.calls, 1.0);
    r.bound = per_call.compute_bound() ? "compute" : "memory";
  } catch (const Error& e) {
    r.op = nullptr;
    r.problem = r.entry.problem;
    r.note = e.what();
  }
}

}  // namespace

double amdahl(double share, double part_speedup) {
  return part_speedup > 0 ? 1.0 / (1.0 - share + share / part_speedup) : 1.0;
}

Ranking rank_profile(const Profile& profile, const Ceilings& ceilings) {
  Ranking ranking;
  const double total = profile.total_us > 0 ? profile.total_us : 1;
  double remaining_after = 0;  // time of ours once each is at its roofline
  for (const ProfileEntry& e : profile.entries) {
    RankedEntry r;
    r.entry = e;
    r.share = e.us / total;
    if (e.op) classify(r, ceilings);
    if (r.op && r.roofline_us > 0) {
      r.headroom = std::max(1.0, e.us / r.roofline_us);
      r.projected = amdahl(r.share, r.headroom);
      ranking.covered_share += r.share;
      remaining_after += r.share / r.headroom;
    }
    ranking.entries.push_back(std::move(r));
  }
  std::stable_sort(ranking.entries.begin(), ranking.entries.end(),
                   [](const RankedEntry& a, const RankedEntry& b) { return a.entry.us > b.entry.us; });
  const double after = 1.0 - ranking.covered_share + remaining_after;
  ranking.projected_all = after > 0 ? 1.0 / after : 1.0;
  return ranking;
}

}  // namespace ak
