// `autokernel report`: where an optimization run stands. A table per kernel and a summary with the
// projected end-to-end speedup, from the workspace's run.json; and a progress plot drawn from its
// results.tsv by python/autokernel/plot.py (matplotlib, run as a child process).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/print.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "core/subprocess.h"
#include "harness/results_log.h"
#include "loop/alternatives.h"
#include "loop/run_state.h"
#include "loop/worker_stats.h"

namespace ak::cli {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string workspace = "workspace";
  std::string plot;  // "" = <workspace>/reports/progress.png
  bool no_plot = false;
  bool json = false;
};

double speedup_of(const KernelState& k) {
  return k.baseline_us > 0 && k.best_us > 0 ? k.baseline_us / k.best_us : 0;
}

double experiments_per_hour(const RunState& s) {
  return s.elapsed_s > 0 ? s.experiments / (s.elapsed_s / 3600) : 0;
}

double share_covered(const RunState& s) {
  double shares = 0;
  for (const auto& k : s.kernels) shares += k.share;
  return shares;
}

std::string state_of(const KernelState& k) {
  return k.done.empty() ? "active" : k.done;
}

// Slots with alternatives (loop/alternatives.h): which backend's kernel won each, and by how much.
nlohmann::json winners_json(const RunState& s) {
  nlohmann::json winners = nlohmann::json::array();
  for (const auto& k : s.kernels) {
    if (!first_of_slot(s.kernels, k)) continue;
    nlohmann::json times = nlohmann::json::object();
    for (const auto& other : s.kernels)
      if (same_slot(other, k))
        times[kernel_backend(other.file)] =
            other.best_us > 0 ? nlohmann::json(other.best_us) : nlohmann::json(nullptr);
    if (times.size() < 2) continue;
    const KernelState* leader = slot_leader(s.kernels, k);
    winners.push_back(
        {{"op", k.op},
         {"shape", k.shape},
         {"dtype", k.dtype},
         {"winner", leader ? nlohmann::json(leader->name) : nlohmann::json(nullptr)},
         {"backend", leader ? nlohmann::json(kernel_backend(leader->file)) : nlohmann::json(nullptr)},
         {"best_us", times}});
  }
  return winners;
}

void print_winners(std::ostream& out, const nlohmann::json& winners) {
  for (const auto& w : winners) {
    out << w["op"].get<std::string>() << " " << w["shape"].get<std::string>() << " "
        << w["dtype"].get<std::string>() << ": "
        << (w["backend"].is_null() ? "no kernel passed" : w["backend"].get<std::string>() + " won") << " (";
    std::string sep;
    for (const auto& [backend, us] : w["best_us"].items()) {
      out << sep << backend << " " << (us.is_null() ? "-" : microseconds(us.get<double>()) + " µs");
      sep = ", ";
    }
    out << ")\n";
  }
}

nlohmann::json workers_json(const std::vector<WorkerStats>& workers) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& w : workers)
    list.push_back({{"worker", w.worker},
                    {"experiments", w.experiments},
                    {"passed", w.passed},
                    {"kept", w.kept},
                    {"experiments_per_hour", w.per_hour}});
  return list;
}

// With several workers (GPUs, Ray actors), what each one measured.
void print_workers(std::ostream& out, const std::vector<WorkerStats>& workers) {
  if (workers.size() < 2) return;
  std::vector<std::vector<std::string>> rows = {{"worker", "exps", "passed", "kept", "per hour"}};
  for (const auto& w : workers)
    rows.push_back({w.worker, std::to_string(w.experiments), std::to_string(w.passed), std::to_string(w.kept),
                    fixed(w.per_hour, 1)});
  out << "\n";
  print_table(out, rows, {false, true, true, true, true});
}

nlohmann::json report_json(const RunState& s, const std::vector<WorkerStats>& workers,
                           const std::optional<fs::path>& plot) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& k : s.kernels) {
    const double speedup = speedup_of(k);
    kernels.push_back({{"name", k.name},
                       {"op", k.op},
                       {"file", k.file},
                       {"backend", kernel_backend(k.file)},
                       {"shape", k.shape},
                       {"dtype", k.dtype},
                       {"share", k.share},
                       {"baseline_us", k.baseline_us},
                       {"best_us", k.best_us},
                       {"speedup", speedup > 0 ? nlohmann::json(speedup) : nlohmann::json(nullptr)},
                       {"best_roofline", k.best_roofline},
                       {"best_config", k.best_config},
                       {"best_commit", k.best_commit},
                       {"experiments", k.experiments},
                       {"kept", k.kept},
                       {"failed", k.failed},
                       {"seconds", k.seconds},
                       {"state", state_of(k)}});
  }
  return {{"name", s.name},
          {"branch", s.branch},
          {"backend", s.backend},
          {"device", s.device},
          {"started", s.started},
          {"kernels", kernels},
          {"winners", winners_json(s)},
          {"summary",
           {{"experiments", s.experiments},
            {"elapsed_s", s.elapsed_s},
            {"experiments_per_hour", experiments_per_hour(s)},
            {"share_covered", share_covered(s)},
            {"projected_speedup", projected_speedup(s.kernels)}}},
          {"workers", workers_json(workers)},
          {"plot", plot ? nlohmann::json(plot->string()) : nlohmann::json(nullptr)}};
}

void print_report(std::ostream& out, const RunState& s, const std::vector<WorkerStats>& workers) {
  out << "run " << s.name;
  if (!s.device.empty()) out << " on " << s.device << (s.backend.empty() ? "" : " (" + s.backend + ")");
  if (!s.branch.empty()) out << ", branch " << s.branch;
  if (!s.started.empty()) out << ", started " << s.started;
  out << "\n\n";
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "shape", "dtype", "share",
                                                 "baseline → best µs", "speedup", "roofline", "exps", "kept",
                                                 "failed", "state"}};
  for (const auto& k : s.kernels) {
    const double speedup = speedup_of(k);
    rows.push_back({k.name, k.op, k.shape, k.dtype, fixed(100 * k.share, 1, "%"),
                    microseconds(k.baseline_us) + " → " + microseconds(k.best_us),
                    speedup > 0 ? fixed(speedup, 2, "x") : "-",
                    k.best_roofline > 0 ? fixed(100 * k.best_roofline, 1, "%") : "-",
                    std::to_string(k.experiments), std::to_string(k.kept), std::to_string(k.failed),
                    state_of(k)});
  }
  print_table(out, rows, {false, false, false, false, true, true, true, true, true, true, true, false});
  if (const auto winners = winners_json(s); !winners.empty()) {
    out << "\n";
    print_winners(out, winners);
  }
  out << "\n"
      << s.experiments << " experiments in " << duration(s.elapsed_s) << " ("
      << fixed(experiments_per_hour(s), 1) << "/hour); projected end-to-end speedup "
      << fixed(projected_speedup(s.kernels), 2, "x") << " (Amdahl, the kernels are "
      << fixed(100 * share_covered(s), 1, "%") << " of the model's time)\n";
  print_workers(out, workers);
}

// Returns false when no Python can plot and the plot was not asked for by name: the table is the
// report, the picture a bonus. Throws when the plot was asked for, or when drawing it fails.
bool draw_plot(const fs::path& workspace, const fs::path& output, double speedup, bool asked) {
  std::string tried;
  const auto python = find_python("matplotlib", tried);
  if (!python) {
    const std::string why = "no Python with matplotlib for the progress plot (tried " + tried +
                            "); install python3-matplotlib (scripts/install-deps.sh) or pass --no-plot";
    if (asked) throw Error(ErrorKind::Unsupported, why);
    std::cerr << "autokernel: " << why << "\n";
    return false;
  }
  const fs::path script = project_dir() / "python" / "autokernel" / "plot.py";
  if (!fs::is_regular_file(script))
    throw Error(ErrorKind::Io, "plot script not found: " + script.string() +
                                   " (set AUTOKERNEL_HOME to the autokernel source tree)");
  if (::isatty(STDERR_FILENO)) std::cerr << "autokernel: drawing " << output.string() << "...\n";
  ProcessOptions options;
  options.timeout = std::chrono::seconds(120);
  const ProcessResult run =
      run_process({*python, script.string(), (workspace / kResultsFile).string(),
                   (workspace / kRunStateFile).string(), output.string(), "--speedup", fixed(speedup, 6)},
                  options);
  if (!run.ok())
    throw Error(ErrorKind::Io, "the progress plot failed (" + run.describe() + "): " + run.tail(3));
  return true;
}

int run_report(const ReportOptions& o) {
  const fs::path workspace = o.workspace;
  if (!fs::is_directory(workspace))
    throw Error(ErrorKind::Usage,
                "workspace not found: " + o.workspace + " (start a run with `autokernel optimize`)");
  const RunState state = load_run_state(workspace);
  const fs::path plot = o.plot.empty() ? workspace / "reports" / "progress.png" : fs::path(o.plot);
  const std::optional<fs::path> planned = o.no_plot ? std::nullopt : std::optional(plot);
  const auto workers = worker_stats(read_results(workspace / kResultsFile));
  if (o.json)
    std::cout << report_json(state, workers, planned).dump(2) << std::endl;
  else
    print_report(std::cout, state, workers);
  std::cout.flush();  // the table comes before any error from the plot, also through a pipe
  if (!planned) return 0;
  if (draw_plot(workspace, plot, projected_speedup(state.kernels), !o.plot.empty()) && !o.json)
    std::cout << "progress plot: " << plot.string() << "\n";
  return 0;
}

}  // namespace

Command report_command() {
  return {"report", "show an optimization run: a table per kernel, the projected speedup, a progress plot",
          [](CLI::App& app) -> Run {
            auto o = std::make_shared<ReportOptions>();
            app.add_option("--workspace", o->workspace, "the run's workspace (run.json, results.tsv)")
                ->capture_default_str();
            auto* plot = app.add_option("--plot", o->plot,
                                        "PNG of the progress (default: WORKSPACE/reports/progress.png); "
                                        "needs Python with matplotlib (or $AUTOKERNEL_PYTHON)");
            app.add_flag("--no-plot", o->no_plot, "print the table only")->excludes(plot);
            app.add_flag("--json", o->json, "print one JSON document instead of the table");
            return [o] { return run_report(*o); };
          }};
}

}  // namespace ak::cli
