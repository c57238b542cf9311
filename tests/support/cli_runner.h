// Runs the autokernel CLI built beside the tests, as a user would, and reads its JSON.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/subprocess.h"

namespace ak::test {

inline std::string kernel(const std::string& name) {
  return std::string(AK_TEST_KERNELS) + "/" + name;
}

// A fresh directory per test process and name: ctest runs tests in parallel processes.
inline std::filesystem::path scratch_dir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("autokernel-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline ProcessResult run_cli(std::vector<std::string> args, int timeout_s = 300) {
  args.insert(args.begin(), AK_CLI_PATH);
  ProcessOptions options;
  options.timeout = std::chrono::seconds(timeout_s);
  return run_process(args, options);
}

// The JSON document a --json command printed (stderr progress lines before it are skipped).
inline nlohmann::json json_of(const ProcessResult& run) {
  const size_t start = run.output.find('{');
  if (start == std::string::npos) return nlohmann::json::object();
  return nlohmann::json::parse(run.output.substr(start), nullptr, false);
}

}  // namespace ak::test
