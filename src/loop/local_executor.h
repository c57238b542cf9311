// The executor of one machine (executor.h): one measuring worker per GPU, or host workers.
#pragma once

#include <memory>

#include "loop/executor.h"

namespace ak {

std::unique_ptr<Executor> make_local_executor(const ExecutorOptions& options);

}  // namespace ak
