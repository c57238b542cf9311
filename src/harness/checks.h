// One correctness check of a kernel on one problem, dtype and input case, with the anti-cheat
// protocol: poisoned outputs, guard zones, unchanged inputs, two input sets in the same buffers
// (a cached answer fails), and work confined to the given stream.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/op.h"
#include "harness/arena.h"
#include "harness/device_case.h"
#include "harness/guarded_tensor.h"
#include "harness/launcher.h"
#include "harness/prepared_case.h"
#include "runtime/runtime.h"

namespace ak {

// The judge's means: its device, the arena it shares with the launcher, the launcher that runs
// the kernel, the operator the kernel claims to compute, and the cases on the device.
struct CheckContext {
  Runtime& runtime;
  ArenaAllocator& arena;
  Launcher& launcher;
  const Op& op;
  DeviceCases& cases;
};

struct CheckOutcome {
  bool ok = true;
  std::string reason;
  double worst_norm_error = 0;  // in units of the tolerance (1.0 = at the limit)
};

// The device tensors of one problem, in the shared arena: allocated once, refilled per input set.
struct KernelArgs {
  std::vector<std::unique_ptr<GuardedTensor>> inputs, outputs;
  std::vector<double> scalars;
  std::unique_ptr<GuardedTensor> workspace;  // the signature's scratch, guarded, poisoned with the outputs

  KernelArgs(Runtime& runtime, ArenaAllocator& arena, const Signature& signature);
  CallLayout layout() const;
  // Fills the outputs and the workspace with the poison: what the next launch leaves there is its own.
  void poison();
  // "" when the guards around every tensor (the workspace too) are intact, else what was written.
  std::string broken_guard() const;
  // The launcher's id of this call, defined on first use.
  int launch_id(Launcher& launcher);

 private:
  std::optional<int> id_;
};

// The bytes KernelArgs of `signature` take in the arena (guards and alignment included).
size_t arena_bytes_of(const Signature& signature);

// A check draws this many input sets into the same buffers, seeds spec.seed, spec.seed + 1, ...
// (a kernel that remembers its last answer fails the second).
inline constexpr int kInputSetsPerCheck = 2;
CaseSpec input_set(const CaseSpec& check, int set);

// Runs the kernel once on `args` and waits for it; throws Error(Launch) when ak_launch returns
// non-zero, Error(Crash) on a fault.
void launch_kernel(const CheckContext& ctx, KernelArgs& args);

CheckOutcome run_check(const CheckContext& ctx, const CaseSpec& spec);
// Runs the same inputs `repeats` times: the outputs must be bitwise identical.
CheckOutcome run_determinism(const CheckContext& ctx, const CaseSpec& spec, int repeats);

// Copies a case's inputs from the judge's memory into the arena and poisons the outputs and the
// workspace (a kernel that kept something there from an earlier call reads garbage).
void load_case(const CheckContext& ctx, KernelArgs& args, const DeviceCase& device);
// Checks outputs against the reference plus guards and unchanged inputs, after the kernel ran.
CheckOutcome verify_case(const CheckContext& ctx, const KernelArgs& args, const PreparedCase& prepared,
                         const DeviceCase& device);

}  // namespace ak
