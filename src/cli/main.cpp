// autokernel: profile, extract, check, time and tune the GPU kernels of a model.
#include <sys/prctl.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "core/error.h"

int main(int argc, char** argv) {
  // No other process of this user may trace this one or read its memory (/proc/PID/mem,
  // process_vm_readv): the judge holds the references a kernel must compute, and its verdicts.
  ::prctl(PR_SET_DUMPABLE, 0);
  // Kernels load when their module loads, not at their first launch: a first launch behind a
  // held stream must not wait on module loading (lazy loading can stall behind a running kernel).
  ::setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  CLI::App app{
      "autokernel: finds the kernels that matter, makes faster ones, proves them correct, and times them "
      "honestly.\nEvery command takes --help; errors are one line with a non-zero exit."};
  app.set_version_flag("--version", std::string(AK_VERSION));
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, ak::cli::Run>> runs;
  for (const auto& command : ak::cli::commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.help);
    if (command.hidden) sub->group("");
    runs.emplace_back(sub, command.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runs)
      if (sub->parsed()) return run();
  } catch (const ak::Error& e) {
    std::cerr << "autokernel: " << e.what() << "\n";
    return ak::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::cerr << "autokernel: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
