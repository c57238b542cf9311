// Child processes with a wall-clock limit. The child gets its own process group, so a timeout
// kills it and everything it started; the RAII handle never leaves a child behind.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ak {

struct ProcessOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::filesystem::path cwd;                           // empty: inherit
  std::function<void(std::string_view line)> on_line;  // each output line as it arrives
  size_t max_output = 1 << 20;                         // bytes of output kept
};

struct ProcessResult {
  int exit_code = -1;      // valid when term_signal == 0 and !timed_out
  int term_signal = 0;     // the signal that ended it, if any
  bool timed_out = false;  // killed by us at the limit
  std::string output;      // stdout and stderr interleaved (truncated to max_output)
  double seconds = 0;

  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  std::string describe() const;          // "exit 1", "killed by SIGSEGV", "timed out after 5.0 s"
  std::string tail(size_t lines) const;  // the last non-empty output lines, joined by " | "
};

// Runs argv[0] (searched in PATH) with the given arguments. Throws Error(Io) only when the
// process cannot be started at all.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

}  // namespace ak
