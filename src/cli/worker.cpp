// `autokernel worker`: runs one experiment in this process for a parent that isolates it.
// Prints "stage NAME" lines as it goes so the parent can name the stage of a hang or crash.
// With --serve it is the long-lived experiment server instead (harness/experiment_server.h).
#include <unistd.h>

#include <iostream>

#include "cli/command.h"
#include "core/error.h"
#include "core/paths.h"
#include "harness/evaluate.h"
#include "harness/experiment.h"
#include "harness/experiment_server.h"

namespace ak::cli {
namespace {

// A candidate built here for another machine: the module's path on this one, or why not.
nlohmann::json build_answer(const nlohmann::json& ask) {
  Candidate candidate{ask.at("source").get<std::string>(), {}};
  for (const auto& define : ask.value("defines", nlohmann::json::array()))
    candidate.defines.emplace_back(define.at(0).get<std::string>(), define.at(1).get<std::string>());
  EvaluateOptions options;
  options.request.backend = parse_backend(ask.value("backend", "host"));
  options.arch = ask.value("arch", "");
  options.compile_timeout = std::chrono::seconds(ask.value("timeout_s", 300));
  const BuiltCandidate built = build_candidate(candidate, options);
  if (!built.build) return {{"ok", false}, {"failure", built.failure}};
  return {{"ok", true},
          {"module", built.build->module.string()},
          {"cached", built.build->cached},
          {"seconds", built.build->seconds},
          {"log", built.build->log}};
}

}  // namespace

Command worker_command() {
  return {
      "worker", "run one experiment request in this process (used internally)",
      [](CLI::App& app) -> Run {
        auto request = std::make_shared<std::string>();
        auto result = std::make_shared<std::string>();
        auto serve = std::make_shared<bool>(false);
        auto build = std::make_shared<std::string>();
        auto* serve_flag =
            app.add_flag("--serve", *serve, "answer requests on stdin, one JSON line each, until it closes");
        app.add_option("--build", *build,
                       "lint and compile the candidate a JSON file describes (a compile task of a Ray "
                       "cluster): {source, defines, backend, arch, timeout_s}; the answer goes to --result")
            ->check(CLI::ExistingFile)
            ->excludes(serve_flag);
        app.add_option("--request", *request, "experiment request (JSON)")
            ->check(CLI::ExistingFile)
            ->excludes(serve_flag);
        app.add_option("--result", *result, "where to write the result (JSON)")->excludes(serve_flag);
        return [request, result, serve, build] {
          if (*serve) return serve_experiments(STDIN_FILENO, STDOUT_FILENO);
          if (!build->empty()) {
            if (result->empty()) throw Error(ErrorKind::Usage, "worker --build needs --result");
            write_file_atomically(*result,
                                  build_answer(nlohmann::json::parse(read_text_file(*build))).dump());
            return 0;
          }
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
