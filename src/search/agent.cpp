#include "search/agent.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"

namespace ak {
namespace fs = std::filesystem;
namespace {

// The prompt as a file of its own in the temporary directory, removed on destruction. It lives
// outside the kernel's directory so that nothing watching that directory (a git status, an
// agent's own change tracking) takes it for part of the kernel.
class PromptFile {
 public:
  explicit PromptFile(std::string_view text) {
    std::string pattern = (fs::temp_directory_path() / "autokernel-prompt-XXXXXX.md").string();
    const int fd = ::mkstemps(pattern.data(), 3);
    if (fd < 0)
      throw Error(ErrorKind::Io,
                  "cannot create the agent's prompt file: " + std::string(std::strerror(errno)));
    ::close(fd);
    path_ = pattern;
    try {
      write_file_atomically(path_, text);
    } catch (...) {
      remove();  // the destructor does not run for a constructor that throws
      throw;
    }
  }
  ~PromptFile() { remove(); }
  PromptFile(const PromptFile&) = delete;
  PromptFile& operator=(const PromptFile&) = delete;
  const fs::path& path() const { return path_; }

 private:
  void remove() noexcept {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  fs::path path_;
};

// The kernel's bytes, or nothing when the file is gone or unreadable.
std::optional<std::string> try_read(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  try {
    return read_text_file(path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string describe_run(const ProcessResult& run) {
  const std::string tail = run.tail(3);
  return tail.empty() ? run.describe() : run.describe() + ": " + tail;
}

// What the run did to the kernel, given how the process ended and what the file holds now.
AgentOutcome judge(const ProcessResult& run, const std::optional<std::string>& now,
                   const std::string& before) {
  AgentOutcome outcome;
  outcome.seconds = run.seconds;
  outcome.detail = describe_run(run);
  if (run.timed_out) {
    outcome.status = AgentStatus::Timeout;
  } else if (!run.ok()) {
    outcome.status = AgentStatus::Failed;
  } else if (!now) {
    outcome.status = AgentStatus::Failed;
    outcome.detail = "the kernel file was deleted or is unreadable (" + outcome.detail + ")";
  } else {
    outcome.status = *now == before ? AgentStatus::Unchanged : AgentStatus::Edited;
  }
  return outcome;
}

}  // namespace

std::string to_string(AgentStatus status) {
  switch (status) {
    case AgentStatus::Edited: return "edited";
    case AgentStatus::Unchanged: return "unchanged";
    case AgentStatus::Failed: return "failed";
    case AgentStatus::Timeout: return "timeout";
  }
  return "unknown";
}

AgentOutcome run_agent(const AgentTask& task) {
  const fs::path kernel = fs::absolute(task.kernel);
  const std::string before = read_text_file(kernel);
  const PromptFile prompt(task.prompt);

  ProcessOptions options;
  options.timeout = task.timeout;
  options.cwd = kernel.parent_path();
  options.stdin_file = prompt.path();
  options.env = {{"AUTOKERNEL_PROMPT", prompt.path().string()},
                 {"AUTOKERNEL_KERNEL", kernel.string()},
                 {"AUTOKERNEL_OP", task.op}};
  const ProcessResult run = run_process({"/bin/sh", "-c", task.command}, options);

  const std::optional<std::string> now = try_read(kernel);
  AgentOutcome outcome = judge(run, now, before);
  const bool keep = outcome.status == AgentStatus::Edited || outcome.status == AgentStatus::Unchanged;
  if (!keep && now != before) write_file_atomically(kernel, before);
  return outcome;
}

}  // namespace ak
