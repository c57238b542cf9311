#include "profile/kernel_manifest.h"

#include <regex>
#include <set>

#include "autokernel/abi.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/registry.h"
#include "core/subprocess.h"

namespace ak {
namespace {

const std::vector<std::string> kAllDtypes = {"fp16", "bf16", "fp32"};

void add_all_dtypes(std::vector<CheckedProblem>& out, const std::vector<Problem>& problems) {
  for (const Problem& p : problems)
    for (const auto& dtype : kAllDtypes) out.emplace_back(p.to_string(), dtype);
}

std::string nvcc_release() {
  ProcessOptions options;
  options.timeout = std::chrono::seconds(30);
  try {
    const ProcessResult run = run_process({"nvcc", "--version"}, options);
    std::smatch match;
    if (run.ok() && std::regex_search(run.output, match, std::regex(R"(release (\d+\.\d+))")))
      return match[1];
  } catch (const Error&) {
  }
  return "";
}

}  // namespace

std::vector<CheckedProblem> harness_problems(const PlanKernel& kernel, bool quick) {
  const StageProblems stages = find_op(kernel.op).stage_problems();
  std::vector<CheckedProblem> all = {{stages.smoke.to_string(), kernel.dtype}, {kernel.shape, kernel.dtype}};
  if (!quick) {
    add_all_dtypes(all, stages.sweep);
    add_all_dtypes(all, stages.stability);
    add_all_dtypes(all, stages.edge);
  }
  std::set<CheckedProblem> seen;
  std::vector<CheckedProblem> unique;
  for (auto& p : all)
    if (seen.insert(p).second) unique.push_back(std::move(p));
  return unique;
}

BuildInfo build_info(Backend backend) {
  BuildInfo info{backend, "", ""};
  const DeviceInfo device = make_runtime(backend)->info();  // released before any Python runs
  if (backend == Backend::Cuda) {
    info.arch = device.arch;
    info.cuda = nvcc_release();
  } else {
    info.arch = "host:" + device.name;  // host modules are built with -march=native: for this CPU
  }
  return info;
}

nlohmann::json kernel_manifest(const BuildInfo& built, const std::vector<ManifestEntry>& entries,
                               const std::function<std::string(const ManifestEntry&)>& module_path) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const ManifestEntry& e : entries) {
    nlohmann::json checked = nlohmann::json::array();
    for (const auto& [problem, dtype] : e.checked) checked.push_back({problem, dtype});
    kernels.push_back({{"name", e.module.kernel.name},
                       {"op", e.module.kernel.op},
                       {"problem", e.module.kernel.shape},
                       {"dtype", e.module.kernel.dtype},
                       {"source", e.module.kernel.file},
                       {"config", e.module.config},
                       {"module", module_path(e)},
                       {"arch", built.arch},
                       {"use", e.use},
                       {"why", e.why},
                       {"best_us", e.best_us},
                       {"checked", checked}});
  }
  nlohmann::json built_with = {{"backend", std::string(to_string(built.backend))},
                               {"arch", built.arch},
                               {"abi_version", AK_ABI_VERSION}};
  if (!built.cuda.empty()) built_with["cuda"] = built.cuda;
  return {{"format", kManifestFormat}, {"built_with", built_with}, {"kernels", kernels}};
}

std::map<std::string, std::pair<bool, std::string>> verify_decisions(const std::filesystem::path& ws) {
  if (!std::filesystem::exists(ws / "verify.json")) return {};
  return verify_decisions(nlohmann::json::parse(read_text_file(ws / "verify.json"), nullptr, false));
}

std::map<std::string, std::pair<bool, std::string>> verify_decisions(const nlohmann::json& v) {
  std::map<std::string, std::pair<bool, std::string>> decisions;
  if (v.is_discarded() || !v.contains("kernels")) return decisions;
  const std::string mode = v.value("decide_mode", std::string("eager"));
  for (const auto& k : v["kernels"])
    if (k.contains("decisions") && k["decisions"].contains(mode))
      decisions[k["name"]] = {k["decisions"][mode]["in"].get<bool>(),
                              "verify, " + mode + ": " + k["decisions"][mode]["why"].get<std::string>()};
  return decisions;
}

}  // namespace ak
