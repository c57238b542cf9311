// Alternatives: kernels of one run with the same operator, problem and dtype serve one slot of
// the model. `extract --backend both` and `optimize --suite --backend both` give each operator a
// CUDA and a Triton starter; the model runs the slot's fastest checked kernel, so the slot's time
// (for shares, the Amdahl pick and the projected speedup) is its fastest member's, and the report
// names the backend that won. A kernel alone in its slot is its own slot: nothing changes for it.
#pragma once

#include <string>
#include <vector>

#include "loop/run_state.h"

namespace ak {

// Whether two kernels serve the same slot (same non-empty operator, problem and dtype).
bool same_slot(const KernelState& a, const KernelState& b);

// The backend a kernel file is written for, from its extension: "cuda" (.cu), "triton" (.py),
// "host" (.cpp), else the extension.
std::string kernel_backend(const std::string& file);

// The slot's fastest measured member (best_us > 0), or nullptr when none has passed yet.
const KernelState* slot_leader(const std::vector<KernelState>& kernels, const KernelState& member);

// The slot's reference time: its fastest baseline (0 while no member has one).
double slot_baseline_us(const std::vector<KernelState>& kernels, const KernelState& member);

// Whether `k` is the first of its slot in plan order: the one that stands for the slot where
// each slot counts once (shares, the projected speedup).
bool first_of_slot(const std::vector<KernelState>& kernels, const KernelState& k);

}  // namespace ak
