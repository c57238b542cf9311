// KernelSession's confirmation of a would-be keep: the best it would replace and the candidate
// timed again, one after the other, on the worker that measured the candidate, and the decision
// taken on those figures too (kernel_session.cpp records it).
#include <iomanip>
#include <sstream>

#include "loop/decision.h"
#include "loop/kernel_session.h"

namespace ak {

// Between experiments a machine drifts more than within one (an H200 read two configurations that
// run the same code 8% apart, seconds apart), so a result that would be kept is timed again beside
// the best it would replace, on the worker that measured it: the best once more, then the
// candidate once more, so that drift either way shows. True while that is under way.
bool KernelSession::confirming(uint64_t seq, Measuring& head) {
  if (head.confirm_ticket != 0) return true;  // another result came first: still waiting for ours
  if (head.again || decide(kernel_, *head.result, state_.settings.min_gain) != "kept") return false;
  std::filesystem::path module = head.built.build->module;
  if (!head.best_again) {
    const auto best = best_module();
    if (!best) return false;  // nothing to time it beside: decided on the best's recorded figure
    module = *best;
  }
  head.confirm_ticket = measure(seq, head.worker, -1, &module);
  return true;
}

// The best's module: kept from its record in this session, or built from the best's config (a
// compile-cache hit, as a rule) for a session that started with a best.
std::optional<std::filesystem::path> KernelSession::best_module() {
  if (best_module_.empty() && !best_build_.valid() && kernel_.best_us > 0 &&
      state_.settings.proposer != "agent")
    if (const auto best = best_config()) best_build_ = executor_.build(Candidate{source_, *best}, options_);
  if (best_build_.valid()) {
    const BuiltCandidate built = best_build_.get();
    if (built.build) best_module_ = built.build->module;
  }
  if (best_module_.empty()) return std::nullopt;
  return best_module_;
}

// decide(), and for a keep timed again beside the best: kept only if both the candidate's figures
// beat the best's new one as decide() asks of them (a failed or lost second run keeps nothing).
// A keep so overturned says why, for its row.
KernelSession::Decision KernelSession::decision_of(const Measuring& measuring,
                                                   const ExperimentResult& result) const {
  const double min_gain = state_.settings.min_gain;
  const std::string decision = decide(kernel_, result, min_gain);
  if (decision != "kept" || !measuring.best_again) return {decision, ""};
  const auto failed = [](const char* whose, const ExperimentResult& run) {
    return std::string("not confirmed: ") + whose + " second run ended " + to_string(run.status) +
           (run.reason.empty() ? "" : " (" + run.reason + ")");
  };
  if (!measuring.best_again->passed()) return {"reverted", failed("the best's", *measuring.best_again)};
  if (!measuring.again) return {"reverted", "not confirmed: its second run did not come back"};
  if (!measuring.again->passed()) return {"reverted", failed("its", *measuring.again)};
  KernelState now = kernel_;
  now.best_us = measuring.best_again->timing.median_us;
  now.best_noise = measuring.best_again->timing.noise;
  now.best_spread = measuring.best_again->timing.spread;
  if (decide(now, result, min_gain) == "kept" && decide(now, *measuring.again, min_gain) == "kept")
    return {"kept", ""};
  std::ostringstream why;
  why << std::fixed << std::setprecision(2) << "not confirmed beside the best: the best again " << now.best_us
      << " us, this " << result.timing.median_us << " us and again " << measuring.again->timing.median_us
      << " us";
  return {"reverted", why.str()};
}

}  // namespace ak
