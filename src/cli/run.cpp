// `autokernel run --model llama`: the main job. Profile, extract the top operators, optimize them
// within a budget, verify the model with the kernels plugged in, and report — each stage the
// subcommand of the same name, run as a child process of this one, so a stage that fails stops
// the run with its own message and exit code and the workspace keeps everything done so far.
#include <iostream>

#include "cli/command.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"
#include "runtime/runtime.h"

namespace ak::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model, input_shape, dtype = "auto", device = "auto", workspace = "workspace";
  std::string budget, kernel_budget, compile_mode = "max-autotune-no-cudagraphs", strategy, agent_cmd;
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
  const std::string budget = o.budget.empty() ? (gpu ? "10m" : "2m") : o.budget;
  std::vector<std::string> profile = {"profile",  "--model", o.model,       "--dtype",  o.dtype,
                                      "--device", o.device,  "--workspace", o.workspace};
  stage("profile", with(profile, "--input-shape", o.input_shape));
  stage("extract", {"extract", "--top", std::to_string(o.top), "--workspace", o.workspace});
  auto optimize =
      with({"optimize", "--workspace", o.workspace, "--budget", budget}, "--kernel-budget", o.kernel_budget);
  optimize = with(with(optimize, "--strategy", o.strategy), "--agent-cmd", o.agent_cmd);
  stage("optimize", optimize);
  stage("report", {"report", "--workspace", o.workspace});
  stage("verify", {"verify", "--workspace", o.workspace, "--compile-mode", o.compile_mode});
  std::cout << "\nrun: done; everything is in " << o.workspace
            << " (profile.json, plan.json, the run's git branch, results.tsv, reports/, verify.json)\n";
  return 0;
}

}  // namespace

Command run_command() {
  return {
      "run", "the main job: profile a model, extract its top kernels, optimize them, verify the model",
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
                       "the optimize stage's budget (default 10m on a GPU, 2m on the CPU)");
        app.add_option("--kernel-budget", o->kernel_budget, "time per kernel before moving on");
        app.add_option("--strategy", o->strategy, "search strategy of the optimize stage");
        app.add_option("--agent-cmd", o->agent_cmd, "an agent proposer's command line (see optimize --help)");
        app.add_option("--compile-mode", o->compile_mode, "torch.compile mode verify compares with, or none")
            ->capture_default_str();
        app.add_option("--workspace", o->workspace, "the run's directory")->capture_default_str();
        app.add_flag("--restart", o->restart, "empty the workspace first");
        return [o] { return run_main_job(*o); };
      }};
}

}  // namespace ak::cli
