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
  std::vector<int64_t> order;  // slot unit u holds pool unit order[u]
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
  for (const auto& set : pool_) {
    auto& inputs = pool_inputs_.emplace_back();
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      inputs.push_back(ctx.runtime.allocate(sig.inputs[i].bytes()));
      ctx.runtime.upload(inputs.back()->data(), set->input_bytes[i].data(), sig.inputs[i].bytes());
    }
    auto& rms = reference_rms_.emplace_back();
    for (const auto& ref : set->reference) rms.push_back(reference_rms(ref, set->rows));
  }
  for (size_t s = 0; s < slots; ++s) {
    auto slot = std::make_unique<Slot>();
    slot->args = std::make_unique<KernelArgs>(ctx.runtime, ctx.arena, sig);
    slots_.push_back(std::move(slot));
  }
}

TimedSlots::~TimedSlots() = default;

std::vector<int> TimedSlots::launch_ids() {
  std::vector<int> ids;
  for (auto& slot : slots_) ids.push_back(slot->args->launch_id(ctx_.launcher));
  return ids;
}

size_t TimedSlots::pick_slot() {
  return std::uniform_int_distribution<size_t>(0, slots_.size() - 1)(rng_);
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
    for (size_t i = 0; i < sig.inputs.size(); ++i) {
      void* dst = slot->args->inputs[i]->data();
      const void* src = pool_inputs_[slot->pool_set][i]->data();
      const int64_t unit = units_.inputs[i];
      if (unit > 0)
        ctx_.runtime.copy_units(dst, src, static_cast<size_t>(unit) * size_of(sig.inputs[i].dtype),
                                slot->order);
      else
        ctx_.runtime.copy(dst, src, sig.inputs[i].bytes());
    }
    for (auto& out : slot->args->outputs) out->poison();
  }
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
    std::vector<int64_t> inverse(slot->order.size());
    for (size_t u = 0; u < slot->order.size(); ++u)
      inverse[static_cast<size_t>(slot->order[u])] = static_cast<int64_t>(u);
    for (size_t j = 0; j < sig.outputs.size(); ++j) {
      const TensorSpec& spec = sig.outputs[j];
      const int64_t row_len = spec.shape.empty() ? 1 : spec.shape.back();
      const int64_t n_rows = spec.numel() / row_len;
      for (int k = 0; k < kSamplesPerOutput; ++k) {
        const int64_t row =
            set.rows.empty() ? std::uniform_int_distribution<int64_t>(0, n_rows - 1)(rng_)
                             : set.rows[std::uniform_int_distribution<size_t>(0, set.rows.size() - 1)(rng_)];
        const int64_t pool_index =
            row * row_len + std::uniform_int_distribution<int64_t>(0, row_len - 1)(rng_);
        const int64_t unit = units_.outputs[j];
        const int64_t slot_index =
            unit > 0 ? inverse[static_cast<size_t>(pool_index / unit)] * unit + pool_index % unit
                     : pool_index;
        const double ref = set.reference[j].data[static_cast<size_t>(pool_index)];
        samples_.push_back(
            {spec.dtype, ref,
             tolerance_.atol * reference_rms_[slot->pool_set][j] + tolerance_.rtol * std::fabs(ref),
             spec.name + "[" + std::to_string(slot_index) + "]"});
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

// Puts a slot's tensor back in the pool set's order (pool unit order[u] <- slot unit u).
std::vector<std::byte> TimedSlots::restore_order(const Slot& slot, const std::vector<std::byte>& bytes,
                                                 int64_t unit_elements, size_t element_size) const {
  if (unit_elements <= 0) return bytes;
  const size_t unit_bytes = static_cast<size_t>(unit_elements) * element_size;
  std::vector<std::byte> restored(bytes.size());
  for (size_t u = 0; u < slot.order.size(); ++u)
    std::copy_n(bytes.data() + u * unit_bytes, unit_bytes,
                restored.data() + static_cast<size_t>(slot.order[u]) * unit_bytes);
  return restored;
}

CheckOutcome TimedSlots::verify(size_t index) {
  CheckOutcome outcome;
  auto fail = [&](std::string reason) {
    outcome.ok = false;
    outcome.reason = std::move(reason) + " (a timed launch)";
    return outcome;
  };
  for (const auto& slot : slots_)
    for (const auto* group : {&slot->args->inputs, &slot->args->outputs})
      for (const auto& t : *group)
        if (std::string bad = t->check_guards(); !bad.empty()) return fail(bad);
  const Slot& slot = *slots_.at(index);
  const PreparedCase& set = *pool_[slot.pool_set];
  const KernelArgs& args = *slot.args;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const TensorSpec& spec = args.inputs[i]->spec();
    if (restore_order(slot, args.inputs[i]->download(), units_.inputs[i], size_of(spec.dtype)) !=
        set.input_bytes[i])
      return fail("input " + spec.name + " was modified");
  }
  for (size_t j = 0; j < args.outputs.size(); ++j) {
    const TensorSpec& spec = args.outputs[j]->spec();
    const auto bytes =
        restore_order(slot, args.outputs[j]->download(), units_.outputs[j], size_of(spec.dtype));
    const Comparison c = compare_output(spec, bytes, set.reference[j], tolerance_, set.rows);
    outcome.worst_norm_error = std::max(outcome.worst_norm_error, c.norm_error / tolerance_.norm_rtol);
    if (!c.ok) return fail(c.reason);
  }
  return outcome;
}

}  // namespace ak
