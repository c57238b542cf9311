#include "cli/kernelbench_bridge.h"

#include <sys/prctl.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "core/subprocess.h"

namespace ak::cli::kb {
namespace {

constexpr std::string_view kRecordPrefix = "autokernel-record: ";
constexpr std::string_view kReasonPrefix = "autokernel: ";

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

std::string problems_dir(const std::string& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("AUTOKERNEL_KERNELBENCH"); env && *env) return env;
  return (project_dir().parent_path() / "shared" / "kernelbench").string();
}

void make_undumpable() {
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

namespace {

// The Python with PyTorch, found once per process: finding it imports torch in each candidate,
// which costs as much as a judge's own start, and a run calls the judge once per problem.
const std::string& python_with_torch() {
  static const std::string python = [] {
    std::string tried;
    const auto found = find_python("torch", tried);
    if (!found)
      throw Error(ErrorKind::Unsupported, "no Python with PyTorch (tried " + tried +
                                              "); run scripts/install-python.sh or set AUTOKERNEL_PYTHON");
    return *found;
  }();
  return python;
}

}  // namespace

nlohmann::json run_python(const std::vector<std::string>& args, std::chrono::seconds timeout, bool progress) {
  const std::string& python = python_with_torch();
  std::string path = (project_dir() / "python").string();
  if (const char* existing = std::getenv("PYTHONPATH"); existing && *existing)
    path.append(":").append(existing);
  ProcessOptions options;
  options.timeout = timeout;
  options.max_output = 64 << 10;  // the reason is in the last lines; the record is taken line by line
  options.env = {{"PYTHONPATH", path}, {"PYTHONUNBUFFERED", "1"}, {"CUDA_MODULE_LOADING", "LAZY"}};
  std::string record, reason;
  options.on_line = [&](std::string_view line) {
    if (line.starts_with(kRecordPrefix)) {
      record = line.substr(kRecordPrefix.size());
      return;
    }
    if (line.starts_with(kReasonPrefix)) reason = line.substr(kReasonPrefix.size());
    if (progress) std::cerr << line << std::endl;
  };
  std::vector<std::string> argv = {python, "-m", "autokernel.kernelbench"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult run = run_process(argv, options);
  const std::string what = "the KernelBench judge (" + args.front() + ")";
  if (run.timed_out) throw Error(ErrorKind::Timeout, what + " " + run.describe());
  if (!run.ok()) {
    if (run.term_signal != 0 || reason.empty())
      throw Error(ErrorKind::Io, what + " " + run.describe() + (reason.empty() ? ": " + run.tail(2) : ""));
    throw Error(run.exit_code == 2 ? ErrorKind::Usage : ErrorKind::Io, reason);
  }
  if (record.empty()) throw Error(ErrorKind::Io, what + " finished without a record: " + run.tail(2));
  try {
    return nlohmann::json::parse(record);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Io, what + " wrote a record that is not JSON: " + e.what());
  }
}

std::vector<std::string> EvalSettings::arguments() const {
  std::vector<std::string> args = {"--device",        device,
                                   "--precision",     precision,
                                   "--baselines",     baselines,
                                   "--trials",        std::to_string(trials),
                                   "--max-time",      number(max_time_s),
                                   "--call-timeout",  number(call_timeout_s),
                                   "--build-timeout", number(build_timeout_s),
                                   "--shrink",        std::to_string(shrink),
                                   "--min-rounds",    std::to_string(min_rounds)};
  if (!timing) args.push_back("--no-timing");
  if (criterion != "kernelbench") args.insert(args.end(), {"--criterion", criterion});
  if (solution_mode != "eager") args.insert(args.end(), {"--solution-mode", solution_mode});
  if (!compile_mode.empty()) args.insert(args.end(), {"--compile-mode", compile_mode});
  return args;
}

nlohmann::json evaluate(const std::string& dir, const std::string& problem,
                        const std::filesystem::path& solution, const EvalSettings& settings, bool progress) {
  std::vector<std::string> args = {"eval",       "--dir",          dir, "--problem", problem,
                                   "--solution", solution.string()};
  const auto rest = settings.arguments();
  args.insert(args.end(), rest.begin(), rest.end());
  return run_python(args, std::chrono::seconds(settings.timeout_s), progress);
}

nlohmann::json failed_record(const nlohmann::json& problem, const std::string& solution,
                             const std::string& status, const std::string& reason) {
  return {{"problem", problem},
          {"solution", solution},
          {"status", status},
          {"reason", reason},
          {"phase", "judge"},
          {"timing", nlohmann::json::object()},
          {"speedup", nlohmann::json::object()}};
}

void write_json(const std::filesystem::path& path, const nlohmann::json& document) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  write_file_atomically(path, document.dump(1) + "\n");
}

}  // namespace ak::cli::kb
