// The compiled modules of a plan's kernels as they stand in the workspace — after `optimize`, the
// kept version of each file with its kept configuration (kernels/<name>/config) — for verify to
// plug into the model. Built through the content-addressed cache, so usually no compile at all.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "loop/plan.h"

namespace ak {

struct PlanModule {
  PlanKernel kernel;
  std::string config;  // "THREADS=256 VEC=8", "" for the file's defaults
  std::filesystem::path module;
};

// Backend from a kernel file's extension: .cu is CUDA, .cpp (or .cc) host. Throws Error(Usage).
Backend backend_of_kernel(const std::filesystem::path& file);

// Throws Error(Usage) for a kernel of another backend or a configuration its space does not
// hold, Error(Compile) when one does not build.
std::vector<PlanModule> build_plan_modules(const std::filesystem::path& workspace, const Plan& plan,
                                           Backend backend, const std::string& arch);

}  // namespace ak
