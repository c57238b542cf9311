// The host backend: the CPU as a device, so CI runs the whole engine for real.
#pragma once

#include <memory>

#include "runtime/runtime.h"

namespace ak {

std::unique_ptr<Runtime> make_host_runtime();
std::unique_ptr<LaunchDevice> make_host_launch_device();

// Starts this process's OpenMP thread pool (a no-op when built without OpenMP).
void start_openmp_threads();

}  // namespace ak
