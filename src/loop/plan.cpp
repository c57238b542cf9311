#include "loop/plan.h"

#include <set>

#include "core/dtype.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/problem.h"
#include "core/registry.h"
#include "loop/git_repo.h"

namespace ak {
namespace {

struct SuiteEntry {
  const char* op;
  const char* cuda_shape;  // the targets' shapes (issue 3)
  const char* cuda_dtype;
  const char* host_shape;  // small enough for a CPU to check and time in seconds
};

constexpr SuiteEntry kSuite[] = {
    {"rmsnorm", "8192x8192", "fp16", "1024x4096"},
    {"softmax", "8192x8192", "fp16", "1024x4096"},
    {"layernorm", "8192x8192", "fp16", "1024x4096"},
    {"reduce", "16384x4096", "fp16", "2048x2048"},
    {"cross_entropy", "8192x32768", "fp16", "512x8192"},
    {"rotary_embedding", "4x32x4096x128", "fp16", "1x8x512x64"},
    {"matmul", "4096x4096x4096", "fp16", "256x256x256"},
    {"flash_attention", "4x32x4096x128:causal=1", "bf16", "1x4x256x64:causal=1"},
    {"fused_mlp", "4096x4096x11008", "fp16", "128x256x704"},
};

std::string today() {
  return utc_timestamp().substr(0, 10);
}

}  // namespace

std::vector<std::string> starter_kinds(const std::string& option, Backend device) {
  if (option == "auto") return {std::string(to_string(device))};
  if ((option == "triton" || option == "both") && device == Backend::Host)
    throw Error(ErrorKind::Usage,
                "--backend " + option + ": Triton kernels run on the CUDA device, not the host");
  if (option == "both") return {"cuda", "triton"};
  if (option == "cuda" || option == "triton" || option == "host") return {option};
  throw Error(ErrorKind::Usage, "unknown backend '" + option + "' (auto, cuda, triton, both or host)");
}

Backend device_of_backend_option(const std::string& option, Backend automatic) {
  if (option == "auto") return automatic;
  return option == "host" ? Backend::Host : Backend::Cuda;
}

std::string copy_starter(const std::filesystem::path& workspace, Backend backend, const std::string& op,
                         const std::string& name) {
  return copy_starter(workspace, to_string(backend), op, name);
}

std::filesystem::path starter_path(std::string_view kind, const std::string& op) {
  const char* extension = kind == "triton" ? ".py" : kind == "cuda" ? ".cu" : ".cpp";
  return project_dir() / "kernels" / std::string(kind) / (op + extension);
}

std::string copy_starter(const std::filesystem::path& workspace, std::string_view kind, const std::string& op,
                         const std::string& name) {
  const auto starter = starter_path(kind, op);
  if (!std::filesystem::exists(starter))
    throw Error(ErrorKind::Usage,
                "no " + std::string(kind) + " starter for " + op + " (" + starter.string() + ")");
  const std::string file = "kernels/" + name + "/" + starter.filename().string();
  std::filesystem::create_directories(workspace / "kernels" / name);
  std::filesystem::copy_file(starter, workspace / file, std::filesystem::copy_options::overwrite_existing);
  return file;
}

void write_plan(const std::filesystem::path& workspace, const Plan& plan) {
  write_file_atomically(workspace / kPlanFile, nlohmann::json(plan).dump(1) + "\n");
}

Plan write_suite_plan(const std::filesystem::path& workspace, Backend backend,
                      const std::vector<std::string>& ops, const std::vector<std::string>& kinds) {
  const std::set<std::string> wanted(ops.begin(), ops.end());
  for (const auto& op : wanted) find_op(op);  // an unknown name is a usage error here, not later
  const std::vector<std::string> starters = kinds.empty() ? starter_kinds("auto", backend) : kinds;
  Plan plan{"suite", true, {}};
  for (const SuiteEntry& e : kSuite) {
    if (!wanted.empty() && !wanted.contains(e.op)) continue;
    const bool cuda = backend == Backend::Cuda;
    for (const auto& kind : starters) {
      const std::string name = kind == starters.front() ? e.op : std::string(e.op) + "_" + kind;
      plan.kernels.push_back({name, e.op, copy_starter(workspace, kind, e.op, name),
                              cuda ? e.cuda_shape : e.host_shape, cuda ? e.cuda_dtype : "fp32", 0});
    }
  }
  write_plan(workspace, plan);
  return plan;
}

Plan read_plan(const std::filesystem::path& workspace) {
  const auto path = workspace / kPlanFile;
  if (!std::filesystem::exists(path))
    throw Error(ErrorKind::Usage, "no " + path.string() + ": run `autokernel extract` first, or use --suite");
  Plan plan;
  try {
    plan = nlohmann::json::parse(read_text_file(path)).get<Plan>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Usage, path.string() + " is not a plan: " + e.what());
  }
  if (plan.kernels.empty()) throw Error(ErrorKind::Usage, path.string() + " lists no kernels");
  std::set<std::string> names;
  for (const auto& k : plan.kernels) {
    if (k.name.empty() || k.name.find('/') != std::string::npos || !names.insert(k.name).second)
      throw Error(ErrorKind::Usage,
                  path.string() + ": kernel names must be unique directory names, got '" + k.name + "'");
    find_op(k.op).validate(parse_problem(k.shape));
    parse_dtype(k.dtype);
    if (!std::filesystem::is_regular_file(workspace / k.file))
      throw Error(ErrorKind::Usage,
                  path.string() + ": kernel file " + k.file + " not found in the workspace");
  }
  return plan;
}

RunState start_run(const std::filesystem::path& workspace, const Plan& plan, const LoopSettings& settings,
                   Backend backend, const std::string& device) {
  GitRepo repo = GitRepo(workspace).exists() ? GitRepo(workspace) : GitRepo::init(workspace);
  write_file_atomically(workspace / ".gitignore",
                        std::string(kRunStateFile) + "\n" + kResultsFile + "\nreports/\n*.prompt.md\n");
  std::string branch = "autokernel/" + today() + "-" + plan.name;
  for (int n = 2; repo.branch_exists(branch); ++n)
    branch = "autokernel/" + today() + "-" + plan.name + "-" + std::to_string(n);
  repo.create_branch(branch);

  RunState state;
  state.name = plan.name;
  state.branch = branch;
  state.backend = std::string(to_string(backend));
  state.device = device;
  state.started = utc_timestamp();
  state.settings = settings;
  state.shares_from_baselines = plan.shares_from_baselines;
  for (const auto& k : plan.kernels) {
    KernelState ks;
    ks.name = k.name;
    ks.op = k.op;
    ks.file = k.file;
    ks.shape = k.shape;
    ks.dtype = k.dtype;
    ks.share = k.share;
    // The kept configuration lives next to the kernel, tracked, so each commit holds both.
    const auto config = workspace / std::filesystem::path(k.file).parent_path() / "config";
    if (!std::filesystem::exists(config)) write_file_atomically(config, "");
    state.kernels.push_back(std::move(ks));
  }
  const std::string commit = repo.commit_all("autokernel: start run " + plan.name + " (" +
                                             std::to_string(plan.kernels.size()) + " kernels)");
  for (auto& k : state.kernels) k.best_commit = commit;
  state.head = commit;
  save_run_state(workspace, state);
  return state;
}

}  // namespace ak
