// The host backend: the CPU as a device, so CI runs the whole engine for real.
#pragma once

#include <memory>
#include <string>

#include "runtime/runtime.h"

namespace ak {

std::unique_ptr<Runtime> make_host_runtime();
std::unique_ptr<LaunchDevice> make_host_launch_device();

// The CPU's model name, from /proc/cpuinfo.
std::string host_cpu_model();

// Starts this process's OpenMP thread pool (a no-op when built without OpenMP).
void start_openmp_threads();

}  // namespace ak
