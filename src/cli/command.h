// Subcommands: one file each, listed in the one table of commands.cpp. A command's setup adds
// its options to its CLI11 subcommand and returns the function main() runs when it is chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace ak::cli {

using Run = std::function<int()>;

struct Command {
  std::string name;
  std::string help;
  std::function<Run(CLI::App&)> setup;
  bool hidden = false;
};

const std::vector<Command>& commands();

Command device_command();
Command bench_command();
Command tune_command();
Command optimize_command();
Command worker_command();
Command launcher_command();
Command report_command();
Command profile_command();
Command extract_command();
Command verify_command();
Command run_command();
Command export_command();
Command ops_command();
Command kernelbench_command();

}  // namespace ak::cli
