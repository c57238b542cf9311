// kernels.json: a plan's compiled kernels as the Python side loads them
// (python/autokernel/runtime/manifest.py). `verify` writes one into the workspace for the bridge;
// `export` writes one into the package it makes. Each kernel names its operator, its module, the
// architecture it was built for and the problems (shape, dtype) it was checked on: a kernel only
// ever runs on those; every other call runs PyTorch's op.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "profile/plan_modules.h"
#include "runtime/runtime.h"

namespace ak {

inline constexpr const char* kManifestFile = "kernels.json";
inline constexpr const char* kManifestFormat = "autokernel-kernels/1";

using CheckedProblem = std::pair<std::string, std::string>;  // (problem, dtype)

struct ManifestEntry {
  PlanModule module;
  bool use = true;     // a candidate for plugging in
  std::string why;     // why it is (or is not)
  double best_us = 0;  // its time in the run (0 without one)
  std::vector<CheckedProblem> checked;
};

struct BuildInfo {
  Backend backend = Backend::Host;
  std::string arch;  // as the Python side names this device: "sm_90a", "host:<CPU model>"
  std::string cuda;  // the CUDA compiler's release, "" on the host
};

// The problems the harness checks a kernel on in a run: smoke and primary in the plan's dtype;
// unless the run was --quick, the sweep, stability and edge problems in fp16, bf16 and fp32
// (harness/stages.cpp).
std::vector<CheckedProblem> harness_problems(const PlanKernel& kernel, bool quick);

// This device as kernels.json names architectures; the release of nvcc ("13.0", "" without).
BuildInfo build_info(Backend backend);

// verify's decision per kernel of workspace `ws` (its verify.json), in the mode it decided in
// first: (plugged in, why); none without a verify.json.
std::map<std::string, std::pair<bool, std::string>> verify_decisions(const std::filesystem::path& ws);
// The same, from verify.json's document.
std::map<std::string, std::pair<bool, std::string>> verify_decisions(const nlohmann::json& verify);

// The document; `module_path` gives the path written for each kernel's module.
nlohmann::json kernel_manifest(const BuildInfo& built, const std::vector<ManifestEntry>& entries,
                               const std::function<std::string(const ManifestEntry&)>& module_path);

}  // namespace ak
