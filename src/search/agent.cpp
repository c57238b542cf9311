#include "search/agent.h"

#include <optional>
#include <system_error>

#include "core/error.h"
#include "core/paths.h"
#include "core/sandbox.h"
#include "core/subprocess.h"

namespace ak {
namespace fs = std::filesystem;
namespace {

// The agent's scratch directory in the temporary directory, holding the prompt (prompt.md), and
// its TMPDIR: the confined agent may write there and in the kernel's directory alone. Removed
// on destruction. It lives outside the kernel's directory so that nothing watching that
// directory (a git status, an agent's own change tracking) takes the prompt for part of the kernel.
class AgentScratch {
 public:
  explicit AgentScratch(std::string_view prompt) : dir_("autokernel-agent") {
    write_file_atomically(prompt_path(), prompt);
  }
  const fs::path& dir() const { return dir_.path(); }
  fs::path prompt_path() const { return dir() / "prompt.md"; }

 private:
  TempDirectory dir_;
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
  const AgentScratch scratch(task.prompt);
  const ConfinedCommand confined = confined_shell(task.command, {kernel.parent_path()}, scratch.dir());

  ProcessOptions options;
  options.timeout = task.timeout;
  options.cwd = kernel.parent_path();
  options.stdin_file = scratch.prompt_path();
  options.env = {{"AUTOKERNEL_PROMPT", scratch.prompt_path().string()},
                 {"AUTOKERNEL_KERNEL", kernel.string()},
                 {"AUTOKERNEL_OP", task.op}};
  options.env.insert(options.env.end(), confined.env.begin(), confined.env.end());
  const ProcessResult run = run_process(confined.argv, options);

  const std::optional<std::string> now = try_read(kernel);
  AgentOutcome outcome = judge(run, now, before);
  const bool keep = outcome.status == AgentStatus::Edited || outcome.status == AgentStatus::Unchanged;
  if (!keep && now != before) write_file_atomically(kernel, before);
  return outcome;
}

}  // namespace ak
