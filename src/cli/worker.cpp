// `autokernel worker`: runs one experiment in this process for a parent that isolates it.
// Prints "stage NAME" lines as it goes so the parent can name the stage of a hang or crash.
// With --serve it is the long-lived experiment server instead (harness/experiment_server.h).
#include <unistd.h>

#include <iostream>

#include "cli/command.h"
#include "core/error.h"
#include "core/paths.h"
#include "harness/experiment.h"
#include "harness/experiment_server.h"

namespace ak::cli {

Command worker_command() {
  return {"worker", "run one experiment request in this process (used internally)",
          [](CLI::App& app) -> Run {
            auto request = std::make_shared<std::string>();
            auto result = std::make_shared<std::string>();
            auto serve = std::make_shared<bool>(false);
            auto* serve_flag = app.add_flag("--serve", *serve,
                                            "answer requests on stdin, one JSON line each, until it closes");
            app.add_option("--request", *request, "experiment request (JSON)")
                ->check(CLI::ExistingFile)
                ->excludes(serve_flag);
            app.add_option("--result", *result, "where to write the result (JSON)")->excludes(serve_flag);
            return [request, result, serve] {
              if (*serve) return serve_experiments(STDIN_FILENO, STDOUT_FILENO);
              if (request->empty() || result->empty())
                throw Error(ErrorKind::Usage, "worker needs --request and --result, or --serve");
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
