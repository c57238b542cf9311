// verify's verdict, from the KernelBench judge (python/autokernel/kernelbench: judge.py,
// model_problem.py). verify's Python process loads the kernels it decides on, so everything it
// writes (verify.json: its outputs' comparison, its times) is the kernels' word: a kernel can
// forge it. The judge never loads a kernel: it builds the profile's model itself, draws every
// input, runs the reference, keeps the clock and compares the outputs, while the model with the
// kernels runs in a confined process of its own. What it judges is what is delivered: the set of
// kernels plugged in (the decide mode's), in eager and compiled in the decide mode.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "profile/profile_doc.h"

namespace ak::cli {

// The judge's records in a workspace (written by verify; removed when it starts again).
inline constexpr const char* kJudgedFile = "judged.json";

struct JudgedRun {
  std::string mode;                  // eager or a torch.compile mode
  std::vector<std::string> kernels;  // judged together
  bool timing = true;
  int trials = 5;
  bool plugged = true;  // the set verify plugs in (else every candidate, when none is plugged)
};

// The runs the judge makes within `left_s` seconds of verify's budget (infinity: none): the
// decide mode's plugged set (`plugged`) in eager, timed where kTimedSeconds are left; compiled in
// the decide mode, where that is a compile mode and two compilations (ours and PyTorch's, each
// about `compile_s`, verify's own) fit too. Where nothing is plugged, every candidate in eager,
// untimed: a wrong kernel fails verify whether or not it won a place.
std::vector<JudgedRun> judged_runs(const std::vector<std::string>& plugged,
                                   const std::vector<std::string>& candidates, const std::string& decide_mode,
                                   double left_s, double compile_s);

// Each run judged: [{"mode", "kernels", "record"}]; `manifest` is the kernels' manifest as this
// process wrote it. A judge that could not give a record is a record of status ERROR.
nlohmann::json judge_model(const Profile& profile, const nlohmann::json& manifest,
                           const std::vector<JudgedRun>& runs, double max_time_s, int timeout_s);

// The judge's table, and its first failure ("" when every run passed).
void print_judged(std::ostream& out, const nlohmann::json& judged);
std::string judged_failure(const nlohmann::json& judged);

// What the judge said in a workspace: its first failure ("" when every run passed) and the
// kernels it passed plugged in; nothing where verify has not run with the judge.
struct JudgedVerdict {
  std::string failure;
  std::set<std::string> plugged;
};
std::optional<JudgedVerdict> read_judged(const std::filesystem::path& workspace);

}  // namespace ak::cli
