#include "harness/timed_slots.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/error.h"
#include "harness/compare.h"

namespace ak {

struct TimedSlots::Slot {
  std::unique_ptr<KernelArgs> args;
  size_t pool_set = 0;
  std::vector<int64_t> order;    // slot unit u holds pool unit order[u]
  std::vector<int64_t> inverse;  // pool unit p sits in slot unit inverse[p]
  int launch_id = -1;
  bool launched = false;  // by the coming (or last) batch
};

namespace {

// A secret of this process: the kernel's process cannot see it, so it cannot foresee the
// arrangements or the sampled positions.
uint64_t unpredictable_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

bool is_poison(const std::byte* element, size_t size) {
  return std::all_of(element, element + size, [](std::byte b) { return b == kPoisonPattern; });
}

}  // namespace

TimedSlots::TimedSlots(const CheckContext& ctx, const Problem& problem,
                       std::vector<std::shared_ptr<const PreparedCase>> pool, size_t slots)
    : ctx_(ctx), units_(ctx.op.units(problem)), pool_(std::move(pool)), rng_(unpredictable_seed()) {
  if (pool_.empty() || slots == 0) throw Error(ErrorKind::Internal, "TimedSlots: no pool or no slots");
  const Signature& sig = pool_.front()->signature;
  tolerance_ = ctx.op.tolerance(sig.inputs.front().dtype);
  for (const auto& set : pool_) pool_device_.push_back(ctx.cases.get(set, /*with_reference=*/false));
  for (size_t s = 0; s < slots; ++s) {
    auto slot = std::make_unique<Slot>();
    slot->args = std::make_unique<KernelArgs>(ctx.runtime, ctx.arena, sig);
    // Every slot's definition reaches the launcher before the first batch, launched or not.
    slot->launch_id = slot->args->launch_id(ctx.launcher);
    slots_.push_back(std::move(slot));
  }
}

TimedSlots::~TimedSlots() = default;

size_t TimedSlots::pick_slot() {
  std::vector<size_t> launched;
  for (size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s]->launched) launched.push_back(s);
  return launched.at(std::uniform_int_distribution<size_t>(0, launched.size() - 1)(rng_));
}

// Each slot is launched with probability 3/4, drawn again until at least half of them are: the
// kernel's process learns which ones only as the launches arrive.
void TimedSlots::choose_batch() {
  const size_t least = (slots_.size() + 1) / 2;
  std::bernoulli_distribution launch(0.75);
  std::vector<size_t> chosen;
  while (chosen.size() < least) {
    chosen.clear();
    for (size_t s = 0; s < slots_.size(); ++s)
      if (slots_.size() == 1 || launch(rng_)) chosen.push_back(s);
  }
  std::shuffle(chosen.begin(), chosen.end(), rng_);
  batch_ids_.clear();
  for (auto& slot : slots_) slot->launched = false;
  for (size_t s : chosen) {
    slots_[s]->launched = true;
    batch_ids_.push_back(slots_[s]->launch_id);
  }
}

size_t TimedSlots::sample_count(const Signature& signature, size_t slots) {
  return slots * signature.outputs.size() * kSamplesPerOutput;
}

void TimedSlots::refill() {
  const Signature& sig = pool_.front()->signature;
  for (auto& slot : slots_) {
    slot->pool_set = std::uniform_int_distribution<size_t>(0, pool_.size() - 1)(rng_);
    slot->order.resize(static_cast<size_t>(units_.count));
    std::iota(slot->order.begin(), slot->order.end(), 0);
    std::shuffle(slot->order.begin(), slot->order.end(), rng_);
    slot->inverse.resize(slot->order.size());
    for (size_t u = 0; u < slot->order.size(); ++u)
      slot->inverse[static_cast<size_t>(slot->order[u])] = static_cast<int64_t>(u);
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      void* dst = slot->args->inputs[i]->data();
      const void* src = pool_device_[slot->pool_set]->inputs[i]->data();
      const int64_t unit = units_.inputs[i];
      if (unit > 0)
        ctx_.runtime.copy_units(dst, src, static_cast<size_t>(unit) * size_of(sig.inputs[i].dtype),
                                slot->order);
      else
        ctx_.runtime.copy(dst, src, sig.inputs[i].bytes());
    }
    slot->args->poison();
  }
  choose_batch();
  choose_samples();
}

// For every slot and output: positions drawn among the pool reference's computed rows, mapped
// through the slot's arrangement to where the kernel must have written them.
void TimedSlots::choose_samples() {
  samples_.clear();
  std::vector<ByteSpan> spans;
  const Signature& sig = pool_.front()->signature;
  for (const auto& slot : slots_) {
    const PreparedCase& set = *pool_[slot->pool_set];
    for (size_t j = 0; j < sig.outputs.size(); ++j) {
      const TensorSpec& spec = sig.outputs[j];
      const int64_t row_len = spec.row_length();
      const int64_t n_rows = spec.numel() / row_len;
      const int64_t compared_rows = set.rows.empty() ? n_rows : static_cast<int64_t>(set.rows.size());
      for (int k = 0; k < kSamplesPerOutput; ++k) {
        const int64_t row_position = std::uniform_int_distribution<int64_t>(0, compared_rows - 1)(rng_);
        const int64_t column = std::uniform_int_distribution<int64_t>(0, row_len - 1)(rng_);
        const int64_t row = set.rows.empty() ? row_position : set.rows[static_cast<size_t>(row_position)];
        const int64_t pool_index = row * row_len + column;
        const int64_t unit = units_.outputs[j];
        const int64_t slot_index =
            unit > 0 ? slot->inverse[static_cast<size_t>(pool_index / unit)] * unit + pool_index % unit
                     : pool_index;
        const double ref = set.reference[j][static_cast<size_t>(row_position * row_len + column)];
        samples_.push_back({spec.dtype, ref,
                            tolerance_.atol * set.reference_rms[j] + tolerance_.rtol * std::fabs(ref),
                            spec.name + "[" + std::to_string(slot_index) + "]", slot->launched});
        const size_t size = size_of(spec.dtype);
        spans.push_back({static_cast<const std::byte*>(slot->args->outputs[j]->data()) +
                             slot_index * static_cast<int64_t>(size),
                         static_cast<uint32_t>(size)});
      }
    }
  }
  if (gather_)
    gather_->reset(spans);
  else
    gather_ = ctx_.runtime.prepare_gather(spans);
}

SampleReading TimedSlots::read_samples() {
  const std::vector<std::byte>& bytes = gather_->read();
  SampleReading reading;
  reading.samples = static_cast<int>(samples_.size());
  size_t at = 0;
  for (const Sample& s : samples_) {
    const std::byte* element = bytes.data() + at;
    const size_t size = size_of(s.dtype);
    at += size;
    std::string problem;
    if (!s.launched) {
      ++reading.unlaunched;
      if (is_poison(element, size)) continue;
      ++reading.foreign;
      if (reading.first_foreign.empty()) reading.first_foreign = s.name;
      continue;
    }
    if (is_poison(element, size)) {
      ++reading.unwritten;
      problem = s.name + " never written";
    } else {
      const double v = load_as_double(element, s.dtype, 0);
      if (std::isfinite(v) && std::fabs(v - s.reference) <= s.allowed) continue;
      ++reading.wrong;
      std::ostringstream out;
      out << s.name << " = " << v << ", reference " << s.reference;
      problem = out.str();
    }
    if (reading.first.empty()) reading.first = problem;
  }
  return reading;
}

std::string TimedSlots::check_unlaunched() const {
  for (const auto& slot : slots_) {
    if (slot->launched) continue;
    for (const auto& out : slot->args->outputs)
      if (!out->still_poisoned())
        return "an output of a timed slot the judge did not launch in the last batch was written (" +
               out->spec().name + "): work done for a call never made";
  }
  return "";
}

// Pool unit order[u] <- slot unit u: a copy of units in the inverse order.
const void* TimedSlots::restore_order(const Slot& slot, const GuardedTensor& tensor, int64_t unit_elements,
                                      Buffer& scratch) const {
  if (unit_elements <= 0) return tensor.data();
  ctx_.runtime.copy_units(scratch.data(), tensor.data(),
                          static_cast<size_t>(unit_elements) * size_of(tensor.spec().dtype), slot.inverse);
  return scratch.data();
}

CheckOutcome TimedSlots::verify(size_t index) {
  CheckOutcome outcome;
  auto fail = [&](std::string reason) {
    outcome.ok = false;
    outcome.reason = std::move(reason) + " (a timed launch)";
    return outcome;
  };
  for (const auto& slot : slots_)
    if (std::string bad = slot->args->broken_guard(); !bad.empty()) return fail(bad);
  const Slot& slot = *slots_.at(index);
  const PreparedCase& set = *pool_[slot.pool_set];
  const auto device_case = ctx_.cases.get(pool_[slot.pool_set]);  // now with its reference
  const DeviceCase& device = *device_case;
  const KernelArgs& args = *slot.args;
  size_t largest = 0;
  for (const auto* group : {&args.inputs, &args.outputs})
    for (const auto& t : *group) largest = std::max(largest, t->spec().bytes());
  auto scratch = ctx_.runtime.allocate(largest);
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const GuardedTensor& input = *args.inputs[i];
    const void* restored = restore_order(slot, input, units_.inputs[i], *scratch);
    if (ctx_.runtime.first_difference(restored, device.inputs[i]->data(), input.spec().bytes()) >= 0)
      return fail("input " + input.spec().name + " was modified");
  }
  for (size_t j = 0; j < args.outputs.size(); ++j) {
    const void* restored = restore_order(slot, *args.outputs[j], units_.outputs[j], *scratch);
    const Comparison c = compare_output(ctx_.runtime, restored, set, device, j, tolerance_);
    outcome.worst_norm_error = std::max(outcome.worst_norm_error, c.norm_error / tolerance_.norm_rtol);
    if (!c.ok) return fail(c.reason);
  }
  return outcome;
}

}  // namespace ak
