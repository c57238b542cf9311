// `autokernel worker`: runs one experiment in this process for a parent that isolates it.
// Prints "stage NAME" lines as it goes so the parent can name the stage of a hang or crash.
#include <iostream>

#include "cli/command.h"
#include "core/paths.h"
#include "harness/experiment.h"

namespace ak::cli {

Command worker_command() {
  return {"worker", "run one experiment request in this process (used internally)",
          [](CLI::App& app) -> Run {
            auto request = std::make_shared<std::string>();
            auto result = std::make_shared<std::string>();
            app.add_option("--request", *request, "experiment request (JSON)")
                ->required()
                ->check(CLI::ExistingFile);
            app.add_option("--result", *result, "where to write the result (JSON)")->required();
            return [request, result] {
              const auto req = nlohmann::json::parse(read_text_file(*request)).get<ExperimentRequest>();
              const ExperimentResult r = run_experiment(
                  req, [](std::string_view stage) { std::cout << "stage " << stage << std::endl; });
              write_file_atomically(*result, nlohmann::json(r).dump());
              return 0;
            };
          },
          true};
}

}  // namespace ak::cli
