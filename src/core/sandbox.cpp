#include "core/sandbox.h"

#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"

namespace ak {
namespace fs = std::filesystem;
namespace {

std::vector<fs::path> extra_writable() {
  std::vector<fs::path> dirs;
  const char* list = std::getenv("AUTOKERNEL_AGENT_WRITABLE");
  if (!list) return dirs;
  std::istringstream in(list);
  for (std::string dir; std::getline(in, dir, ':');)
    if (!dir.empty()) dirs.emplace_back(dir);
  return dirs;
}

// Runs the sandbox's main with its package on sys.path but not on PYTHONPATH, which the
// command would inherit.
constexpr const char* kSandboxMain =
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from autokernel_sandbox.__main__ import main; "
    "sys.exit(main(sys.argv[1:]))";

}  // namespace

ConfinedCommand confined_shell(const std::string& command, std::vector<fs::path> writable,
                               const fs::path& scratch) {
  ConfinedCommand confined;
  confined.env = {{"TMPDIR", scratch.string()}};
  const char* trusted = std::getenv("AUTOKERNEL_UNCONFINED");
  if (trusted && std::string(trusted) == "1") {
    confined.argv = {"/bin/sh", "-c", command};
    return confined;
  }
  // Looked up once per process: the loop starts an agent per proposal, and each lookup starts
  // an interpreter.
  static const auto [python, tried] = [] {
    std::string candidates;
    auto found = find_python_running("import ctypes", candidates);
    return std::pair(found, candidates);
  }();
  if (!python)
    throw Error(ErrorKind::Unsupported, "no Python to confine the agent command with (tried " + tried +
                                            "); AUTOKERNEL_UNCONFINED=1 runs it unconfined");
  writable.push_back(scratch);
  for (auto& dir : extra_writable()) writable.push_back(std::move(dir));
  confined.argv = {*python, "-c", kSandboxMain, (project_dir() / "python").string(), "--network"};
  for (const auto& dir : writable) {
    confined.argv.push_back("--write");
    confined.argv.push_back(fs::absolute(dir).string());
  }
  confined.argv.insert(confined.argv.end(), {"--", "/bin/sh", "-c", command});
  return confined;
}

}  // namespace ak
