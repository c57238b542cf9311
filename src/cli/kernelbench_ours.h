// A KernelBench solution made of our kernels, for a problem `kernelbench map` found our operators
// in. The problem's workspace holds its profile.json (written by the map, in the format `autokernel
// profile` writes); from there the engine's own steps take over: extract (the backend's starters
// at the problem's own shapes, plan.json), optionally optimize (the loop, tuned on those shapes),
// and a build of each kernel as it stands (its kept configuration). The ModelNew written beside
// them is the problem's Model with those modules in place of the calls they compute
// (python/autokernel/kernelbench/ours.py).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace ak::cli::kb {

inline constexpr const char* kSolutionFile = "model_new.py";

// Extracts the top `top` operators of the problem's profile into the workspace, unless a plan is
// there already (an earlier map or run: its kernels, kept configurations included, are reused).
void extract_ours(const std::filesystem::path& workspace, Backend backend, int top);

// Runs `autokernel optimize --workspace W [extra...]` as a child process: the loop on the plan.
// Throws Error naming the loop's own reason when it fails.
void optimize_ours(const std::filesystem::path& workspace, const std::vector<std::string>& extra,
                   bool progress);

// Builds the plan's kernels (through the compile cache) and writes workspace/model_new.py for
// the problem at `problem_path`. Returns its path. Throws Error(Compile) when a kernel does not build.
std::filesystem::path write_ours_solution(const std::filesystem::path& workspace,
                                          const std::string& problem_path, Backend backend);

}  // namespace ak::cli::kb
