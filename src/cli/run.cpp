// `autokernel run --model llama`: the main job. Profile, extract the top operators, optimize them,
// report, and verify the model as a user runs it — each stage the subcommand of the same name, run
// as a child process of this one, so a stage that fails stops the run with its own message and
// exit code and the workspace keeps everything done so far.
//
// --budget is the whole run's: what profile and extract took comes off it, the rest is split
// between optimize and verify (which times eager and each torch.compile mode, compiling the model
// several times), and the split is printed before anything runs. verify starts no measurement
// that would not fit in what is left, and says which it skipped.
#include <algorithm>
#include <chrono>
#include <iostream>

#include "cli/command.h"
#include "cli/print.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "core/subprocess.h"
#include "profile/profile_doc.h"
#include "runtime/runtime.h"
#include "search/budget.h"

namespace ak::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct RunOptions {
  std::string model, input_shape, dtype = "auto", device = "auto", workspace = "workspace";
  std::string budget, kernel_budget, strategy, agent_cmd, mode = "auto", gpus;
  std::string compile_modes = "default,max-autotune-no-cudagraphs,reduce-overhead";
  int top = 5;
  bool restart = false;
};

void stage(const std::string& name, std::vector<std::string> args) {
  std::cout << "\n==== " << name << ": autokernel";
  for (const auto& a : args) std::cout << " " << a;
  std::cout << std::endl;
  args.insert(args.begin(), self_executable().string());
  ProcessOptions options;
  options.timeout = std::chrono::hours(48);  // each stage keeps its own limits and budget
  options.on_line = [](std::string_view line) { std::cout << line << std::endl; };
  const ProcessResult run = run_process(args, options);
  if (!run.ok()) {
    const ErrorKind kind = run.exit_code == 2 ? ErrorKind::Usage : ErrorKind::Validation;
    throw Error(kind, "run: the " + name + " stage failed (" + run.describe() + "): " + run.tail(1));
  }
}

std::vector<std::string> with(std::vector<std::string> args, const std::string& flag,
                              const std::string& value) {
  if (!value.empty()) args.insert(args.end(), {flag, value});
  return args;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The whole run's budget in seconds: --budget as a time (a number of experiments is an optimize
// budget, not a run's), by default 15 minutes on a GPU and 3 on the CPU.
double run_budget(const RunOptions& o, bool gpu) {
  if (o.budget.empty()) return gpu ? 900 : 180;
  const Budget b = parse_budget(o.budget, 0);
  if (b.duration == std::chrono::steady_clock::duration::max())
    throw Error(ErrorKind::Usage, "run --budget is the whole run's time (e.g. 10m), not '" + o.budget + "'");
  return std::chrono::duration<double>(b.duration).count();
}

// What verify gets of the time left after profile and extract: its compiles (three modes, and
// again with the kernels) take long on a GPU; on the CPU or without compile modes, little.
double verify_share(const RunOptions& o, bool gpu, double left) {
  if (o.compile_modes == "none" || !gpu) return std::clamp(0.25 * left, 20.0, 300.0);
  return std::clamp(0.45 * left, 60.0, 1800.0);
}

// A run on [batch, tokens] with more than one token checks a prefill's problems; model.generate()'s
// decode steps take one token a row, other problems, which only a second run checks.
void print_decode_hint(std::ostream& out, const RunOptions& o, const std::vector<int64_t>& shape) {
  if (shape.size() != 2 || shape[1] <= 1) return;
  const std::string decode = o.workspace + "-decode";
  out << "if the model generates (model.generate()), its decode steps take one token a row: "
      << "autokernel run --model " << o.model << " --input-shape " << shape[0] << ",1 --workspace " << decode
      << ", then autokernel export --workspace " << o.workspace << " --workspace " << decode
      << " --out DIR\n";
}

int run_main_job(const RunOptions& o) {
  const fs::path ws = o.workspace;
  if (fs::exists(ws) && !fs::is_empty(ws)) {
    if (!o.restart)
      throw Error(ErrorKind::Usage, ws.string() +
                                        " is not empty: pass --restart to start over there, or "
                                        "--workspace for a new one (optimize --resume continues a run)");
    fs::remove_all(ws);
  }
  const bool gpu = backend_of_device(o.device) == Backend::Cuda;
  const double budget = run_budget(o, gpu);
  const auto start = Clock::now();
  std::cout << "run: budget " << duration(budget)
            << " in all: profile and extract first (usually under a minute), "
            << "then optimize, then verify (eager and torch.compile " << o.compile_modes
            << ", each with and without the kernels; compiles take minutes on a GPU)\n";
  // The custom ops' native kernels (a minute's compile, the first time on a machine) build while
  // the model is profiled and its kernels optimized, not inside verify's share.
  auto prepared = start_bridge({"prepare"}, std::chrono::minutes(15));
  std::vector<std::string> profile = {"profile",  "--model", o.model,       "--dtype",  o.dtype,
                                      "--device", o.device,  "--workspace", o.workspace};
  stage("profile", with(profile, "--input-shape", o.input_shape));
  stage("extract", {"extract", "--top", std::to_string(o.top), "--workspace", o.workspace});
  const double left = budget - seconds_since(start);
  const double verify_s = verify_share(o, gpu, left);
  const double optimize_s = std::max(10.0, left - verify_s);
  std::cout << "\nrun: " << duration(seconds_since(start)) << " used; optimize gets " << duration(optimize_s)
            << ", verify the rest (about " << duration(verify_s) << ")\n";
  auto optimize =
      with({"optimize", "--workspace", o.workspace, "--budget", std::to_string(int(optimize_s)) + "s"},
           "--kernel-budget", o.kernel_budget);
  optimize =
      with(with(with(optimize, "--strategy", o.strategy), "--agent-cmd", o.agent_cmd), "--gpus", o.gpus);
  stage("optimize", optimize);
  stage("report", {"report", "--workspace", o.workspace});
  try {
    prepared.get();
  } catch (const Error& e) {
    std::cout << "run: the custom ops' native kernels were not prepared (" << e.what()
              << "); verify says how it runs\n";
  }
  const double verify_left = std::max(1.0, budget - seconds_since(start));
  stage("verify", {"verify", "--workspace", o.workspace, "--compile-modes", o.compile_modes, "--mode", o.mode,
                   "--budget", std::to_string(int(verify_left))});
  std::cout
      << "\nrun: done in " << duration(seconds_since(start)) << " (budget " << duration(budget)
      << "); everything is in " << o.workspace
      << " (profile.json, plan.json, the run's git branch, results.tsv, reports/, kernels.json, verify.json)"
      << "\nnext: autokernel export --workspace " << o.workspace << " --out DIR\n";
  print_decode_hint(std::cout, o, read_profile(o.workspace).model.input_shape);
  return 0;
}

}  // namespace

Command run_command() {
  return {"run", "the main job: profile a model, extract its top kernels, optimize them, verify the model",
          [](CLI::App& app) -> Run {
            auto o = std::make_shared<RunOptions>();
            app.add_option("--model", o->model,
                           "llama, llama-7b, gpt2, bert (or *-tiny), or path/to/file.py:Class")
                ->required();
            app.add_option("--input-shape", o->input_shape, "e.g. 8,512; default: the model's own");
            app.add_option("--dtype", o->dtype, "fp16, bf16, fp32 (default fp16 on a GPU, fp32 on the CPU)")
                ->check(CLI::IsMember({"auto", "fp16", "bf16", "fp32"}));
            app.add_option("--device", o->device, "cuda, cpu, or auto")
                ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
            app.add_option("--top", o->top, "operators to extract and optimize")->check(CLI::PositiveNumber);
            app.add_option("--budget", o->budget,
                           "the whole run's time, e.g. 10m (default 15m on a GPU, 3m on the CPU); printed "
                           "split between optimize and verify before they start");
            app.add_option("--kernel-budget", o->kernel_budget, "time per kernel before moving on");
            app.add_option("--strategy", o->strategy, "search strategy of the optimize stage");
            app.add_option("--gpus", o->gpus,
                           "the optimize stage measures on these GPUs at once: 'all' or e.g. 0,2 (see "
                           "optimize --help)");
            app.add_option("--agent-cmd", o->agent_cmd,
                           "an agent proposer's command line (see optimize --help)");
            app.add_option("--compile-modes", o->compile_modes, "torch.compile modes verify times, or none")
                ->capture_default_str();
            app.add_option("--mode", o->mode,
                           "the mode you run the model in: plugging is decided there (see verify)")
                ->capture_default_str();
            app.add_option("--workspace", o->workspace, "the run's directory")->capture_default_str();
            app.add_flag("--restart", o->restart, "empty the workspace first");
            return [o] { return run_main_job(*o); };
          }};
}

}  // namespace ak::cli
