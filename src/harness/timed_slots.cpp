#include "harness/timed_slots.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include "core/error.h"
#include "harness/compare.h"
#include "harness/timing.h"

namespace ak {

struct TimedSlots::Slot {
  std::unique_ptr<KernelArgs> args;
  uint64_t key = 0;  // of its current drawing
  int launch_id = -1;
  bool launched = false;  // by the coming (or last) batch
};

namespace {

// A secret of this process: the kernel's process cannot see it, so it cannot foresee the
// drawings, the sampled positions or the checked units.
uint64_t unpredictable_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

bool is_poison(const std::byte* element, size_t size) {
  return std::all_of(element, element + size, [](std::byte b) { return b == kPoisonPattern; });
}

int64_t uniform(std::mt19937_64& rng, int64_t last) {
  return std::uniform_int_distribution<int64_t>(0, last)(rng);
}

// Output element ranges of `rows`, one per row, for every output that splits into units.
void add_row_ranges(const Signature& sig, const UnitLayout& units, const std::vector<int64_t>& rows,
                    UnitRequest& request) {
  request.ranges.assign(sig.outputs.size(), {});
  for (size_t j = 0; j < sig.outputs.size(); ++j) {
    if (units.outputs[j] <= 0) continue;
    const int64_t row_len = sig.outputs[j].row_length();
    auto& ranges = request.ranges[j];
    for (int64_t r : rows) {  // consecutive rows in one range: one read each
      if (!ranges.empty() && ranges.back().first + ranges.back().second == r * row_len)
        ranges.back().second += row_len;
      else
        ranges.emplace_back(r * row_len, row_len);
    }
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A slot's inputs of drawing `key` and its outputs poisoned: the judge's device writes before a batch.
void write_drawing(const CheckContext& ctx, const DrawnInputs& drawn, const DeviceCase& source,
                   KernelArgs& args, uint64_t key) {
  for (size_t i = 0; i < args.inputs.size(); ++i)
    drawn.fill(ctx.runtime, source, i, args.inputs[i]->data(), key);
  args.poison();
}

}  // namespace

TimedSlots::TimedSlots(const CheckContext& ctx, const Problem& problem,
                       std::shared_ptr<const PreparedCase> source, size_t slots)
    : ctx_(ctx), drawn_(ctx.op, problem, source), rng_(unpredictable_seed()) {
  if (slots == 0) throw Error(ErrorKind::Internal, "TimedSlots: no slots");
  const Signature& sig = drawn_.source().signature;
  tolerance_ = ctx.op.tolerance(sig.inputs.front().dtype);
  source_device_ = ctx.cases.get(source, /*with_reference=*/false);
  checks_kept_ = static_cast<size_t>(std::clamp<int64_t>(
      kCheckedElements / drawn_.unit_elements(), kLeastCheckedUnits, static_cast<int64_t>(kCheckedUnits)));
  for (size_t s = 0; s < slots; ++s) {
    auto slot = std::make_unique<Slot>();
    slot->args = std::make_unique<KernelArgs>(ctx.runtime, ctx.arena, sig);
    // Every slot's definition reaches the launcher before the first batch, launched or not.
    slot->launch_id = slot->args->launch_id(ctx.launcher);
    slots_.push_back(std::move(slot));
  }
}

TimedSlots::~TimedSlots() = default;

std::vector<size_t> TimedSlots::launched_slots() const {
  std::vector<size_t> launched;
  for (size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s]->launched) launched.push_back(s);
  return launched;
}

size_t TimedSlots::pick_slot() {
  const std::vector<size_t> launched = launched_slots();
  return launched.at(static_cast<size_t>(uniform(rng_, static_cast<int64_t>(launched.size()) - 1)));
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

const KernelArgs& TimedSlots::slot_args(size_t slot) const {
  return *slots_.at(slot)->args;
}

size_t TimedSlots::sample_count(const Signature& signature, size_t slots) {
  return slots * signature.outputs.size() * kSamplesPerOutput;
}

double TimedSlots::refill() {
  confirm_unchanged();
  ++batches_;
  const auto start = std::chrono::steady_clock::now();
  for (auto& slot : slots_) {
    slot->key = rng_();
    write_drawing(ctx_, drawn_, *source_device_, *slot->args, slot->key);
  }
  const double seconds = seconds_since(start);
  choose_batch();
  choose_samples();
  choose_checks();
  return seconds;
}

double TimedSlots::time_refill(const CheckContext& ctx, const Problem& problem,
                               std::shared_ptr<const PreparedCase> source, size_t slots, int rounds) {
  const DrawnInputs drawn(ctx.op, problem, source);
  const auto device = ctx.cases.get(source, /*with_reference=*/false);
  std::vector<std::unique_ptr<KernelArgs>> args;
  for (size_t s = 0; s < slots; ++s)
    args.push_back(std::make_unique<KernelArgs>(ctx.runtime, ctx.arena, drawn.source().signature));
  std::mt19937_64 rng(unpredictable_seed());
  std::vector<double> times;
  for (int r = 0; r <= rounds; ++r) {
    ctx.launcher.start_empty_run();
    ctx.launcher.finish_run(ctx.launcher.asynchronous());
    const auto start = std::chrono::steady_clock::now();
    for (auto& slot : args) write_drawing(ctx, drawn, *device, *slot, rng());
    if (r > 0)  // the first warms both ends
      times.push_back(seconds_since(start));
  }
  return median(std::move(times));
}

// For every slot and output: positions anywhere in the output.
void TimedSlots::choose_samples() {
  samples_.clear();
  std::vector<ByteSpan> spans;
  const Signature& sig = drawn_.source().signature;
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = *slots_[s];
    for (size_t j = 0; j < sig.outputs.size(); ++j) {
      const TensorSpec& spec = sig.outputs[j];
      const size_t size = size_of(spec.dtype);
      for (int k = 0; k < kSamplesPerOutput; ++k) {
        const int64_t index = uniform(rng_, spec.numel() - 1);
        samples_.push_back({spec.dtype,
                            spec.name + "[" + std::to_string(index) + "] of slot " + std::to_string(s),
                            slot.launched});
        spans.push_back({static_cast<const std::byte*>(slot.args->outputs[j]->data()) +
                             index * static_cast<int64_t>(size),
                         static_cast<uint32_t>(size)});
      }
    }
  }
  if (gather_)
    gather_->reset(spans);
  else
    gather_ = ctx_.runtime.prepare_gather(spans);
}

// One unit of every launched slot: its rows (two of a unit of many rows), for every output that
// splits into units.
void TimedSlots::choose_checks() {
  batch_checks_.clear();
  const Signature& sig = drawn_.source().signature;
  const UnitLayout& units = drawn_.units();
  const int64_t per_unit = drawn_.rows_per_unit();
  for (size_t slot : launched_slots()) {
    UnitCheck check;
    check.slot = slot;
    check.batch = batches_;
    UnitRequest& request = check.request;
    request.key = slots_[check.slot]->key;
    const int64_t unit = uniform(rng_, units.count - 1);
    request.units = {unit};
    if (per_unit == 0) {  // rows span units: the unit's elements, every row computed
      request.ranges.assign(sig.outputs.size(), {});
      for (size_t j = 0; j < sig.outputs.size(); ++j)
        if (const int64_t elements = units.outputs[j]; elements > 0)
          request.ranges[j].emplace_back(unit * elements, elements);
    } else {
      std::set<int64_t> rows;
      if (per_unit > kRowsPerCheck) {
        while (static_cast<int64_t>(rows.size()) < kRowsPerCheck)
          rows.insert(unit * per_unit + uniform(rng_, per_unit - 1));
      } else {
        for (int64_t r = 0; r < per_unit; ++r) rows.insert(unit * per_unit + r);
      }
      request.rows.assign(rows.begin(), rows.end());
      add_row_ranges(sig, units, request.rows, request);
    }
    batch_checks_.push_back(std::move(check));
  }
}

SampleReading TimedSlots::read_samples() {
  const std::vector<std::byte>& bytes = gather_->read();
  last_samples_.assign(bytes.begin(), bytes.end());
  SampleReading reading;
  reading.samples = static_cast<int>(samples_.size());
  size_t at = 0;
  for (const Sample& s : samples_) {
    const std::byte* element = bytes.data() + at;
    const size_t size = size_of(s.dtype);
    at += size;
    if (!s.launched) {
      ++reading.unlaunched;
      if (is_poison(element, size)) continue;
      ++reading.foreign;
      if (reading.first_foreign.empty()) reading.first_foreign = s.name;
      continue;
    }
    std::string problem;
    if (is_poison(element, size)) {
      ++reading.unwritten;
      problem = s.name + " never written";
    } else {
      const double v = load_as_double(element, s.dtype, 0);
      if (std::isfinite(v)) continue;
      ++reading.wrong;
      std::ostringstream out;
      out << s.name << " = " << v;
      problem = out.str();
    }
    if (reading.first.empty()) reading.first = problem;
  }
  return reading;
}

std::vector<std::vector<std::byte>> TimedSlots::read_ranges(const UnitCheck& check) const {
  const Slot& slot = *slots_[check.slot];
  std::vector<std::vector<std::byte>> read(check.request.ranges.size());
  for (size_t j = 0; j < read.size(); ++j) {
    const size_t size = size_of(slot.args->outputs[j]->spec().dtype);
    const auto* output = static_cast<const std::byte*>(slot.args->outputs[j]->data());
    for (const auto& [first, count] : check.request.ranges[j]) {
      const size_t at = read[j].size();
      read[j].resize(at + static_cast<size_t>(count) * size);
      ctx_.runtime.download(read[j].data() + at, output + static_cast<size_t>(first) * size,
                            static_cast<size_t>(count) * size);
    }
  }
  return read;
}

void TimedSlots::after_batch() {
  for (UnitCheck& check : batch_checks_) check.read = read_ranges(check);
  unconfirmed_ = true;
}

// The last batch's samples and checked units as they were read right after it: anything written
// since is work that ran outside the judge's clock. Then its checks join the reservoir.
void TimedSlots::confirm_unchanged() {
  if (!unconfirmed_) return;
  unconfirmed_ = false;
  const std::vector<std::byte>& now = gather_->read();
  if (now != last_samples_) {
    size_t at = 0, s = 0;
    while (s < samples_.size() &&
           std::equal(now.begin() + static_cast<std::ptrdiff_t>(at),
                      now.begin() + static_cast<std::ptrdiff_t>(at + size_of(samples_[s].dtype)),
                      last_samples_.begin() + static_cast<std::ptrdiff_t>(at)))
      at += size_of(samples_[s++].dtype);
    throw Error(
        ErrorKind::Validation,
        "output " + (s < samples_.size() ? samples_[s].name : std::string("samples")) +
            " changed after the timed launches were reported done: work that ran outside the timed interval");
  }
  for (UnitCheck& check : batch_checks_) {
    if (read_ranges(check) != check.read)
      throw Error(ErrorKind::Validation,
                  "a checked unit of slot " + std::to_string(check.slot) +
                      " changed after the timed launches were reported done: work that ran "
                      "outside the timed interval");
    ++checks_seen_;
    if (reservoir_.size() < checks_kept_) {
      reservoir_.push_back(std::move(check));
    } else if (const auto j = static_cast<size_t>(uniform(rng_, static_cast<int64_t>(checks_seen_) - 1));
               j < checks_kept_) {
      reservoir_[j] = std::move(check);
    }
  }
  batch_checks_.clear();
}

// Every kept unit check against the reference of its drawing (`expected`, in the reservoir's order).
std::string TimedSlots::check_units(const std::vector<std::vector<std::vector<double>>>& expected) const {
  const Signature& sig = drawn_.source().signature;
  for (size_t c = 0; c < reservoir_.size(); ++c) {
    const UnitCheck& check = reservoir_[c];
    for (size_t j = 0; j < check.read.size(); ++j) {
      const TensorSpec& spec = sig.outputs[j];
      const size_t size = size_of(spec.dtype);
      const double atol = tolerance_.atol * drawn_.source().reference_rms.at(j);
      size_t k = 0;
      for (const auto& [first, count] : check.request.ranges[j])
        for (int64_t e = first; e < first + count; ++e, ++k) {
          const std::byte* element = check.read[j].data() + k * size;
          const double ref = expected[c][j][k];
          const double v = is_poison(element, size) ? std::nan("") : load_as_double(element, spec.dtype, 0);
          if (std::isfinite(v) && std::fabs(v - ref) <= atol + tolerance_.rtol * std::fabs(ref)) continue;
          std::ostringstream out;
          out << spec.name << "[" << e << "] of slot " << check.slot << " in timed batch " << check.batch
              << " = " << (is_poison(element, size) ? std::string("never written") : std::to_string(v))
              << ", reference " << ref;
          return out.str();
        }
    }
  }
  return "";
}

// The slot verified whole: sampled rows (of every unit they fall in) against the reference,
// every element for being written; every unit and element when an output is shared or rows
// span units.
UnitRequest TimedSlots::whole_slot_request(uint64_t key) {
  const Signature& sig = drawn_.source().signature;
  const UnitLayout& units = drawn_.units();
  UnitRequest request;
  request.key = key;
  const int64_t per_unit = drawn_.rows_per_unit();
  const bool shared =
      std::any_of(units.outputs.begin(), units.outputs.end(), [](int64_t e) { return e <= 0; });
  if (shared || per_unit == 0) {
    request.units.resize(static_cast<size_t>(units.count));
    std::iota(request.units.begin(), request.units.end(), 0);
    for (const auto& spec : sig.outputs) request.ranges.push_back({{0, spec.numel()}});
    return request;
  }
  // A few units (the first and the last among them: the edges are where tiles go wrong), and in
  // each all its rows, or for an op that samples rows, a share of kVerifiedRows.
  const int64_t wanted = std::min(
      units.count, std::clamp<int64_t>(kVerifiedElements / drawn_.unit_elements(), 2, kVerifiedUnits));
  std::set<int64_t> chosen = {0, units.count - 1}, rows;
  while (static_cast<int64_t>(chosen.size()) < wanted) chosen.insert(uniform(rng_, units.count - 1));
  const int64_t sampled = (kVerifiedRows + wanted - 1) / wanted;
  for (int64_t u : chosen) {
    if (!ctx_.op.row_sampling() || per_unit <= sampled) {
      for (int64_t r = 0; r < per_unit; ++r) rows.insert(u * per_unit + r);
      continue;
    }
    std::set<int64_t> in_unit;
    if (u == 0) in_unit.insert(0);
    if (u == units.count - 1) in_unit.insert(per_unit - 1);
    while (static_cast<int64_t>(in_unit.size()) < sampled) in_unit.insert(uniform(rng_, per_unit - 1));
    for (int64_t r : in_unit) rows.insert(u * per_unit + r);
  }
  request.rows.assign(rows.begin(), rows.end());
  std::set<int64_t> drawn;
  for (int64_t r : rows) drawn.insert(r / per_unit);
  request.units.assign(drawn.begin(), drawn.end());
  add_row_ranges(sig, units, request.rows, request);
  return request;
}

std::string TimedSlots::check_inputs(const Slot& slot) const {
  size_t largest = 0;
  for (const auto& input : slot.args->inputs) largest = std::max(largest, input->spec().bytes());
  auto expected = ctx_.runtime.allocate(largest);
  for (size_t i = 0; i < slot.args->inputs.size(); ++i) {
    const GuardedTensor& input = *slot.args->inputs[i];
    drawn_.fill(ctx_.runtime, *source_device_, i, expected->data(), slot.key);
    if (ctx_.runtime.first_difference(input.data(), expected->data(), input.spec().bytes()) >= 0)
      return "input " + input.spec().name + " was modified";
  }
  return "";
}

CheckOutcome TimedSlots::check_outputs(const Slot& slot, const UnitRequest& request,
                                       const std::vector<std::vector<double>>& expected) const {
  auto prepared = std::make_shared<PreparedCase>();
  prepared->signature = drawn_.source().signature;
  prepared->rows = request.rows;
  for (const std::vector<double>& values : expected)
    add_compared(*prepared, static_cast<int64_t>(values.size()),
                 [&](int64_t k) { return values[static_cast<size_t>(k)]; });
  const auto device = ctx_.cases.get(prepared);
  CheckOutcome outcome;
  for (size_t j = 0; j < slot.args->outputs.size(); ++j) {
    const Comparison c =
        compare_output(ctx_.runtime, slot.args->outputs[j]->data(), *prepared, *device, j, tolerance_);
    outcome.worst_norm_error = std::max(outcome.worst_norm_error, c.norm_error / tolerance_.norm_rtol);
    if (!c.ok) return {false, c.reason + " (a timed launch)"};
  }
  return outcome;
}

CheckOutcome TimedSlots::verify(size_t index) {
  auto fail = [](std::string reason) { return CheckOutcome{false, std::move(reason) + " (a timed launch)"}; };
  confirm_unchanged();
  const Slot& slot = *slots_.at(index);
  // One reference computation for everything (its inputs and outputs in float64 can take
  // gigabytes for a large matmul): the kept checks, then the slot verified whole.
  std::vector<UnitRequest> requests;
  for (const UnitCheck& check : reservoir_) requests.push_back(check.request);
  requests.push_back(whole_slot_request(slot.key));
  auto expected = drawn_.reference(requests);
  const std::vector<std::vector<double>> whole = std::move(expected.back());
  expected.pop_back();
  if (std::string bad = check_units(expected); !bad.empty()) return fail(bad);
  for (const auto& other : slots_)
    if (std::string bad = other->args->broken_guard(); !bad.empty()) return fail(bad);
  if (std::string bad = check_inputs(slot); !bad.empty()) return fail(bad);
  return check_outputs(slot, requests.back(), whole);
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

}  // namespace ak
