#include "cli/kernelbench_ours.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"
#include "loop/plan.h"
#include "profile/extract.h"
#include "profile/plan_modules.h"
#include "profile/profile_doc.h"
#include "profile/ranking.h"

namespace ak::cli::kb {
namespace fs = std::filesystem;

void extract_ours(const fs::path& workspace, Backend backend, int top) {
  if (fs::exists(workspace / kPlanFile)) return;
  const Profile profile = read_profile(workspace);
  // The order is by time alone, as `autokernel extract` ranks.
  extract_plan(workspace, profile, rank_profile(profile, Ceilings{}), static_cast<size_t>(top), backend);
}

void optimize_ours(const fs::path& workspace, const std::vector<std::string>& extra, bool progress) {
  std::vector<std::string> argv = {self_executable().string(), "optimize", "--workspace", workspace.string()};
  if (fs::exists(workspace / kRunStateFile)) argv.push_back("--resume");  // a run killed earlier goes on
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProcessOptions options;
  options.timeout = std::chrono::hours(24);  // the loop keeps its own budget
  if (progress) options.on_line = [](std::string_view line) { std::cerr << "  " << line << std::endl; };
  const ProcessResult run = run_process(argv, options);
  if (!run.ok())
    throw Error(ErrorKind::Io, "optimize " + workspace.string() + " " + run.describe() + ": " + run.tail(1));
}

fs::path write_ours_solution(const fs::path& workspace, const std::string& problem_path, Backend backend) {
  const Plan plan = read_plan(workspace);
  const std::string arch = backend == Backend::Cuda ? make_runtime(backend)->info().arch : "native";
  nlohmann::json kernels = nlohmann::json::array();
  for (const PlanModule& m : build_plan_modules(workspace, plan, backend, arch))
    kernels.push_back({{"name", m.kernel.name},
                       {"op", m.kernel.op},
                       {"shape", m.kernel.shape},
                       {"dtype", m.kernel.dtype},
                       {"kernel", m.kernel.file},
                       {"config", m.config},
                       {"module", fs::absolute(m.module).string()}});
  const nlohmann::json problem = problem_path;  // a JSON string is a Python string literal
  const std::string text =
      "\"\"\"ModelNew for " + fs::path(problem_path).filename().string() +
      " from autokernel's kernels, written by `autokernel kernelbench`: the problem's Model with\n"
      "each call of one of our operators at these problems run by its compiled kernel. Regenerated\n"
      "on every run; change the kernels (kernels/ beside this file), not this file.\"\"\"\n"
      "import json\n\n"
      "from autokernel.kernelbench.ours import model_new\n\n"
      "KERNELS = json.loads(" +
      nlohmann::json(kernels.dump()).dump() + ")\nModelNew = model_new(" + problem.dump() + ", KERNELS)\n";
  const fs::path solution = workspace / kSolutionFile;
  write_file_atomically(solution, text);
  return solution;
}

}  // namespace ak::cli::kb
