#include "loop/orchestrator.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "core/error.h"
#include "core/paths.h"
#include "harness/results_log.h"
#include "loop/git_repo.h"
#include "loop/kernel_session.h"

namespace ak {

RunState resume_run(const std::filesystem::path& workspace) {
  RunState state = load_run_state(workspace);
  for (const ResultRecord& row : read_results(workspace / kResultsFile)) {
    const auto experiment = row.find("experiment");
    if (experiment == row.end() || experiment->second.empty() ||
        std::stoi(experiment->second) <= state.experiments)
      continue;
    apply(state, outcome_from_record(row));
  }
  GitRepo repo(workspace);
  if (!repo.exists())
    throw Error(ErrorKind::Usage, workspace.string() + " holds a run but no git repository");
  if (repo.current_branch() != state.branch) repo.checkout(state.branch);
  repo.reset_hard(state.head);  // drops a commit made just before a kill, and any half-done edit
  save_run_state(workspace, state);
  return state;
}

void run_loop(RunState& state, const LoopEnvironment& env) {
  const auto start = std::chrono::steady_clock::now();
  const double elapsed_before = state.elapsed_s;
  LoopClock clock{[&] {
    return elapsed_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }};
  const int experiments_before = state.experiments;
  // Over once the budget is spent, or when what is to start next (`next_s` seconds, as the
  // experiments so far say) would end past it: the budget bounds the session's end, not its last start.
  auto session_over = [&](double next_s) {
    const double session = clock.now() - elapsed_before;
    return (env.stop && env.stop->load()) ||
           (env.session_budget_s > 0 && session + next_s >= env.session_budget_s) ||
           (env.session_max_experiments > 0 &&
            state.experiments - experiments_before >= env.session_max_experiments);
  };
  // Every worker draws each kernel's inputs and references once, ahead of its turn where it can:
  // else a kernel switch waits seconds for them on every worker but the one that timed its baseline.
  for (const KernelState& kernel : state.kernels)
    if (kernel.done.empty()) env.executor->prepare(kernel_request(state, kernel, env));
  SessionShared shared;  // declared before the sessions: they use it until they end
  start_starter_builds(state, env, shared);
  double kernel_start_s = 0;  // a kernel's first result: its build, references and measurement
  // The session guessed to come next, its first builds started while the last one drained (and
  // its baseline measured, on a time budget).
  std::unique_ptr<KernelSession> next;
  // A session with measurements in flight is never dropped: they are awaited and recorded.
  const auto finish_off = [&](std::unique_ptr<KernelSession>& session) {
    if (session) session->run([](double) { return true; }, [] { return std::numeric_limits<int>::max(); });
    session.reset();
  };
  while (!session_over(kernel_start_s)) {
    KernelState* kernel = pick_next(state);
    if (!kernel) break;
    if (env.on_kernel) env.on_kernel(*kernel, true);
    // A kernel's first session ends with its baseline: a suite's shares, and so the Amdahl order
    // of all that follows, are only known once every kernel has been timed.
    const bool baseline_session = kernel->best_us <= 0;
    std::unique_ptr<KernelSession> session = std::move(next);
    if (!session || &session->kernel() != kernel) {
      finish_off(session);  // a wrong guess: its builds are in the compile cache
      session = std::make_unique<KernelSession>(state, *kernel, env, clock, shared);
    }
    const auto starts_left = [&] {
      return env.session_max_experiments > 0
                 ? env.session_max_experiments - (state.experiments - experiments_before)
                 : std::numeric_limits<int>::max();
    };
    // What this session's last measurements leave the workers waiting for otherwise: the next
    // kernel's builds (the kernel the Amdahl pick is likely to choose once this one is done).
    const auto prepare_next = [&] {
      if (session_over(kernel_start_s)) return;
      if (KernelState* guess = pick_next(state, kernel)) {
        next = std::make_unique<KernelSession>(state, *guess, env, clock, shared);
        // Its first experiment (a baseline, or the first of its search) on a worker this one's
        // last measurements leave free; not on a budget counted in experiments, which it could
        // overrun. A wrong guess's experiment is recorded all the same (finish_off).
        next->prebuild(env.session_max_experiments == 0);
      }
    };
    session->run(
        [&](double next_s) { return session_over(next_s) || (baseline_session && kernel->best_us > 0); },
        starts_left, baseline_session, prepare_next);
    kernel_start_s = std::max(kernel_start_s, session->first_result_seconds());
    if (env.on_kernel) env.on_kernel(*kernel, false);
  }
  finish_off(next);  // a baseline measured ahead, when the budget ended first
  // Starters no session took (the run ended first) are awaited as `shared` ends.
}

}  // namespace ak
