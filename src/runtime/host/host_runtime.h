// The host backend: the CPU as a device, so CI runs the whole engine for real.
#pragma once

#include <memory>

#include "runtime/runtime.h"

namespace ak {

std::unique_ptr<Runtime> make_host_runtime();

}  // namespace ak
