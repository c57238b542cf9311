// What a run optimizes: a plan of kernels, each an operator at one problem and dtype with its
// share of the model's GPU time. `autokernel extract` writes workspace/plan.json from a model's
// profile; `optimize --suite` writes one for the nine operators at their standard shapes.
// Starting a run turns the plan into a workspace: a git repository on a fresh run branch, the
// kernels copied in, and run.json.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "loop/run_state.h"
#include "runtime/runtime.h"

namespace ak {

struct PlanKernel {
  std::string name;  // unique: a directory name under workspace/kernels
  std::string op;
  std::string file;   // relative to the workspace, e.g. kernels/rmsnorm/rmsnorm.cu
  std::string shape;  // the primary problem
  std::string dtype;
  double share = 0;  // of the model's time; 0 with shares_from_baselines
};

struct Plan {
  std::string name;  // "suite", or the model's name
  bool shares_from_baselines = false;
  std::vector<PlanKernel> kernels;
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PlanKernel, name, op, file, shape, dtype, share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Plan, name, shares_from_baselines, kernels)

inline constexpr const char* kPlanFile = "plan.json";

// The kinds of starter a plan takes for each operator (kernels/<kind>/<op>.<ext>): "cuda" (.cu)
// and "triton" (.py) run on the CUDA device, "host" (.cpp) on the CPU. A --backend option names
// one kind, "both" (cuda and triton: two alternatives per operator, loop/alternatives.h) or
// "auto" (the device's own kind). Throws Error(Usage) for triton or both on the host device.
std::vector<std::string> starter_kinds(const std::string& option, Backend device);

// The device a --backend option runs on: host for "host", cuda for cuda, triton and both, and
// `automatic` for "auto".
Backend device_of_backend_option(const std::string& option, Backend automatic);

// The nine operators at their standard problems: the shapes of the targets on a GPU, and
// smaller ones on the host backend (a CPU would take minutes per experiment at GPU sizes). Each
// starter (kernels/<kind>/<op>.*) is copied into `workspace` and plan.json is written there.
// `ops` limits the suite to those operators (empty: all nine); `kinds` are the starters of each
// (empty: the backend's own); a second kind's kernel is named <op>_<kind>. Throws Error(Usage)
// for an unknown operator.
Plan write_suite_plan(const std::filesystem::path& workspace, Backend backend,
                      const std::vector<std::string>& ops, const std::vector<std::string>& kinds = {});

// The starter of `op` of a kind (cuda, triton or host) in the project: kernels/<kind>/<op>.<ext>.
std::filesystem::path starter_path(std::string_view kind, const std::string& op);

// Copies the starter of `op` for `backend` (kernels/<backend>/<op>.*) into
// workspace/kernels/<name>/ and returns its path relative to the workspace. Throws Error(Usage)
// when the backend has no starter for the operator.
std::string copy_starter(const std::filesystem::path& workspace, Backend backend, const std::string& op,
                         const std::string& name);
// The same for a kind of starter (cuda, triton or host).
std::string copy_starter(const std::filesystem::path& workspace, std::string_view kind, const std::string& op,
                         const std::string& name);

// Writes workspace/plan.json.
void write_plan(const std::filesystem::path& workspace, const Plan& plan);

// Reads workspace/plan.json and checks it: known operators, valid problems, kernel files present,
// unique names. Throws Error(Usage) naming what is wrong.
Plan read_plan(const std::filesystem::path& workspace);

// Makes the workspace a git repository (if it is not one), switches to a new run branch
// autokernel/<date>-<name> (suffixed -2, -3... when taken), commits the plan and the kernels,
// and returns the run's initial state. Never touches a repository above the workspace.
RunState start_run(const std::filesystem::path& workspace, const Plan& plan, const LoopSettings& settings,
                   Backend backend, const std::string& device);

}  // namespace ak
