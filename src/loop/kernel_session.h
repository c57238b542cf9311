// One kernel's turn in the loop: its proposer, its history, the builds and measurements in flight
// on the executor's workers, and the keep-or-revert bookkeeping of each experiment (commit,
// results row, run.json), all in this, the driver's, thread.
#pragma once

#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>

#include "loop/executor.h"
#include "loop/git_repo.h"
#include "loop/orchestrator.h"
#include "loop/proposer.h"

namespace ak {

class Op;

struct LoopClock {
  std::function<double()> now;  // seconds since the run started, over all its sessions
};

// What each experiment of `kernel` asks of a worker, less the module: its op, problem, dtype,
// stages, timing and ceilings.
ExperimentRequest kernel_request(const RunState& state, const KernelState& kernel,
                                 const LoopEnvironment& env);
// What a session of `kernel` builds and measures with: kernel_request, the architecture, the timeout.
EvaluateOptions kernel_options(const RunState& state, const KernelState& kernel, const LoopEnvironment& env);

struct RunningMean {
  double sum = 0;
  int count = 0;
  void add(double v) { sum += v, ++count; }
  double mean() const { return count ? sum / count : 0; }
};

// What the sessions of one run share (run_loop owns it, and outlives them).
struct SessionShared {
  SessionShared() = default;
  ~SessionShared();  // waits for starter builds no session took (they fill the compile cache); never throws
  SessionShared(const SessionShared&) = delete;
  SessionShared& operator=(const SessionShared&) = delete;

  // A result of one session's measurement that another meets while awaiting its own.
  std::deque<MeasureDone> others;
  // Starters' builds by kernel name, started at the run's start: a session takes its own, since
  // building it again before it ends would compile it twice (the cache has it only once built).
  std::map<std::string, std::future<BuiltCandidate>> starters;
  // Uncached builds and measurements over the run: a new session, with none of its own yet,
  // builds ahead as these ask, rather than ramping up from three after every switch.
  RunningMean build_seconds, measure_seconds;
};

// Starts the build of every active kernel's starter not yet measured (the build its first session
// would start), all at once: else the baselines go at the compiler's pace, however many workers
// measure them. The executor's build pool bounds how many compile at a time.
void start_starter_builds(const RunState& state, const LoopEnvironment& env, SessionShared& shared);

class KernelSession {
 public:
  // `shared`: the run's starter builds, build and measurement times, and the results of other
  // sessions' measurements (sessions whose measurements overlap at a switch).
  KernelSession(RunState& state, KernelState& kernel, const LoopEnvironment& env, const LoopClock& clock,
                SessionShared& shared);
  ~KernelSession();  // waits for builds still in flight (they fill the compile cache); never throws
  KernelSession(const KernelSession&) = delete;
  KernelSession& operator=(const KernelSession&) = delete;

  // Experiments until the kernel is done or `stop` says so; what is being measured then is
  // waited for and recorded, so no experiment is lost. `stop` is asked with the seconds the next
  // experiment would take to finish, as this session's measurements so far say (0 before the
  // first): a time budget then starts none that would end past it. `starts_left` says how many
  // more experiments this session may record (a budget counted in experiments), in flight included.
  // `on_draining` is called once, when the session will submit nothing more but measurements are
  // still in flight (the proposer has run out, `stop` said so, or `first_result_ends_it` and the
  // first is submitted): the driver may then start the next kernel's builds.
  void run(const std::function<bool(double next_s)>& stop, const std::function<int()>& starts_left,
           bool first_result_ends_it = false, const std::function<void()>& on_draining = {});

  // Starts the builds of the first candidates now, before run(), while another session's last
  // measurements finish: the workers then need not wait for them at the switch. Only for a
  // proposer that can propose ahead (the search; an agent edits the file and is asked in turn).
  // With `measure_first`, the first candidate (a starter not yet timed: its baseline) is also
  // sent to be measured, on a worker the last session leaves free: baselines then run side by
  // side, and at a switch no worker idles while the last kernel's final measurements finish. Its
  // result is recorded by run(), in order (or, for a wrong guess, when the driver runs it down).
  void prebuild(bool measure_first = false);

  // Seconds from this session's start to its first result (building, drawing the kernel's
  // references, measuring): what the next kernel's first experiment is likely to take. 0 if none.
  double first_result_seconds() const { return first_result_s_; }
  const KernelState& kernel() const { return kernel_; }

 private:
  struct Pending {
    Proposal proposal;
    std::future<BuiltCandidate> build;  // invalid when proposal.failure is set
    size_t trial = 0;                   // its entry in history_
  };
  // A candidate taken from the pipeline, until its result is recorded.
  struct Measuring {
    Pending pending;
    BuiltCandidate built;
    std::optional<ExperimentResult> result;  // set once known, recorded in proposal order
    int worker = -1;                         // the worker that measured `result`
    bool retried = false;                    // a LOST measurement gets one more worker
    // A would-be keep timed again beside the best it would replace, on the same worker: the best
    // once more, then this candidate once more (confirming).
    std::optional<ExperimentResult> best_again, again;
    uint64_t confirm_ticket = 0;  // the one of those being measured (the best's until it is in), or 0
  };

  void load_history();
  bool refill(size_t depth);  // false when the proposer has nothing left and nothing is queued
  size_t builds_ahead() const;
  bool has_result() const;      // any experiment of this kernel finished (this session or before)
  bool proposes_ahead() const;  // more than one candidate proposed and measured at a time
  bool may_submit(int starts_left) const;
  void submit_next();
  // Sends in_order_[seq]'s module (or `module`, for a confirmation) to be measured; its ticket.
  uint64_t measure(uint64_t seq, int worker, int not_worker = -1,
                   const std::filesystem::path* module = nullptr);
  void finish(MeasureDone done);
  void await_result();  // the next result, saying what the workers do while it takes long
  void record_in_order();
  bool confirming(uint64_t seq, Measuring& head);
  std::optional<Config> best_config() const;
  std::optional<std::filesystem::path> best_module();
  struct Decision {
    std::string decision;  // baseline, kept, reverted, failed
    std::string why;       // for a keep its confirmation overturned: the reason its row gives
  };
  Decision decision_of(const Measuring& measuring, const ExperimentResult& result) const;
  void record(const Measuring& measuring, const ExperimentResult& result, int worker);
  std::string config_of(const Measuring& measuring) const;
  void start_build(Pending& pending);
  void take_starter_build(Pending& baseline);
  std::string commit_message(int experiment, const Proposal& proposal, const ExperimentResult& result,
                             const std::string& decision) const;

  RunState& state_;
  KernelState& kernel_;
  const LoopEnvironment& env_;
  const LoopClock& clock_;
  Executor& executor_;
  GitRepo repo_;
  std::filesystem::path source_;
  EvaluateOptions options_;
  TuneSpace space_;
  std::optional<Config> defaults_;  // the file's own #define values, as a configuration
  std::unique_ptr<Proposer> proposer_;
  std::vector<Trial> history_;
  std::deque<Pending> pipeline_;            // proposed, building or built, not yet measured
  std::map<uint64_t, Measuring> in_order_;  // by proposal order: measuring, or waiting to be recorded
  std::map<uint64_t, uint64_t> tickets_;    // a measurement in flight -> its place in in_order_
  std::filesystem::path best_module_;       // the kernel's best as built, once known
  std::future<BuiltCandidate> best_build_;  // its build, for a session that starts with a best
  uint64_t next_seq_ = 0;
  RunningMean build_seconds_, measure_seconds_;  // uncached builds; measurements on a worker
  double expected_next_seconds() const;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double first_result_s_ = 0;
  std::string last_report_;
  bool exhausted_ = false;
  bool defer_records_ = false;  // prebuild: nothing is recorded before run()
  SessionShared& shared_;
};

}  // namespace ak
