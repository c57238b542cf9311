// Running a command we do not trust (an agent's, which a language model rewarded for speed may
// drive) confined by python/autokernel_sandbox: files read-only except beneath the directories
// named, TCP open (an agent reaches its model's API), no signal to a process outside.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ak {

struct ConfinedCommand {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // to add to the child's environment
};

// `/bin/sh -c command` confined to write only beneath `writable` and the directories listed in
// $AUTOKERNEL_AGENT_WRITABLE (colon-separated: an agent's own state, e.g. ~/.claude), with TMPDIR
// set to `scratch` (made writable too). Plain `/bin/sh -c command` when AUTOKERNEL_UNCONFINED=1.
// Throws Error(Unsupported) when no Python is there to confine it.
ConfinedCommand confined_shell(const std::string& command, std::vector<std::filesystem::path> writable,
                               const std::filesystem::path& scratch);

}  // namespace ak
