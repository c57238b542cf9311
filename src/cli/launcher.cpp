// `autokernel launcher`: the sandboxed process that runs a kernel module for the judge
// (harness/launcher.h). Started only by the engine itself, with its channel on descriptor 3.
#include <stdlib.h>
#include <unistd.h>

#include "cli/command.h"
#include "harness/launch_server.h"

namespace ak::cli {

Command launcher_command() {
  return {"launcher", "run a kernel module for the judge, sandboxed (used internally)",
          [](CLI::App& app) -> Run {
            auto options = std::make_shared<LaunchServerOptions>();
            auto backend = std::make_shared<std::string>("host");
            app.add_option("--backend", *backend, "cuda or host")->required();
            app.add_option("--device", options->device, "the judge's CUDA device");
            app.add_option("--arena", options->arena, "the judge's shared arena (IPC handle or descriptor)")
                ->required();
            app.add_option("--arena-bytes", options->arena_bytes, "its size")->required();
            return [options, backend] {
              // A module of PTX alone (--arch compute_80) is compiled by the driver at its first
              // launch, inside the sandbox, which forbids writing the driver's cache of such
              // compiles: read before the driver starts, this keeps the driver from trying.
              ::setenv("CUDA_CACHE_DISABLE", "1", 1);
              options->backend = parse_backend(*backend);
              return serve_launches(*options);
            };
          },
          true};
}

}  // namespace ak::cli
