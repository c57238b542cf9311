// The Triton backend of the compiler: a kernel file kernels/triton/<op>.py becomes an ak_launch
// module like any other. Two steps, both ahead of time:
//
//   1. python3 -m autokernel_triton.aot build (python/autokernel_triton/aot.py) runs the file
//      with the tuning values, compiles each launch of its AK_LAUNCH mapping per dtype with
//      triton.compile for the fixed target (sm_90a: no GPU needed, Triton bundles ptxas) and
//      writes the cubins and a C++ launcher;
//   2. the host compiler builds the launcher into the module: the cubins embedded (.incbin),
//      loaded with the CUDA driver API at their first launch, launched on call->stream.
//
// The module holds no Python and no Triton: nothing but the driver API runs in the timed path.
// The backend follows from the file's extension (.py); the device is the CUDA one.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/compiler.h"

namespace ak {

// Whether a kernel source is a Triton kernel file (by its extension).
bool is_triton_source(const std::filesystem::path& source);

// What, besides the source and the ABI headers, decides a Triton module: the Triton version, the
// Python that runs the compiler, the compiler's own sources, the launcher's compiler and flags,
// the target and the tuning values. Finds the toolchain on first use (once per process); throws
// Error(Unsupported) without a Python that has Triton, or without the CUDA toolkit's cuda.h and
// libcuda stub.
std::string triton_cache_material(const BuildRequest& request);

// The first step's command line, writing into `work_dir` (exposed for tests and docs).
std::vector<std::string> triton_compile_command(const BuildRequest& request,
                                                const std::filesystem::path& work_dir);

struct TritonBuild {
  std::string log;  // both steps' output
  double seconds = 0;
};

// Builds the module at `output`. Throws Error(Compile) with one line, FILE:LINE: reason, for
// any fault of the kernel file (it does not parse or compile, its mapping names a missing
// argument, a grid of zero, a Triton without the ahead-of-time path), Error(Timeout) past
// request.timeout, Error(Unsupported) without the toolchain.
TritonBuild build_triton_module(const BuildRequest& request, const std::filesystem::path& output);

}  // namespace ak
