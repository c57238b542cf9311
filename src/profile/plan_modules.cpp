#include "profile/plan_modules.h"

#include <future>
#include <map>

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
  // All at once, each distinct source and configuration once (a model's matmul shapes share one
  // file): a compiler is one core's work, and verify's budget counts these builds (GPT-2's five
  // kernels one after another took 71 of its 132 s on the GPU machine). Every build is waited for
  // before a failure is rethrown (an early throw waits in the futures' destructors).
  std::map<std::string, std::shared_future<BuildResult>> distinct;
  std::vector<std::shared_future<BuildResult>> builds;
  std::vector<std::string> configs;
  for (const PlanKernel& k : plan.kernels) {
    const auto source = workspace / k.file;
    if (backend_of_kernel(source) != backend)
      throw Error(ErrorKind::Usage, "kernel " + k.file + " is not a " + std::string(to_string(backend)) +
                                        " kernel; extract again with --backend " +
                                        std::string(to_string(backend)));
    const std::string code = read_text_file(source);
    const auto config_file = source.parent_path() / "config";
    std::string text = std::filesystem::exists(config_file) ? read_text_file(config_file) : "";
    text.erase(text.find_last_not_of(" \n\r\t") + 1);
    const Config config = text.empty() ? Config{} : parse_config(text, parse_tune_space(code));
    configs.push_back(to_string(config));
    auto [it, added] = distinct.try_emplace(code + '\0' + configs.back());
    if (added)
      it->second =
          std::async(std::launch::async, build_module, BuildRequest{source, config, backend, arch}).share();
    builds.push_back(it->second);
  }
  for (auto& b : builds) b.wait();
  std::vector<PlanModule> modules;
  for (size_t i = 0; i < builds.size(); ++i)
    modules.push_back({plan.kernels[i], configs[i], builds[i].get().module});
  return modules;
}

}  // namespace ak
