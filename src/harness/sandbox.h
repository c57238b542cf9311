// The launcher's sandbox: a seccomp filter on the process that runs a kernel module's host code.
// The verdict does not depend on it (the judge is another process and reads the outputs itself),
// but it closes the ways a kernel could reach that process or the world outside its own: other
// processes (ptrace, their memory, signals), new processes and threads (work that escapes the
// timed launch), sockets, writes to files, and, once the module is loaded, opening any file.
// A forbidden call ends the process with a line naming it (kSandboxExit).
#pragma once

#include <string>
#include <vector>

namespace ak {

// The launcher's exit code after the sandbox stopped a forbidden call; its stderr then ends with
// "sandbox: <what>".
inline constexpr int kSandboxExit = 97;

enum class SandboxPhase {
  // Before the module is loaded: the dynamic loader may still open files to read them (the
  // module, its libraries), nothing else of the list below.
  Load,
  // After: no file may be opened at all.
  Run,
};

// One forbidden system call and why (the line a violation prints).
struct SandboxRule {
  std::string call;
  std::string why;
};

// The rules of a phase, for the documentation and the tests.
std::vector<SandboxRule> sandbox_rules(SandboxPhase phase);

// Installs the phase's filter on every thread of this process (filters only add up: Run keeps
// Load's rules) and the SIGSYS handler that reports a violation. Throws Error(Unsupported) when
// the kernel refuses seccomp filters.
void enter_sandbox(SandboxPhase phase);

}  // namespace ak
