// Builds a kernel source into a loadable module: nvcc -shared for CUDA (for the device's own
// architecture), Triton's ahead-of-time compiler and a generated launcher for Triton .py files
// on the CUDA backend (runtime/triton_build.h), the host C++ compiler for host kernels.
// Content-addressed: the module's name is a hash of the source, the tuning definitions, the
// command line, the ABI headers and the compilers' versions (Triton's too), so an unchanged
// candidate never compiles twice.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "runtime/runtime.h"

namespace ak {

using Defines = std::vector<std::pair<std::string, std::string>>;

struct BuildRequest {
  std::filesystem::path source;
  Defines defines;
  Backend backend = Backend::Host;
  std::string arch;  // CUDA: "sm_90a", "sm_80", ...; ignored on the host
  std::chrono::seconds timeout{300};
};

struct BuildResult {
  std::filesystem::path module;
  bool cached = false;
  double seconds = 0;
  std::string log;  // compiler output, including the CUDA resource-usage report
};

// Throws Error(Io) for a missing source, Error(Compile) with the compiler's first error lines,
// Error(Timeout) when the compiler outlives request.timeout, Error(Unsupported) without nvcc.
BuildResult build_module(const BuildRequest& request);

// The compiler command line for a request, writing to `output` (exposed for tests and docs); for
// .cu and .cpp sources (a Triton file's two steps: runtime/triton_build.h).
std::vector<std::string> compile_command(const BuildRequest& request, const std::filesystem::path& output);

// The first error lines of a compiler log, for one-line messages and reports.
std::string first_error_lines(const std::string& log, size_t max_lines);

}  // namespace ak
