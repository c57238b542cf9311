#include "profile/plan_modules.h"

#include "core/error.h"
#include "core/paths.h"
#include "runtime/compiler.h"
#include "search/tune_space.h"

namespace ak {

Backend backend_of_kernel(const std::filesystem::path& file) {
  const auto ext = file.extension();
  if (ext == ".cu" || ext == ".py") return Backend::Cuda;  // a Triton .py kernel runs on the CUDA device
  if (ext == ".cpp" || ext == ".cc") return Backend::Host;
  throw Error(ErrorKind::Usage,
              "kernel " + file.string() + ": not a CUDA (.cu), Triton (.py) or host (.cpp) kernel");
}

std::vector<PlanModule> build_plan_modules(const std::filesystem::path& workspace, const Plan& plan,
                                           Backend backend, const std::string& arch) {
  std::vector<PlanModule> modules;
  for (const PlanKernel& k : plan.kernels) {
    const auto source = workspace / k.file;
    if (backend_of_kernel(source) != backend)
      throw Error(ErrorKind::Usage, "kernel " + k.file + " is not a " + std::string(to_string(backend)) +
                                        " kernel; extract again with --backend " +
                                        std::string(to_string(backend)));
    const auto config_file = source.parent_path() / "config";
    std::string text = std::filesystem::exists(config_file) ? read_text_file(config_file) : "";
    text.erase(text.find_last_not_of(" \n\r\t") + 1);
    const Config config =
        text.empty() ? Config{} : parse_config(text, parse_tune_space(read_text_file(source)));
    const BuildResult built = build_module({source, config, backend, arch});
    modules.push_back({k, to_string(config), built.module});
  }
  return modules;
}

}  // namespace ak
