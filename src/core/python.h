// Python, for the parts of autokernel whose ecosystem is Python: the model bridge
// (python/autokernel: profile and verify with PyTorch) and the progress plot (matplotlib).
#pragma once

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ak {

// $AUTOKERNEL_PYTHON when set (a user's choice is not second-guessed), else the first of
// python3 and /usr/bin/python3 that has `module` (found, not imported): a pyenv or venv python3 often lacks a
// package that the system one has from Debian. `tried` names the candidates, for the error.
std::optional<std::string> find_python(std::string_view module, std::string& tried);

// The same search, for the first Python in which `code` runs without an error.
std::optional<std::string> find_python_running(const std::string& code, std::string& tried);

// Runs `python -m autokernel ARGS` (the bridge, with python/ of the project on PYTHONPATH) in a
// Python that has PyTorch >= 2.5 (torch.export, torch.library's fake and autograd registration).
// Its progress lines go to stderr as they come. Throws Error(Unsupported) when no Python has such
// a PyTorch, Error(Timeout) past `timeout`, and otherwise, when it fails, an error carrying the
// bridge's own one-line reason: Usage for its exit code 2, Io for the rest.
void run_bridge(const std::vector<std::string>& args, std::chrono::seconds timeout);

// The same, started on a thread of its own: the future holds what run_bridge would have thrown.
// Its destructor waits for the bridge (which `timeout` bounds).
std::future<void> start_bridge(std::vector<std::string> args, std::chrono::seconds timeout);

}  // namespace ak
