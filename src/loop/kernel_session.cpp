#include "loop/kernel_session.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/paths.h"
#include "core/registry.h"
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

ExperimentRequest kernel_request(const RunState& state, const KernelState& kernel,
                                 const LoopEnvironment& env) {
  ExperimentRequest req;
  req.op = kernel.op;
  req.backend = env.backend;
  req.problem = parse_problem(kernel.shape);
  req.dtype = parse_dtype(kernel.dtype);
  req.quick = state.settings.quick;
  req.seed = state.settings.seed;
  req.timing.max_seconds = env.max_timing_s;
  req.ceilings = env.ceilings;
  return req;
}

EvaluateOptions kernel_options(const RunState& state, const KernelState& kernel, const LoopEnvironment& env) {
  EvaluateOptions options;
  options.request = kernel_request(state, kernel, env);
  options.arch = env.arch;
  options.timeout = env.timeout;
  return options;
}

SessionShared::~SessionShared() {
  for (auto& [name, build] : starters)
    if (build.valid()) build.wait();
}

// The same candidate and options as the session's baseline (KernelSession's constructor), so
// that its session takes this build instead of starting one.
void start_starter_builds(const RunState& state, const LoopEnvironment& env, SessionShared& shared) {
  for (const KernelState& kernel : state.kernels) {
    if (!kernel.done.empty() || kernel.experiments > 0 || shared.starters.contains(kernel.name)) continue;
    shared.starters.emplace(kernel.name, env.executor->build(Candidate{env.workspace / kernel.file, Config{}},
                                                             kernel_options(state, kernel, env)));
  }
}

KernelSession::KernelSession(RunState& state, KernelState& kernel, const LoopEnvironment& env,
                             const LoopClock& clock, SessionShared& shared)
    : state_(state),
      kernel_(kernel),
      env_(env),
      clock_(clock),
      executor_(*env.executor),
      repo_(env.workspace),
      source_(env.workspace / kernel.file),
      options_(kernel_options(state, kernel, env)),
      shared_(shared) {
  const Op& op = find_op(kernel.op);
  const ExperimentRequest& req = options_.request;

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
    take_starter_build(baseline);
    pipeline_.push_back(std::move(baseline));
  } else if (kernel.best_us > 0 && state.settings.proposer == "agent") {
    // The best so far, what a would-be keep is timed beside, from the file as the last keep left
    // it: built now, before the agent edits it (a search's file never changes: best_module()).
    if (const auto best = best_config()) best_build_ = executor_.build(Candidate{source_, *best}, options_);
  }
}

KernelSession::~KernelSession() {
  for (auto& p : pipeline_)
    if (p.build.valid()) p.build.wait();
  if (best_build_.valid()) best_build_.wait();
}

// The definitions the best was built with: none for the starter's baseline (its config is empty).
std::optional<Config> KernelSession::best_config() const {
  if (kernel_.best_config.empty()) return Config{};
  return parse_config_or_none(kernel_.best_config, space_);
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

// Proposals up to `depth` waiting (building or built): a few ahead keep the workers busy while
// they compile; more would be proposed on stale results (a strategy learns only from finished
// experiments). The starter goes alone: its time is what every later one must beat.
bool KernelSession::refill(size_t depth) {
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
  pending.build = executor_.build(Candidate{source_, pending.proposal.config}, options_);
}

void KernelSession::take_starter_build(Pending& baseline) {
  const auto started = shared_.starters.find(kernel_.name);
  if (started == shared_.starters.end()) return start_build(baseline);
  baseline.build = std::move(started->second);
  shared_.starters.erase(started);
}

bool KernelSession::has_result() const {
  return std::any_of(history_.begin(), history_.end(), [](const Trial& t) { return !t.pending; });
}

// Proposals ahead of the results only once the starter's time is known, and never from a proposer
// that edits the file (an agent, asked in turn).
bool KernelSession::proposes_ahead() const {
  return has_result() && proposer_->lookahead();
}

bool KernelSession::may_submit(int starts_left) const {
  // Until the first result, and always for a proposer that edits the file, one at a time; else
  // two per worker, one measuring and one queued behind it, so that no worker waits while this
  // thread records a result or awaits the next build (each worker still measures one at a time).
  const size_t most = proposes_ahead() ? 2 * executor_.workers().size() : 1;
  return tickets_.size() < most && static_cast<int>(in_order_.size()) < starts_left;
}

// As many candidates building ahead as keep every worker busy: each worker needs a new module
// every measurement, and a build takes build/measure measurements' time (at least three ahead, as
// one worker always had; at most eight per worker, or proposals go stale). The times are this
// session's once it has its own (a kernel's builds may be slower than another's), else the run's.
size_t KernelSession::builds_ahead() const {
  const RunningMean& build = build_seconds_.count > 0 ? build_seconds_ : shared_.build_seconds;
  const RunningMean& measure = measure_seconds_.count > 0 ? measure_seconds_ : shared_.measure_seconds;
  const size_t workers = executor_.workers().size();
  size_t per_worker = 1;
  if (build.count > 0 && measure.count > 0 && measure.mean() > 0)
    per_worker += static_cast<size_t>(std::ceil(build.mean() / measure.mean()));
  return std::clamp(workers * per_worker, std::max<size_t>(workers, 3), 8 * workers);
}

// The next candidate in proposal order: its build awaited, then measured on the first free worker
// (or recorded at once when it never built).
void KernelSession::submit_next() {
  if (!refill(proposes_ahead() ? builds_ahead() : 1)) return;
  const uint64_t seq = next_seq_++;
  Measuring& measuring = in_order_[seq];
  measuring.pending = std::move(pipeline_.front());
  pipeline_.pop_front();
  if (measuring.pending.proposal.failure) {
    measuring.result = *measuring.pending.proposal.failure;
  } else {
    measuring.built = measuring.pending.build.get();
    if (!measuring.built.build) measuring.result = measuring.built.failure;
  }
  if (!measuring.result)
    measure(seq, -1);
  else if (!defer_records_)
    record_in_order();
}

uint64_t KernelSession::measure(uint64_t seq, int worker, int not_worker,
                                const std::filesystem::path* module) {
  static std::atomic<uint64_t> tickets{1};  // unique across sessions sharing an executor
  MeasureJob job{tickets++, options_.request, options_.timeout, worker, not_worker};
  job.request.module = module ? *module : in_order_.at(seq).built.build->module;
  const uint64_t ticket = job.ticket;
  tickets_.emplace(ticket, seq);
  executor_.submit(std::move(job));
  return ticket;
}

std::string KernelSession::config_of(const Measuring& measuring) const {
  const Config& config = measuring.pending.proposal.config;
  return config.empty() ? std::string("(defaults)") : to_string(config);
}

void KernelSession::finish(MeasureDone done) {
  const auto ticket = tickets_.find(done.ticket);
  if (ticket == tickets_.end()) {  // another session's (measured ahead): kept for it
    shared_.others.push_back(std::move(done));
    return;
  }
  const uint64_t seq = ticket->second;
  tickets_.erase(ticket);
  Measuring& measuring = in_order_.at(seq);
  if (measuring.confirm_ticket == done.ticket) {
    (measuring.best_again ? measuring.again : measuring.best_again) = std::move(done.result);
    measuring.confirm_ticket = 0;
    measure_seconds_.add(done.seconds);
    shared_.measure_seconds.add(done.seconds);
    return record_in_order();
  }
  ExperimentResult result = std::move(done.result);
  result.compile_seconds = measuring.built.build->seconds;
  result.compile_cached = measuring.built.build->cached;
  if (!result.compile_cached) {
    build_seconds_.add(result.compile_seconds);
    shared_.build_seconds.add(result.compile_seconds);
  }
  measure_seconds_.add(done.seconds);
  shared_.measure_seconds.add(done.seconds);
  if (first_result_s_ == 0)
    first_result_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  // The machinery died under it, not the kernel: once more, on whichever other worker is free
  // (the one that lost it may still be restarting: a Ray actor answers "unavailable" meanwhile).
  if (result.status == Status::Lost && !measuring.retried && executor_.workers().size() > 1) {
    if (env_.on_note)
      env_.on_note(executor_.workers()[static_cast<size_t>(done.worker)].name + " lost " +
                   config_of(measuring) + " (" + result.reason + "): measuring it again");
    measuring.retried = true;
    measure(seq, -1, done.worker);
    return;
  }
  measuring.result = std::move(result);
  measuring.worker = done.worker;
  record_in_order();
}

// Results are decided and recorded in the order their candidates were proposed, whichever worker
// finishes first: the same decisions as one worker would make, and experiments numbered in
// proposal order. A result that would be kept is first timed again beside the best, on its own
// worker (confirming): a worker that reads everything faster keeps nothing by it.
void KernelSession::record_in_order() {
  while (!in_order_.empty() && in_order_.begin()->second.result) {
    Measuring& head = in_order_.begin()->second;
    if (confirming(in_order_.begin()->first, head)) return;
    record(head, *head.result, head.worker);
    in_order_.erase(in_order_.begin());
  }
}

// A measurement submitted now waits behind those in flight (spread over the workers), then takes
// as long as this session's measurements have on average.
double KernelSession::expected_next_seconds() const {
  if (measure_seconds_.count == 0) return 0;
  const double queued =
      static_cast<double>(tickets_.size()) / static_cast<double>(executor_.workers().size());
  return measure_seconds_.mean() * (1 + queued);
}

void KernelSession::prebuild(bool measure_first) {
  if (proposes_ahead()) refill(builds_ahead());
  if (measure_first && in_order_.empty() && !pipeline_.empty()) {
    defer_records_ = true;
    submit_next();
    defer_records_ = false;
  }
}

void KernelSession::run(const std::function<bool(double)>& stop, const std::function<int()>& starts_left,
                        bool first_result_ends_it, const std::function<void()>& on_draining) {
  bool drained = false;
  const auto draining = [&] {
    if (!std::exchange(drained, true) && on_draining) on_draining();
  };
  record_in_order();  // a baseline prebuild() could not build
  while (kernel_.done.empty() && !stop(expected_next_seconds())) {
    while (kernel_.done.empty() && !stop(expected_next_seconds()) && may_submit(starts_left()) &&
           (!exhausted_ || !pipeline_.empty())) {
      submit_next();
    }
    if (((exhausted_ && pipeline_.empty()) || first_result_ends_it) && !tickets_.empty()) draining();
    if (tickets_.empty()) {
      if (exhausted_ && pipeline_.empty() && kernel_.done.empty()) {
        kernel_.done = kDoneExhausted;
        save_run_state(env_.workspace, state_);
      }
      if (exhausted_ && pipeline_.empty()) break;
      continue;
    }
    await_result();
  }
  if (!tickets_.empty()) draining();
  while (!tickets_.empty()) await_result();  // nothing in flight is lost
}

void KernelSession::await_result() {
  constexpr std::chrono::seconds kSayEvery{30};
  auto& others = shared_.others;  // finished while another session awaited its own
  const auto mine = std::find_if(others.begin(), others.end(),
                                 [&](const MeasureDone& d) { return tickets_.contains(d.ticket); });
  if (mine != others.end()) {
    MeasureDone done = std::move(*mine);
    others.erase(mine);
    return finish(std::move(done));
  }
  while (true) {
    if (auto done = executor_.next(kSayEvery)) return finish(std::move(*done));
    if (env_.on_waiting) env_.on_waiting(executor_.activity());
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

void KernelSession::record(const Measuring& measuring, const ExperimentResult& result, int worker) {
  const Pending& pending = measuring.pending;
  const Proposal& proposal = pending.proposal;
  const auto [decision, why] = decision_of(measuring, result);
  const int experiment = state_.experiments + 1;
  std::string commit;
  const bool keeps = decision == "kept" || decision == "baseline";
  if (keeps && measuring.built.build) {  // what the next would-be keep is timed beside
    if (best_build_.valid()) best_build_ = {};
    best_module_ = measuring.built.build->module;
  }
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
  ExperimentResult shown = result;  // a keep its confirmation overturned gives the reason
  if (!why.empty()) {
    shown.reason = why;
    if (env_.on_note) env_.on_note(config_of(measuring) + ": " + why);
  }
  ResultRow row("optimize", kernel_.file, to_string(proposal.config), state_.device, &options_.request,
                &shown);
  row.experiment = experiment;
  row.name = kernel_.name;
  row.decision = decision;
  row.commit = commit;
  row.elapsed_s = elapsed;
  if (worker >= 0) row.worker = executor_.workers()[static_cast<size_t>(worker)].name;
  if (measuring.best_again) row.best_again_us = measuring.best_again->timing.median_us;
  if (measuring.again) row.again_us = measuring.again->timing.median_us;
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
                        result.timing.spread,
                        row.worker};
  apply(state_, outcome);
  save_run_state(env_.workspace, state_);
  if (env_.on_experiment) env_.on_experiment(kernel_, outcome, result);
}

}  // namespace ak
