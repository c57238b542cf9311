// The executor on a Ray cluster (executor.h; ray_executor.cpp says how).
#pragma once

#include <memory>

#include "loop/executor.h"

namespace ak {

// Throws Error(Unsupported) without a Python that has Ray, Error(Io) when the cluster or its
// workers do not come up, Error(Usage) when no worker has this machine's GPU model.
std::unique_ptr<Executor> make_ray_executor(const ExecutorOptions& options);

}  // namespace ak
