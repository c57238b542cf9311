#include "cli/verify_judged.h"

#include <iostream>

#include "cli/kernelbench_bridge.h"
#include "cli/print.h"
#include "core/error.h"
#include "core/paths.h"

namespace ak::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A Python string literal of a path (JSON's escaping is Python's for these characters).
std::string python_string(const fs::path& path) {
  return json(path.string()).dump();
}

// The judge's problem, in a directory only this process wrote: the model as the profile describes
// it (read before any kernel ran) and the manifest as this process built it. Returns problem.py.
fs::path write_problem(const fs::path& dir, const Profile& profile, const json& manifest) {
  // verify's own Python found a relative model file from this process's directory, which it
  // inherits; the judge's processes run in directories of their own, where the same text names
  // nothing (H100, 2026-12-07: "model file not found: examples/hf_llama.py").
  write_file_atomically(dir / "model.json", json{{"spec", profile.model.spec_from(fs::current_path())},
                                                 {"input_shape", profile.model.input_shape},
                                                 {"dtype", profile.model.dtype},
                                                 {"seed", profile.model.seed},
                                                 {"device", profile.device_type}}
                                                .dump(1));
  write_file_atomically(dir / "kernels.json", manifest.dump(1));
  write_file_atomically(dir / "problem.py",
                        "from autokernel.kernelbench.model_problem import problem\n\n"
                        "Model, get_inputs, get_init_inputs = problem(" +
                            python_string(dir / "model.json") + ")\n");
  return dir / "problem.py";
}

// One run's ModelNew beside the problem: the model with the run's kernels applied.
fs::path write_solution(const fs::path& dir, const JudgedRun& run) {
  const fs::path solution = dir / ("solution_" + run.mode + ".py");
  write_file_atomically(solution,
                        "from autokernel.kernelbench.model_problem import solution\n\n"
                        "ModelNew = solution(" +
                            python_string(dir / "model.json") + ", " + python_string(dir / "kernels.json") +
                            ", " + json(run.kernels).dump() + ")\n");
  return solution;
}

std::string mode_label(const std::string& mode) {
  return mode == "eager" ? "eager" : "torch.compile " + mode;
}

}  // namespace

std::vector<JudgedRun> judged_runs(const std::vector<std::string>& plugged,
                                   const std::vector<std::string>& candidates, const std::string& decide_mode,
                                   double left_s, double compile_s) {
  constexpr double kTimedSeconds = 30;  // a run's processes, trials and timed rounds, on the H100's models
  if (plugged.empty())
    return candidates.empty() ? std::vector<JudgedRun>{}
                              : std::vector{JudgedRun{"eager", candidates, false, 5, false}};
  std::vector<JudgedRun> runs = {{"eager", plugged, left_s > kTimedSeconds, 5}};
  // compiled code is other code: checked again, timed against the reference compiled alike
  if (decide_mode != "eager" && left_s > 2 * kTimedSeconds + 2 * compile_s)
    runs.push_back({decide_mode, plugged, true, 2});
  return runs;
}

json judge_model(const Profile& profile, const json& manifest, const std::vector<JudgedRun>& runs,
                 double max_time_s, int timeout_s) {
  json judged = json::array();
  if (runs.empty()) return judged;
  kb::make_undumpable();  // the judge's record reaches this process through a pipe it holds
  const TempDirectory dir("autokernel-verify-judge");
  const fs::path problem = write_problem(dir.path(), profile, manifest);
  for (const JudgedRun& run : runs) {
    const fs::path solution = write_solution(dir.path(), run);
    kb::EvalSettings settings;
    settings.device = profile.device_type;
    settings.precision = profile.model.dtype;
    settings.criterion = "model";
    settings.solution_mode = run.mode;
    settings.baselines = run.mode == "eager" ? "eager" : "compile";
    if (run.mode != "eager") settings.compile_mode = run.mode;
    settings.trials = run.trials;
    settings.timing = run.timing;
    settings.max_time_s = max_time_s;
    settings.min_rounds = 5;
    settings.timeout_s = timeout_s;
    std::cerr << "autokernel: the judge: " << run.kernels.size() << " kernels, " << mode_label(run.mode)
              << "\n";
    json record;
    try {
      record = kb::evaluate(".", problem.string(), solution, settings, true);
    } catch (const Error& e) {
      record = kb::failed_record(json::object(), solution.string(), "ERROR", e.what());
    }
    judged.push_back(
        {{"mode", run.mode}, {"kernels", run.kernels}, {"plugged", run.plugged}, {"record", record}});
  }
  return judged;
}

void print_judged(std::ostream& out, const json& judged) {
  out << "\nthe judge (a process that loads no kernel: its own inputs, reference, clock and comparison; "
         "the model with our kernels in a confined process):\n";
  if (judged.empty()) {
    out << "(no kernel is a candidate: nothing to judge)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"", "kernels", "verdict", "relative error", "PyTorch", "ours", "speedup"}};
  for (const auto& run : judged) {
    const json& r = run["record"];
    const std::string status = r.value("status", std::string("ERROR"));
    const json correctness = r.value("correctness", json::object());
    std::string verdict =
        status == "PASS"
            ? "PASS, " + std::to_string(correctness.value("passed", 0)) + " trials"
            : status + " in " + r.value("phase", std::string()) + ": " + r.value("reason", std::string());
    const json timing = r.value("timing", json::object());
    const std::string base = run["mode"] == "eager" ? "eager" : "compile";
    const auto median = [&](const std::string& key) -> std::string {
      return timing.contains(key) && timing[key].contains("median_us")
                 ? microseconds(timing[key]["median_us"].get<double>()) + " µs"
                 : "-";
    };
    const json speedup = r.value("speedup", json::object());
    const bool timed = timing.contains("solution");
    rows.push_back(
        {mode_label(run["mode"]) + (timed ? "" : ", untimed"), std::to_string(run["kernels"].size()), verdict,
         correctness.contains("relative_error") ? scientific(correctness["relative_error"].get<double>())
                                                : "-",
         median(base), median("solution"),
         speedup.contains(base) ? fixed(speedup[base].get<double>(), 2, "x") : "-"});
  }
  print_table(out, rows, {false, true, false, true, true, true, true});
}

std::string judged_failure(const json& judged) {
  for (const auto& run : judged) {
    const json& r = run["record"];
    if (r.value("status", std::string()) == "PASS") continue;
    return mode_label(run["mode"]) + ", " + std::to_string(run["kernels"].size()) +
           " kernels: " + r.value("status", std::string("ERROR")) + " in " + r.value("phase", std::string()) +
           ": " + r.value("reason", std::string());
  }
  return "";
}

std::optional<JudgedVerdict> read_judged(const fs::path& workspace) {
  const fs::path file = workspace / kJudgedFile;
  if (!fs::exists(file)) return std::nullopt;
  const json judged = json::parse(read_text_file(file), nullptr, false);
  if (judged.is_discarded() || !judged.is_array())
    throw Error(ErrorKind::Io, file.string() + " is not the judge's records: run `autokernel verify` again");
  JudgedVerdict verdict{judged_failure(judged), {}};
  for (const auto& run : judged)
    if (run.value("plugged", false) && run["record"].value("status", std::string()) == "PASS")
      for (const auto& name : run["kernels"]) verdict.plugged.insert(name.get<std::string>());
  return verdict;
}

}  // namespace ak::cli
