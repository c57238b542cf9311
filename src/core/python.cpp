#include "core/python.h"

#include <cstdlib>
#include <iostream>

#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"

namespace ak {
namespace {

bool runs(const std::string& python, const std::string& code) {
  ProcessOptions options;
  options.timeout = std::chrono::seconds(120);  // a first import of matplotlib builds its font cache
  try {
    return run_process({python, "-c", code}, options).ok();
  } catch (const Error&) {
    return false;  // no such interpreter
  }
}

// The bridge traces models with torch.export and registers torch.library custom ops: torch >= 2.5.
// Read from the installed package's metadata, not by importing torch (seconds of every core, paid
// again by the bridge itself); a torch that is installed but fails to import is the bridge's error.
constexpr const char* kBridgeCheck =
    "import re, sys; from importlib.metadata import version; "
    "sys.exit(tuple(int(v) for v in re.findall(r'\\d+', version('torch'))[:2]) < (2, 5))";

// The bridge's own reason: its last "autokernel: ..." line (the rest is progress).
std::string bridge_reason(const ProcessResult& run) {
  const std::string_view prefix = "autokernel: ";
  std::string reason;
  size_t start = 0;
  while (start < run.output.size()) {
    const size_t end = std::min(run.output.find('\n', start), run.output.size());
    const std::string_view line(run.output.data() + start, end - start);
    if (line.starts_with(prefix)) reason = line.substr(prefix.size());
    start = end + 1;
  }
  return reason.empty() ? "the model bridge failed (" + run.describe() + "): " + run.tail(2) : reason;
}

}  // namespace

std::optional<std::string> find_python_running(const std::string& code, std::string& tried) {
  // The project's own environment first (scripts/install-python.sh): a current PyTorch from PyPI.
  const std::string venv = (project_dir() / ".venv" / "bin" / "python").string();
  std::vector<std::string> candidates = {venv, "python3", "/usr/bin/python3"};
  tried = venv + ", python3, /usr/bin/python3";
  if (const char* env = std::getenv("AUTOKERNEL_PYTHON"); env && *env) {
    candidates = {env};
    tried = std::string("AUTOKERNEL_PYTHON=") + env;
  }
  for (const auto& python : candidates)
    if (runs(python, code)) return python;
  return std::nullopt;
}

std::optional<std::string> find_python(std::string_view module, std::string& tried) {
  // Found, not imported: importing torch or ray takes seconds, and the caller's Python imports it.
  return find_python_running(
      "import importlib.util, sys; sys.exit(importlib.util.find_spec('" + std::string(module) + "') is None)",
      tried);
}

void run_bridge(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  std::string tried;
  const auto python = find_python_running(kBridgeCheck, tried);
  if (!python)
    throw Error(ErrorKind::Unsupported,
                "no Python with PyTorch >= 2.5 (tried " + tried +
                    "); make the project's environment (scripts/install-python.sh) or set AUTOKERNEL_PYTHON");
  const auto package_root = project_dir() / "python";
  std::string path = package_root.string();
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing)
    path.append(":").append(existing);
  ProcessOptions options;
  options.timeout = timeout;
  // The CLI loads its own kernels eagerly (main.cpp); PyTorch would load all of its own the same way.
  // The profiler's own library (Kineto) logs every start and stop on stderr unless told not to.
  options.env = {{"PYTHONPATH", path},
                 {"PYTHONUNBUFFERED", "1"},
                 {"CUDA_MODULE_LOADING", "LAZY"},
                 {"KINETO_LOG_LEVEL", "5"}};
  options.on_line = [](std::string_view line) { std::cerr << line << std::endl; };
  std::vector<std::string> argv = {*python, "-m", "autokernel"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult run = run_process(argv, options);
  if (run.timed_out)
    throw Error(ErrorKind::Timeout, "the model bridge (" + args.front() + ") " + run.describe());
  if (!run.ok()) throw Error(run.exit_code == 2 ? ErrorKind::Usage : ErrorKind::Io, bridge_reason(run));
}

std::future<void> start_bridge(std::vector<std::string> args, std::chrono::seconds timeout) {
  return std::async(std::launch::async, [args = std::move(args), timeout] { run_bridge(args, timeout); });
}

}  // namespace ak
