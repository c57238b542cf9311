#include "loop/kernel_session.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/paths.h"
#include "core/registry.h"
#include "harness/experiment_server.h"
#include "harness/results_log.h"

namespace ak {
namespace {

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::optional<Config> parse_config_or_none(const std::string& text, const TuneSpace& space) {
  try {
    return parse_config(text, space);
  } catch (const Error&) {
    return std::nullopt;  // a row from before the source changed its space
  }
}

}  // namespace

KernelSession::KernelSession(RunState& state, KernelState& kernel, const LoopEnvironment& env,
                             const LoopClock& clock)
    : state_(state),
      kernel_(kernel),
      env_(env),
      clock_(clock),
      repo_(env.workspace),
      source_(env.workspace / kernel.file) {
  const Op& op = find_op(kernel.op);
  ExperimentRequest& req = options_.request;
  req.op = kernel.op;
  req.backend = env.backend;
  req.problem = parse_problem(kernel.shape);
  req.dtype = parse_dtype(kernel.dtype);
  req.quick = state.settings.quick;
  req.seed = state.settings.seed;
  req.timing.max_seconds = env.max_timing_s;
  req.ceilings = env.ceilings;
  options_.arch = env.arch;
  options_.timeout = env.timeout;
  options_.server = env.server;

  const std::string text = read_text_file(source_);
  space_ = parse_tune_space(text);
  defaults_ = default_config(text, space_);
  load_history();
  if (state.settings.proposer == "agent") {
    proposer_ = make_agent_proposer({state.settings.agent_cmd, kernel.op, kernel.shape, kernel.dtype,
                                     env.agent_timeout,
                                     parse_config_or_none(kernel.best_config, space_).value_or(Config{})});
  } else {
    auto feasible = feasible_configs(space_, problem_symbols(op, req.problem), kMaxTuneConfigs);
    proposer_ = make_search_proposer(state.settings.strategy, std::move(feasible),
                                     state.settings.seed + static_cast<uint64_t>(kernel.experiments));
  }
  // The starter first: its time is the baseline every later candidate has to beat.
  // It builds with no definitions at all (the file's defaults), so that an agent's later edit
  // of a default is not overridden; the strategies see it as the defaults' configuration.
  if (kernel.experiments == 0) {
    history_.push_back({defaults_.value_or(Config{}), false, 0, true});
    Pending baseline{{Config{}, false, std::nullopt, "baseline"}, {}, history_.size() - 1};
    start_build(baseline);
    pipeline_.push_back(std::move(baseline));
  }
}

KernelSession::~KernelSession() {
  for (auto& p : pipeline_)
    if (p.build.valid()) p.build.wait();
}

void KernelSession::load_history() {
  for (const ResultRecord& row : read_results(env_.workspace / kResultsFile)) {
    const auto name = row.find("name");
    if (name == row.end() || name->second != kernel_.name) continue;
    const auto config = row.at("config").empty() ? defaults_ : parse_config_or_none(row.at("config"), space_);
    if (!config) continue;
    const bool ok = row.at("status") == "PASS";
    history_.push_back({*config, ok, ok ? std::stod(row.at("median_us")) * 1e-6 : 0, false});
  }
}

bool KernelSession::refill() {
  // A few candidates ahead keep the device busy while they compile; more would be proposed on
  // stale results (a strategy learns only from finished experiments).
  constexpr size_t kMaxLookahead = 3;
  const size_t threads =
      env_.jobs > 0 ? static_cast<size_t>(env_.jobs) : std::max(1u, std::thread::hardware_concurrency());
  const size_t depth = proposer_->lookahead() ? std::min(threads, kMaxLookahead) : 1;
  while (!exhausted_ && pipeline_.size() < depth) {
    ProposerContext context{&kernel_, source_, history_, last_report_};
    auto proposal = proposer_->next(context);
    if (!proposal) {
      exhausted_ = true;
      break;
    }
    history_.push_back({proposal->config, false, 0, true});
    Pending pending{std::move(*proposal), {}, history_.size() - 1};
    start_build(pending);
    pipeline_.push_back(std::move(pending));
  }
  return !pipeline_.empty();
}

void KernelSession::start_build(Pending& pending) {
  if (pending.proposal.failure) return;
  Candidate candidate{source_, pending.proposal.config};
  pending.build =
      std::async(std::launch::async, [candidate, this] { return build_candidate(candidate, options_); });
}

ExperimentResult KernelSession::run_one(Pending& pending) {
  if (pending.proposal.failure) return *pending.proposal.failure;
  const BuiltCandidate built = pending.build.get();
  // The next builds go on while the device runs this one, once there is a result to steer by.
  const bool has_result =
      std::any_of(history_.begin(), history_.end(), [](const Trial& t) { return !t.pending; });
  if (proposer_->lookahead() && has_result) refill();
  return run_candidate(built, options_, [](std::string_view) {});
}

void KernelSession::run(const std::function<bool()>& stop) {
  while (kernel_.done.empty() && !stop()) {
    if (pipeline_.empty() && !refill()) {
      kernel_.done = kDoneExhausted;
      save_run_state(env_.workspace, state_);
      break;
    }
    Pending pending = std::move(pipeline_.front());
    pipeline_.pop_front();
    const ExperimentResult result = run_one(pending);
    record(pending, result);
  }
}

std::string KernelSession::commit_message(int experiment, const Proposal& proposal,
                                          const ExperimentResult& result, const std::string& decision) const {
  std::ostringstream m;
  m << "exp " << experiment << " " << kernel_.name << ": " << (proposal.edits_source ? "source edit, " : "")
    << (proposal.config.empty() ? "(defaults)" : to_string(proposal.config)) << " "
    << format("%.2f", result.timing.median_us) << " us";
  if (kernel_.baseline_us > 0)
    m << ", " << format("%.3f", kernel_.baseline_us / result.timing.median_us) << "x baseline";
  if (result.roofline > 0) m << ", " << format("%.1f", 100 * result.roofline) << "% of roofline";
  m << " (" << decision << ")";
  return m.str();
}

void KernelSession::record(const Pending& pending, const ExperimentResult& result) {
  const Proposal& proposal = pending.proposal;
  const std::string decision = decide(kernel_, result, state_.settings.min_gain);
  const int experiment = state_.experiments + 1;
  std::string commit;
  const bool keeps = decision == "kept" || decision == "baseline";
  if (keeps && (decision == "kept" || proposal.edits_source)) {
    write_file_atomically(source_.parent_path() / "config", to_string(proposal.config) + "\n");
    commit = repo_.commit_all(commit_message(experiment, proposal, result, decision));
  } else if (keeps) {
    commit = state_.head;  // the starter as it is: nothing to commit
  } else if (proposal.edits_source) {
    repo_.reset_hard(state_.head);  // a revert leaves the tree at the last kept state
  }

  Trial& trial = history_[pending.trial];
  trial = {trial.config, result.passed(), result.timing.median_us * 1e-6, false};
  last_report_ = nlohmann::json(result).dump(1);

  const double elapsed = clock_.now();
  ResultRow row("optimize", kernel_.file, to_string(proposal.config), state_.device, &options_.request,
                &result);
  row.experiment = experiment;
  row.name = kernel_.name;
  row.decision = decision;
  row.commit = commit;
  row.elapsed_s = elapsed;
  append_result(env_.workspace / kResultsFile, row);
  const Outcome outcome{experiment,
                        kernel_.name,
                        to_string(proposal.config),
                        to_string(result.status),
                        decision,
                        commit,
                        result.timing.median_us,
                        result.timing.noise,
                        result.roofline,
                        result.timing.samples,
                        elapsed,
                        result.timing.spread};
  apply(state_, outcome);
  save_run_state(env_.workspace, state_);
  if (env_.on_experiment) env_.on_experiment(kernel_, outcome, result);
}

}  // namespace ak
