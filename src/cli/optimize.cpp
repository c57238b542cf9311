// `autokernel optimize`: the unattended loop over a workspace's plan (src/loop). Starts a run
// from workspace/plan.json (written by `extract`) or from the nine-operator suite (--suite), or
// resumes a killed one (--resume). Every experiment is a line on stdout; `report` draws the rest.
#include <csignal>
#include <iomanip>
#include <iostream>

#include "cli/command.h"
#include "cli/print.h"
#include "core/error.h"
#include "harness/results_log.h"
#include "loop/executor.h"
#include "loop/orchestrator.h"
#include "loop/plan.h"
#include "loop/worker_stats.h"
#include "runtime/ceilings_cache.h"
#include "search/budget.h"
#include "search/strategy.h"

namespace ak::cli {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void request_stop(int) {
  g_stop = true;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
  std::signal(SIGTERM, SIG_DFL);
}

struct OptimizeOptions {
  std::string workspace = "workspace";
  bool suite = false, resume = false, restart = false, json = false;
  std::vector<std::string> ops;
  std::string backend = "auto", budget, kernel_budget, arch, gpus, ray;
  int workers = 0;  // host backend: measuring processes
  LoopSettings settings;
  int timeout_s = 120, agent_timeout_s = 600, jobs = 0;
  double max_time_s = 1.0;  // the keep rule uses the median's standard error: ~1 s of samples is plenty
};

Backend pick_backend(const std::string& name) {
  if (name != "auto") return device_of_backend_option(name, Backend::Cuda);
  try {
    make_runtime(Backend::Cuda);
    return Backend::Cuda;
  } catch (const Error&) {
    return Backend::Host;
  }
}

double seconds_of(const std::string& text) {
  if (text.empty()) return 0;
  const Budget b = parse_budget(text, 0);
  if (b.duration == std::chrono::steady_clock::duration::max())
    throw Error(ErrorKind::Usage, "a kernel budget is a time (e.g. 90s, 10m), got '" + text + "'");
  return std::chrono::duration<double>(b.duration).count();
}

RunState open_run(const OptimizeOptions& o, Backend backend, const std::string& device) {
  const std::filesystem::path ws = o.workspace;
  if (o.resume) return resume_run(ws);
  if (std::filesystem::exists(ws / kRunStateFile)) {
    if (!(o.suite && o.restart))
      throw Error(ErrorKind::Usage, ws.string() + " already holds a run: continue it with --resume" +
                                        (o.suite ? ", or start over with --restart" : ""));
    std::filesystem::remove_all(ws);
  }
  if (o.suite && std::filesystem::exists(ws) && !std::filesystem::is_empty(ws))
    throw Error(ErrorKind::Usage,
                ws.string() + " is not empty: --suite needs a new workspace (or --restart)");
  const Plan plan =
      o.suite ? write_suite_plan(ws, backend, o.ops, starter_kinds(o.backend, backend)) : read_plan(ws);
  return start_run(ws, plan, o.settings, backend, device);
}

void print_kernel(const KernelState& k, bool starting) {
  if (starting) {
    std::cout << "== " << k.name << " (" << k.op << " " << k.shape << " " << k.dtype << ")";
    if (k.best_us > 0) std::cout << "  best " << std::fixed << std::setprecision(2) << k.best_us << " us";
    std::cout << std::endl;
  } else if (!k.done.empty()) {
    std::cout << "   done: " << k.done << std::endl;
  }
}

void print_experiment(const KernelState& k, const Outcome& o, const ExperimentResult& r, bool name_worker) {
  std::cout << "[" << std::setw(4) << o.experiment << "] ";
  if (name_worker) std::cout << std::left << std::setw(6) << (o.worker.empty() ? "-" : o.worker) << " ";
  std::cout << std::left << std::setw(10) << o.decision << std::right
            << (o.config.empty() ? "(defaults)" : o.config) << "  " << summary_line(r);
  if (o.decision == "kept" && k.baseline_us > 0)
    std::cout << "  -> " << std::fixed << std::setprecision(3) << k.baseline_us / k.best_us << "x baseline";
  std::cout << std::endl;
}

ExecutorOptions executor_options(const OptimizeOptions& o, Backend backend, const std::string& device) {
  ExecutorOptions e;
  e.backend = backend;
  e.build_jobs = o.jobs;
  e.device_model = device;
  if (o.workers > 0 && backend != Backend::Host)
    throw Error(ErrorKind::Usage,
                "--workers is for the host backend (CUDA: --gpus, or every GPU with --ray)");
  e.host_workers = std::max(1, o.workers);
  if (!o.ray.empty()) {
    e.kind = "ray";
    e.ray_address = o.ray;
    return e;
  }
  if (!o.gpus.empty()) {
    if (backend != Backend::Cuda)
      throw Error(ErrorKind::Usage, "--gpus is for the CUDA backend (host: --workers)");
    e.gpus = parse_gpu_list(o.gpus, visible_devices(backend));
  }
  return e;
}

void print_workers(const Executor& executor) {
  const auto& workers = executor.workers();
  if (workers.size() < 2) return;
  std::cout << workers.size() << " workers:";
  for (const auto& w : workers)
    std::cout << " " << w.name << (w.name.find(w.host) == std::string::npos ? "@" + w.host : "");
  std::cout << " (" << workers.front().model << ")" << std::endl;
}

// This session's experiments per hour on each worker, from results.tsv.
void print_worker_rates(const std::string& workspace, double started_at) {
  std::cout << "per worker:";
  for (const auto& w :
       worker_stats(read_results(std::filesystem::path(workspace) / kResultsFile), started_at))
    std::cout << "  " << w.worker << " " << w.experiments << " (" << std::fixed << std::setprecision(0)
              << w.per_hour << "/h)";
  std::cout << "\n";
}

int run_optimize(OptimizeOptions o) {
  if (o.resume && o.suite)
    throw Error(ErrorKind::Usage, "--resume continues the run in the workspace; drop --suite");
  if (o.settings.proposer == "agent" && o.settings.agent_cmd.empty())
    throw Error(ErrorKind::Usage, "--proposer agent needs --agent-cmd 'COMMAND'");
  if (!o.settings.agent_cmd.empty()) o.settings.proposer = "agent";
  const Backend backend =
      o.resume ? parse_backend(load_run_state(o.workspace).backend) : pick_backend(o.backend);
  auto runtime = make_runtime(backend);
  const std::string device = runtime->info().name;
  const Ceilings ceilings = device_ceilings(*runtime);
  RunState state = open_run(o, backend, device);
  if (o.resume) std::cout << "resuming " << state.branch << " after experiment " << state.experiments << "\n";

  const Budget session =
      parse_budget(o.budget.empty() && o.suite ? (backend == Backend::Cuda ? "10m" : "2m") : o.budget, 0);
  LoopEnvironment env;
  env.workspace = o.workspace;
  env.backend = backend;
  env.arch = o.arch.empty() ? runtime->info().arch : o.arch;
  env.ceilings = ceilings;
  env.timeout = std::chrono::seconds(o.timeout_s);
  env.agent_timeout = std::chrono::seconds(o.agent_timeout_s);
  env.max_timing_s = o.max_time_s;
  if (session.duration != std::chrono::steady_clock::duration::max())
    env.session_budget_s = std::chrono::duration<double>(session.duration).count();
  env.session_max_experiments = static_cast<int>(session.experiments);
  if (!o.resume) state.settings.kernel_budget_s = seconds_of(o.kernel_budget);
  runtime.reset();  // the experiments own the device from here on
  const auto executor = make_executor(executor_options(o, backend, device));
  env.executor = executor.get();
  env.stop = &g_stop;
  if (!o.json) {
    env.on_kernel = print_kernel;
    env.on_note = [](const std::string& note) { std::cout << "       " << note << std::endl; };
    env.on_waiting = [](const std::vector<std::string>& activity) {
      std::cout << "       at work:";
      for (size_t i = 0; i < activity.size(); ++i) std::cout << (i ? " | " : " ") << activity[i];
      std::cout << std::endl;
    };
    env.on_experiment = [multi = executor->workers().size() > 1](const KernelState& k, const Outcome& out,
                                                                 const ExperimentResult& r) {
      print_experiment(k, out, r, multi);
    };
    std::cout << "run " << state.branch << " in " << o.workspace << " on " << device << ": "
              << state.kernels.size() << " kernels, proposer " << state.settings.proposer
              << (state.settings.proposer == "search" ? " (" + state.settings.strategy + ")" : "")
              << std::endl;
    print_workers(*executor);
  }
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);
  const double started_at = state.elapsed_s;
  run_loop(state, env);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  if (o.json) {
    std::cout << nlohmann::json(state).dump(2) << "\n";
  } else {
    std::cout << "\n"
              << state.experiments << " experiments; projected end-to-end speedup " << std::fixed
              << std::setprecision(3) << state.projected_speedup << "x"
              << (g_stop ? " (stopped; continue with --resume)" : "") << "\n"
              << "details: autokernel report --workspace " << o.workspace << "\n";
    if (executor->workers().size() > 1) print_worker_rates(o.workspace, started_at);
  }
  return 0;
}

}  // namespace

Command optimize_command() {
  return {
      "optimize", "the unattended loop: propose, build, check, time, keep (a commit) or revert",
      [](CLI::App& app) -> Run {
        auto o = std::make_shared<OptimizeOptions>();
        app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
        app.add_option("--workspace", o->workspace, "the run's directory (a git repository of its own)");
        app.add_flag("--suite", o->suite, "optimize the nine operators at their standard shapes (no model)");
        app.add_option("--ops", o->ops, "with --suite: only these operators")->delimiter(',');
        app.add_flag("--resume", o->resume, "continue the run in the workspace where it stopped");
        app.add_flag("--restart", o->restart, "with --suite: discard the workspace's run and start over");
        app.add_option("--budget", o->budget,
                       "this session's budget: a time (90s, 10m, 1h) or a number of experiments "
                       "(default: until every kernel is done; 10m on a GPU, 2m on the host with --suite)");
        app.add_option("--kernel-budget", o->kernel_budget, "time per kernel before moving on (e.g. 5m)");
        app.add_option("--proposer", o->settings.proposer, "search (the @tune space) or agent")
            ->check(CLI::IsMember({"search", "agent"}));
        app.add_option("--strategy", o->settings.strategy,
                       "search strategy (default anneal):" + strategies_help());
        app.add_option("--agent-cmd", o->settings.agent_cmd,
                       "the agent's command line (implies --proposer agent)");
        app.add_option("--agent-timeout", o->agent_timeout_s, "seconds an agent may take per proposal")
            ->check(CLI::PositiveNumber);
        app.add_option("--patience", o->settings.patience,
                       "experiments in a row without a gain before moving on")
            ->check(CLI::PositiveNumber);
        app.add_option("--target", o->settings.roofline_target, "move on at this fraction of the roofline")
            ->check(CLI::PositiveNumber);
        app.add_option("--min-gain", o->settings.min_gain,
                       "smallest relative gain that is kept (and beyond the noise)")
            ->check(CLI::Range(0.0, 0.5));
        app.add_option(
               "--backend", o->backend,
               "cuda, triton, both (with --suite: a CUDA and a Triton kernel per operator, the Amdahl "
               "pick across them), host, or auto (cuda when there is a GPU)")
            ->check(CLI::IsMember({"auto", "cuda", "triton", "both", "host"}));
        app.add_flag("--quick", o->settings.quick,
                     "smoke test and the timed problem only (not the full harness)");
        app.add_option("--seed", o->settings.seed, "seed of the input sets and the strategies");
        app.add_option("--timeout", o->timeout_s, "seconds before an experiment counts as hung")
            ->check(CLI::PositiveNumber);
        app.add_option("--max-time", o->max_time_s, "seconds of timing samples at most per experiment")
            ->check(CLI::PositiveNumber);
        app.add_option("--jobs", o->jobs,
                       "parallel builds (default: the cores the measuring processes leave, else all)");
        auto* gpus =
            app.add_option("--gpus", o->gpus,
                           "measure on these GPUs at once, one experiment per GPU: 'all' or e.g. 0,2 "
                           "(default: the one GPU CUDA picks); they must be of one model");
        app.add_option(
               "--workers", o->workers,
               "host backend: measuring processes at once, or with --ray, actors (they share a CPU, so "
               "their times are noisier: for trying the executor, not for timings)")
            ->check(CLI::Range(1, 64));
        app.add_option("--ray", o->ray,
                       "measure on every GPU of a Ray cluster: 'auto' (the cluster `ray start` joined this "
                       "machine to), an address host:port, or 'local' (a cluster of this machine alone)")
            ->excludes(gpus);
        app.add_option("--arch", o->arch, "CUDA architecture to build for (default: the device's own)");
        app.add_flag("--json", o->json, "print the run's final state as JSON instead of progress lines");
        return [o] { return run_optimize(*o); };
      }};
}

}  // namespace ak::cli
