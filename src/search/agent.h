// The agent proposer: runs a user's command (a coding-agent CLI, or any script) that edits one
// kernel file. The engine writes a prompt file — the playbook, the current kernel, its last
// harness report, the history of experiments — and runs the command through /bin/sh in the
// kernel's directory, with a time limit. The agent only edits; the engine, never the agent,
// compiles, checks, times and decides, and restores the file when the edit is not kept.
//
// The command sees these environment variables:
//   AUTOKERNEL_PROMPT   the prompt file (also on the command's stdin)
//   AUTOKERNEL_KERNEL   the kernel file to edit
//   AUTOKERNEL_OP       the operator's name
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace ak {

struct AgentHistoryItem {
  int experiment = 0;
  std::string status;    // PASS, FAIL, COMPILE_ERROR, ...
  std::string decision;  // kept, reverted, failed
  double median_us = 0;
  std::string note;  // reason, or the config
};

struct AgentContext {
  std::string op;
  std::string problem;  // "8192x8192"
  std::string dtype;    // "fp16"
  std::filesystem::path kernel;
  std::string playbook;                   // text of docs/playbook.md
  std::string last_report;                // the engine's report on the current kernel (text)
  double best_us = 0;                     // current best time (0: none yet)
  double roofline_fraction = 0;           // of the current best
  std::vector<AgentHistoryItem> history;  // oldest first; the prompt keeps the latest
};

// How many of the latest experiments the prompt's history table shows.
inline constexpr size_t kAgentPromptHistory = 20;

// The prompt text (Markdown): what the agent is asked to do, the rules (edit only the kernel
// file, keep the ABI, no work off the given stream), and the context above, with the kernel's
// current source read from context.kernel. Throws Error(Io) when the kernel cannot be read.
std::string agent_prompt(const AgentContext& context);

struct AgentTask {
  std::string command;           // run as /bin/sh -c COMMAND
  std::filesystem::path kernel;  // the file the agent may edit; its directory is the cwd
  std::string prompt;
  std::chrono::seconds timeout{600};
  // The operator's name, for AUTOKERNEL_OP. Last and with {}, so initializers that predate it
  // (four fields) still compile without a missing-initializer warning.
  std::string op{};
};

enum class AgentStatus { Edited, Unchanged, Failed, Timeout };
std::string to_string(AgentStatus status);  // edited, unchanged, failed, timeout

struct AgentOutcome {
  AgentStatus status = AgentStatus::Failed;
  std::string detail;  // one line: exit status and the output's last lines
  double seconds = 0;
};

// Runs the agent. The prompt goes to a temporary file outside the kernel's directory (removed
// afterwards), which is also the command's stdin. The kernel file is Edited when the command
// exits 0 and the file's bytes changed. Failed: a non-zero exit, a signal, or the kernel deleted;
// Timeout: still running at task.timeout, when the command and everything it started are
// killed. On Failed or Timeout the file is restored, atomically, to what it was before the run
// (a half-written edit never reaches the build). Throws Error(Io) only when the prompt cannot be
// written, the kernel cannot be read beforehand or restored afterwards, or the shell cannot start.
AgentOutcome run_agent(const AgentTask& task);

}  // namespace ak
