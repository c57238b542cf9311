// `autokernel kernelbench`: what its subcommands share. The judge, the problem loader and the
// mapping are Python (python/autokernel/kernelbench: PyTorch runs the references), started here
// as `python -m autokernel.kernelbench ...`; the decisions around them (building our kernels,
// the loop, fast_p, the tables) are C++.
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ak::cli::kb {

// --dir, else $AUTOKERNEL_KERNELBENCH, else the project's copy (../shared/kernelbench beside it).
std::string problems_dir(const std::string& given);

// This process becomes non-dumpable (prctl PR_SET_DUMPABLE 0): a solution process, which runs as
// the same user, cannot ptrace it or open its /proc/<pid>/fd to write into the pipe the judge's
// record arrives on.
void make_undumpable();

// Runs `python -m autokernel.kernelbench ARGS` in the project's Python (the one with PyTorch) and
// returns its record (the `autokernel-record: <json>` line). Its progress goes to stderr when
// `progress` is set. Throws Error(Usage) for its exit code 2 (bad input), Error(Timeout) past
// `timeout`, Error(Io) otherwise, each with the bridge's own one-line reason.
nlohmann::json run_python(const std::vector<std::string>& args, std::chrono::seconds timeout, bool progress);

// Options of one evaluation, as the judge's command line takes them.
struct EvalSettings {
  std::string device = "auto", precision = "fp32", baselines = "eager,compile";
  // kernelbench: its allclose and our relative error; model: the relative error alone (verify's)
  std::string criterion = "kernelbench";
  std::string solution_mode = "eager";  // or the torch.compile mode the solution is timed in
  std::string compile_mode;             // the compile baseline's mode ("": torch.compile's default)
  int trials = 5;
  int min_rounds = 10;  // timing rounds at least, per model
  int shrink = 1;       // the problems' size constants divided by this (a quick run of the real files)
  double max_time_s = 5, call_timeout_s = 60, build_timeout_s = 600;
  bool timing = true;
  int timeout_s = 3600;  // the whole evaluation

  std::vector<std::string> arguments() const;
};

// One judged evaluation of `solution` on `problem` (a path, or level1/23_Softmax.py under `dir`).
nlohmann::json evaluate(const std::string& dir, const std::string& problem,
                        const std::filesystem::path& solution, const EvalSettings& settings, bool progress);

// A record for an evaluation that never produced one (the judge itself died or timed out, the
// agent wrote no solution): the status and its reason, in the record's shape.
nlohmann::json failed_record(const nlohmann::json& problem, const std::string& solution,
                             const std::string& status, const std::string& reason);

// Writes a document as indented JSON (atomically).
void write_json(const std::filesystem::path& path, const nlohmann::json& document);

}  // namespace ak::cli::kb
