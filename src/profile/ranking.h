// The Amdahl plan of a profile: every entry ranked by its time, our operators classified as
// memory- or compute-bound against the ceilings measured on this device, with their headroom
// (time over the roofline time) and the end-to-end speedup the model would get if each one —
// and then all of them — ran at its roofline.
#pragma once

#include <string>
#include <vector>

#include "core/op.h"
#include "profile/profile_doc.h"
#include "runtime/runtime.h"

namespace ak {

struct RankedEntry {
  ProfileEntry entry;
  const Op* op = nullptr;  // null for an unknown op, or a problem the operator cannot take
  std::string problem;     // canonical (the engine's own form)
  double share = 0;        // of the profile's total time
  double roofline_us = 0;  // per forward pass at the measured ceilings; 0 when unknown
  std::string bound;       // "memory" or "compute"; "" when unknown
  double headroom = 1;     // time / roofline time, at least 1
  double projected = 1;    // end-to-end speedup if this entry alone reached its roofline
  std::string note;        // why an entry of ours cannot be extracted
};

struct Ranking {
  std::vector<RankedEntry> entries;  // by time, longest first
  double covered_share = 0;          // of our operators' entries
  double projected_all = 1;          // if every one of them reached its roofline

  bool extractable(const RankedEntry& e) const { return e.op != nullptr; }
};

// Amdahl's law: the whole's speedup when a part of it (share) runs `part_speedup` times faster.
double amdahl(double share, double part_speedup);

Ranking rank_profile(const Profile& profile, const Ceilings& ceilings);

}  // namespace ak
