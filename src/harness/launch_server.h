// The launcher's side (`autokernel launcher`, started only by the judge, harness/launcher.h):
// maps the judge's arena, enters the sandbox, loads the module and runs ak_launch on the calls
// the judge defines, answering on descriptor 3.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/runtime.h"

namespace ak {

struct LaunchServerOptions {
  Backend backend = Backend::Host;
  int device = 0;
  std::string arena;  // SharedArena::handle() (on the host: the inherited descriptor's number)
  size_t arena_bytes = 0;
};

// Serves until the judge closes the channel; returns the process's exit code.
int serve_launches(const LaunchServerOptions& options);

}  // namespace ak
