// Options shared by the commands that run experiments on a kernel file (bench, tune), and their
// resolution into a device, an op, a problem and evaluation settings, with one-line errors.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "core/op.h"
#include "harness/evaluate.h"
#include "runtime/runtime.h"

namespace ak::cli {

struct TargetOptions {
  std::string file;
  std::string op;
  std::string backend = "auto";
  std::string dtype = "fp16";
  std::string shape;
  std::string results = "results.tsv";
  std::string arch;
  bool quick = false;
  bool json = false;
  uint64_t seed = 20261122;
  int timeout_s = 300;
  double max_time_s = 3.0;

  void add_to(CLI::App& app);
};

struct Target {
  const Op* op = nullptr;
  std::filesystem::path source;
  std::unique_ptr<Runtime> runtime;
  EvaluateOptions evaluate;
  std::string device_name;
};

// Throws Error(Usage) for a bad op, shape, dtype or file; Error(Unsupported) for a missing GPU.
Target resolve_target(const TargetOptions& options);

// Progress on stderr: "  smoke.. sweep.. stability.." as the stages go by.
Progress stderr_progress(bool enabled);

}  // namespace ak::cli
