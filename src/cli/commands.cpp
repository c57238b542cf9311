#include "cli/command.h"

namespace ak::cli {

// In the order of the pipeline: what the device is, one kernel, the loop, then the model.
const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      device_command(), ops_command(),     bench_command(),    tune_command(),       optimize_command(),
      report_command(), profile_command(), extract_command(),  verify_command(),     run_command(),
      export_command(), worker_command(),  launcher_command(), kernelbench_command()};
  return table;
}

}  // namespace ak::cli
