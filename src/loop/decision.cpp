#include "loop/decision.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "loop/alternatives.h"

namespace ak {
namespace {

double to_double(const ResultRecord& r, const std::string& key) {
  const auto it = r.find(key);
  if (it == r.end() || it->second.empty()) return 0;
  return std::stod(it->second);
}

std::string text(const ResultRecord& r, const std::string& key) {
  const auto it = r.find(key);
  return it == r.end() ? "" : it->second;
}

// The standard error of a median, relative: ~1.2533 sigma / sqrt(n) for a normal sample.
double median_error(double noise, int samples) {
  return samples > 0 ? 1.2533 * noise / std::sqrt(static_cast<double>(samples)) : noise;
}

// A slot's share is its fastest baseline over the sum of the slots' fastest baselines; every
// alternative of a slot carries the slot's share.
void recompute_shares(RunState& state) {
  double total = 0;
  for (const auto& k : state.kernels)
    if (first_of_slot(state.kernels, k)) total += slot_baseline_us(state.kernels, k);
  if (total <= 0) return;
  for (auto& k : state.kernels) k.share = slot_baseline_us(state.kernels, k) / total;
}

void check_stop_rules(KernelState& k, const LoopSettings& s) {
  if (!k.done.empty()) return;
  if (k.best_us > 0 && k.best_roofline >= s.roofline_target)
    k.done = kDoneRoofline;
  else if (k.non_improving >= s.patience)
    k.done = k.best_us > 0 ? kDonePatience : kDoneBroken;
  else if (s.kernel_budget_s > 0 && k.seconds >= s.kernel_budget_s)
    k.done = kDoneBudget;
}

}  // namespace

Outcome outcome_from_record(const ResultRecord& r) {
  Outcome o;
  o.experiment = static_cast<int>(to_double(r, "experiment"));
  o.name = text(r, "name");
  if (o.experiment <= 0 || o.name.empty())
    throw Error(ErrorKind::Io, "a results row without the loop's columns");
  o.config = text(r, "config");
  o.status = text(r, "status");
  o.decision = text(r, "decision");
  o.commit = text(r, "commit");
  o.median_us = to_double(r, "median_us");
  o.noise = to_double(r, "noise");
  o.spread = to_double(r, "spread");  // 0 in rows written before the column: noise stands in
  o.roofline = to_double(r, "roofline");
  o.samples = static_cast<int>(to_double(r, "samples"));
  o.elapsed_s = to_double(r, "elapsed_s");
  o.worker = text(r, "worker");
  return o;
}

double keep_threshold(const KernelState& k, const ExperimentResult& r, double min_gain) {
  // Medians are compared, so their errors come from the robust spread: one preempted sample on a
  // busy machine inflates the standard deviation by orders of magnitude but leaves the median
  // where it was. (A spread of 0 is a measurement from before it was recorded: the noise stands
  // in.) The best's sample count is not kept; it is taken as the candidate's.
  const auto spread = [](double robust, double noise) { return robust > 0 ? robust : noise; };
  const double a = median_error(spread(k.best_spread, k.best_noise), r.timing.samples);
  const double b = median_error(spread(r.timing.spread, r.timing.noise), r.timing.samples);
  return std::max(min_gain, 3.0 * std::sqrt(a * a + b * b));
}

std::string decide(const KernelState& k, const ExperimentResult& r, double min_gain) {
  if (!r.passed()) return "failed";
  if (k.best_us <= 0) return "baseline";
  return r.timing.median_us < k.best_us * (1.0 - keep_threshold(k, r, min_gain)) ? "kept" : "reverted";
}

void apply(RunState& state, const Outcome& o) {
  auto it = std::find_if(state.kernels.begin(), state.kernels.end(),
                         [&](const auto& k) { return k.name == o.name; });
  if (it == state.kernels.end())
    throw Error(ErrorKind::Io,
                "experiment " + std::to_string(o.experiment) + " names an unknown kernel " + o.name);
  KernelState& k = *it;
  k.experiments += 1;
  k.seconds += std::max(0.0, o.elapsed_s - state.elapsed_s);
  state.elapsed_s = std::max(state.elapsed_s, o.elapsed_s);
  state.experiments = std::max(state.experiments, o.experiment);
  if (o.decision == "baseline" || o.decision == "kept") {
    if (o.decision == "baseline")
      k.baseline_us = o.median_us;
    else
      k.kept += 1;
    k.best_us = o.median_us;
    k.best_noise = o.noise;
    k.best_spread = o.spread;
    k.best_roofline = o.roofline;
    k.best_config = o.config;
    k.best_worker = o.worker;
    if (!o.commit.empty()) k.best_commit = state.head = o.commit;
    k.non_improving = 0;
  } else {
    if (o.decision == "failed") k.failed += 1;
    k.non_improving += 1;
  }
  if (state.shares_from_baselines) recompute_shares(state);
  check_stop_rules(k, state.settings);
  state.projected_speedup = projected_speedup(state.kernels);
}

KernelState* pick_next(RunState& state, const KernelState* skip) {
  for (auto& k : state.kernels)
    if (k.done.empty() && k.best_us <= 0 && &k != skip) return &k;
  KernelState* best = nullptr;
  double best_gain = -1;
  for (auto& k : state.kernels) {
    if (!k.done.empty() || &k == skip) continue;
    // The slot's time above this kernel's roofline (an unknown roofline counts as half), as a
    // fraction of the original total. An alternative behind its slot's fastest kernel must first
    // catch up with it: its gain is scaled by how far behind it is.
    const KernelState* leader = slot_leader(state.kernels, k);
    const double slot_us = leader ? leader->best_us : k.best_us;
    const double baseline_us = slot_baseline_us(state.kernels, k);
    const double roofline_us = k.best_us * (k.best_roofline > 0 ? k.best_roofline : 0.5);
    const double gain = k.share * std::max(0.0, slot_us - roofline_us) /
                        (baseline_us > 0 ? baseline_us : k.best_us) * (slot_us / k.best_us);
    if (gain > best_gain) {
      best_gain = gain;
      best = &k;
    }
  }
  return best;
}

}  // namespace ak
