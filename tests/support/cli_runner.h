// Runs the autokernel CLI built beside the tests, as a user would, and reads its JSON.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/subprocess.h"

namespace ak::test {

inline std::string kernel(const std::string& name) {
  return std::string(AK_TEST_KERNELS) + "/" + name;
}

// The scratch directories this test process made, removed when it ends (each ctest test is a
// process of its own), whether or not the test got to remove them itself.
class ScratchDirectories {
 public:
  ~ScratchDirectories() {
    for (const auto& dir : dirs_) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
  void add(const std::filesystem::path& dir) { dirs_.push_back(dir); }

 private:
  std::vector<std::filesystem::path> dirs_;
};

inline ScratchDirectories& scratch_directories() {
  static ScratchDirectories directories;
  return directories;
}

// The scratch directories of test processes that no longer run: one killed before its end (a
// ctest timeout, an interrupted run) never got to remove its own.
inline void remove_dead_processes_scratch(const std::filesystem::path& temp) {
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(temp, ignored)) {
    const std::string name = entry.path().filename().string();
    const auto mark = name.rfind("-pid");
    if (!name.starts_with("autokernel-test-") || mark == std::string::npos) continue;
    const std::string digits = name.substr(mark + 4);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (::kill(static_cast<pid_t>(std::stol(digits)), 0) != 0 && errno == ESRCH)
      std::filesystem::remove_all(entry.path(), ignored);
  }
}

// A fresh directory per test process and name: ctest runs tests in parallel processes. The
// directories of dead processes are removed once per process, at its first.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto temp = std::filesystem::temp_directory_path();
  static const bool swept = (remove_dead_processes_scratch(temp), true);
  (void)swept;
  auto dir = temp / ("autokernel-test-" + name + "-pid" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  scratch_directories().add(dir);
  return dir;
}

// A directory for a scripted agent's own state (its call counter). The engine confines an agent
// to its kernel's directory (core/sandbox.h); this one is added, through AUTOKERNEL_AGENT_WRITABLE,
// while the object lives, as a user adds an agent's own state directory.
class AgentStateDir {
 public:
  explicit AgentStateDir(const std::string& name) : dir_(scratch_dir(name)) {
    ::setenv("AUTOKERNEL_AGENT_WRITABLE", dir_.c_str(), 1);
  }
  ~AgentStateDir() { ::unsetenv("AUTOKERNEL_AGENT_WRITABLE"); }
  AgentStateDir(const AgentStateDir&) = delete;
  AgentStateDir& operator=(const AgentStateDir&) = delete;
  std::filesystem::path file(const std::string& name) const { return dir_ / name; }

 private:
  std::filesystem::path dir_;
};

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

// `autokernel bench ARGS --json`, its results in a scratch directory: the JSON document it
// printed; `run`, where given, gets the process's exit code and output.
inline nlohmann::json bench_json(std::vector<std::string> args, int timeout_s = 300,
                                 std::vector<std::pair<std::string, std::string>> env = {},
                                 ProcessResult* run = nullptr) {
  const auto dir = scratch_dir("bench");
  args.insert(args.begin(), {AK_CLI_PATH, "bench"});
  args.insert(args.end(), {"--json", "--results", (dir / "results.tsv").string()});
  ProcessOptions options;
  options.timeout = std::chrono::seconds(timeout_s);
  options.env = std::move(env);
  ProcessResult result = run_process(args, options);
  std::filesystem::remove_all(dir);
  auto j = json_of(result);
  if (run) *run = std::move(result);
  return j;
}

}  // namespace ak::test
