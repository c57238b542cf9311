#include "cli/command.h"

namespace ak::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {device_command(),   bench_command(),  tune_command(),
                                             optimize_command(), worker_command(), report_command()};
  return table;
}

}  // namespace ak::cli
