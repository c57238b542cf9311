// The timed problem's buffers: several slots (inputs and outputs in the shared arena), each
// refilled before every timed batch with a fresh arrangement of one of a pool of prepared input
// sets: its units (Op::units: rows, or (batch, head-group) planes) in a new random order, drawn
// from a seed the kernel's process cannot see. A kernel never meets the same input twice in the
// timed runs, so no remembered answer can be right, and since a rearranged input's reference is
// the rearranged reference, checking costs no new reference. Every launch of a batch writes its
// own slot, poisoned beforehand; the judge reads a random sample of each slot's outputs (at
// positions the kernel cannot predict) and, after the timing, one whole slot.
//
// A batch launches a random subset of the slots (at least half) in a random order, and the slots
// left out keep their poison: a kernel that does the work of calls not yet made (every slot it
// has seen before, in one launch, the way a harness that always launches every slot in the same
// order can be gamed by batching) writes a slot the judge never launched, and fails.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/checks.h"

namespace ak {

// What the sampled outputs of a batch hold.
struct SampleReading {
  int samples = 0;
  int unwritten = 0;   // still the poison
  int wrong = 0;       // written, but not finite or outside the tolerance
  int unlaunched = 0;  // samples of slots this batch does not launch (must stay poisoned)
  int foreign = 0;     // of those, written: work for a call the judge never made
  std::string first;   // the first sample that is not right, named
  std::string first_foreign;
  int written() const { return samples - unwritten - (unlaunched - foreign); }
  bool all_poisoned() const { return written() == 0; }
  bool all_right() const { return unwritten == 0 && wrong == 0 && foreign == 0; }
};

class TimedSlots {
 public:
  static constexpr int kSamplesPerOutput = 16;

  // `pool`: prepared input sets of `problem` in one dtype. Uploads them to the judge's own memory.
  TimedSlots(const CheckContext& ctx, const Problem& problem,
             std::vector<std::shared_ptr<const PreparedCase>> pool, size_t slots);
  ~TimedSlots();

  size_t size() const { return slots_.size(); }
  // The launcher's call ids of the slots this batch launches, in the batch's order.
  const std::vector<int>& batch_ids() const { return batch_ids_; }
  // New contents for every slot, outputs poisoned, the next batch's slots and order, new sample
  // positions (device work; untimed).
  void refill();
  SampleReading read_samples();
  // The whole of one slot, after the timed runs: every output element against the rearranged
  // reference, the inputs unchanged, every slot's guard zones intact.
  CheckOutcome verify(size_t slot);
  // Which slot of the last batch's launched ones a random pick lands on (the judge's generator).
  size_t pick_slot();
  // Every output element of the slots the last batch did not launch still holds the poison;
  // the reason otherwise.
  std::string check_unlaunched() const;

  // Spans read_samples gathers per batch for `slots` slots of `signature` (for the calibration).
  static size_t sample_count(const Signature& signature, size_t slots);

 private:
  struct Slot;
  struct Sample {
    DType dtype;
    double reference;
    double allowed;
    std::string name;
    bool launched;
  };
  void choose_batch();
  void choose_samples();
  // A slot's tensor put back in its pool set's order, in `scratch` (judge-only memory); the
  // tensor itself when its units were not rearranged.
  const void* restore_order(const Slot& slot, const GuardedTensor& tensor, int64_t unit_elements,
                            Buffer& scratch) const;

  const CheckContext& ctx_;
  UnitLayout units_;
  Tolerance tolerance_;
  std::vector<std::shared_ptr<const PreparedCase>> pool_;
  std::vector<std::shared_ptr<const DeviceCase>> pool_device_;  // judge-only memory
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Sample> samples_;
  std::vector<int> batch_ids_;
  std::unique_ptr<Gather> gather_;
  std::mt19937_64 rng_;
};

}  // namespace ak
