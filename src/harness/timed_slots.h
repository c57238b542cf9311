// The timed problem's buffers: several slots (inputs and outputs in the shared arena), each
// refilled before every timed batch with a new drawing of its inputs (drawn_inputs.h): the
// contents of every unit (a row, a (batch, head-group) plane) are new at every launch, so no
// output a kernel kept from an earlier call -- of this batch, an earlier one or the checks -- is
// right for them, whatever it keys it on. Every launch of a batch writes its own slot, poisoned
// beforehand.
//
// What the judge reads, at positions and in slots the kernel cannot predict:
// - inside its clock: samples of every slot, until those of the launched slots are all written
//   and finite (and those of the others still poisoned);
// - off the clock, right after: one unit of every launched slot (two rows of a large unit), kept
//   for checking against its reference after the timed runs (a reservoir of them spread over
//   all batches: a kernel wrong in a fraction f of its launches escapes it with (1 - f)^256, or
//   ^32 for units as large as an attention plane);
// - before the next refill: the same samples and units again, which must not have changed (work
//   still running after the launches were reported done);
// - after the timed runs: one launched slot of the last batch whole.
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
#include "harness/drawn_inputs.h"

namespace ak {

// What the sampled outputs of a batch hold.
struct SampleReading {
  int samples = 0;
  int unwritten = 0;   // still the poison
  int wrong = 0;       // written, but not finite
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
  static constexpr size_t kCheckedUnits = 256;   // units checked against the reference in all, at most
  static constexpr int64_t kRowsPerCheck = 2;    // rows of a large unit (an attention plane)
  static constexpr int64_t kVerifiedRows = 48;   // rows of the slot verified whole, when sampled
  static constexpr int64_t kVerifiedUnits = 64;  // its units, at most
  // Elements of inputs and outputs (float64 on the judge's host) the kept checks, and apart the
  // slot verified whole, may draw: fewer units of an op whose units are large (attention planes).
  static constexpr int64_t kCheckedElements = int64_t{1} << 26;
  static constexpr int64_t kLeastCheckedUnits = 32;
  static constexpr int64_t kVerifiedElements = int64_t{1} << 24;

  // Draws the slots' inputs from `source` (an input set of `problem`), uploaded to the judge's
  // own memory.
  TimedSlots(const CheckContext& ctx, const Problem& problem, std::shared_ptr<const PreparedCase> source,
             size_t slots);
  ~TimedSlots();

  size_t size() const { return slots_.size(); }
  // The launcher's call ids of the slots this batch launches, in the batch's order.
  const std::vector<int>& batch_ids() const { return batch_ids_; }
  // After confirming that the last batch's outputs have not changed since: new inputs for every
  // slot, outputs poisoned, the next batch's slots and order, new sample positions and checked
  // units (device work, outside the kernel's time). Returns the seconds the device writes took:
  // a device the kernel's process keeps busy meanwhile makes them slower (timing.h).
  double refill();
  // What those writes cost with no kernel code loaded: `slots` slots of `problem` drawn from
  // `source` in the arena, written `rounds` times, each after an empty launcher run (so that the
  // device switches contexts as after a batch); the median, in seconds. The slots are freed after.
  static double time_refill(const CheckContext& ctx, const Problem& problem,
                            std::shared_ptr<const PreparedCase> source, size_t slots, int rounds);
  // Inside the clock: the samples, and the bytes read kept for the confirmation.
  SampleReading read_samples();
  // Off the clock, after each batch: reads the checked units of its launched slots.
  void after_batch();
  // After the timed runs: the last batch unchanged, every checked unit against its reference,
  // every slot's guard zones intact, then the whole of one slot: every output element written
  // and finite, its compared rows against the reference, its inputs unchanged.
  CheckOutcome verify(size_t slot);
  // Which slot of the last batch's launched ones a random pick lands on (the judge's generator).
  size_t pick_slot();
  // Every output element of the slots the last batch did not launch still holds the poison;
  // the reason otherwise.
  std::string check_unlaunched() const;

  // The tensors of slot `slot` (what the judge's tests read back).
  const KernelArgs& slot_args(size_t slot) const;

  // Spans read_samples gathers per batch for `slots` slots of `signature` (for the calibration).
  static size_t sample_count(const Signature& signature, size_t slots);

 private:
  struct Slot;
  struct Sample {
    DType dtype;
    std::string name;
    bool launched;
  };
  struct UnitCheck {
    UnitRequest request;
    size_t slot = 0;
    int batch = 0;
    std::vector<std::vector<std::byte>> read;  // per output, the ranges' bytes after the batch
  };
  std::vector<size_t> launched_slots() const;
  void choose_batch();
  void choose_samples();
  void choose_checks();
  std::vector<std::vector<std::byte>> read_ranges(const UnitCheck& check) const;
  void confirm_unchanged();
  std::string check_units(const std::vector<std::vector<std::vector<double>>>& expected) const;
  std::string check_inputs(const Slot& slot) const;
  CheckOutcome check_outputs(const Slot& slot, const UnitRequest& request,
                             const std::vector<std::vector<double>>& expected) const;
  UnitRequest whole_slot_request(uint64_t key);

  const CheckContext& ctx_;
  DrawnInputs drawn_;
  std::shared_ptr<const DeviceCase> source_device_;  // judge-only memory
  Tolerance tolerance_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Sample> samples_;
  std::vector<std::byte> last_samples_;  // the last reading inside the clock
  std::vector<int> batch_ids_;
  std::unique_ptr<Gather> gather_;
  std::vector<UnitCheck> batch_checks_;  // this batch's, read by after_batch
  std::vector<UnitCheck> reservoir_;     // a uniform sample of every batch's checks
  size_t checks_seen_ = 0;
  size_t checks_kept_ = 0;  // the reservoir's capacity
  int batches_ = 0;
  bool unconfirmed_ = false;  // a batch ran since the last confirmation
  std::mt19937_64 rng_;
};

}  // namespace ak
