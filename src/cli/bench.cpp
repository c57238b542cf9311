// `autokernel bench FILE --op OP`: one experiment (lint, compile, five stages, timing).
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/print.h"
#include "cli/target.h"
#include "harness/results_log.h"
#include "runtime/ceilings_cache.h"

namespace ak::cli {

Command bench_command() {
  return {
      "bench", "check a kernel through every correctness stage and time it (one experiment)",
      [](CLI::App& app) -> Run {
        auto options = std::make_shared<TargetOptions>();
        options->add_to(app);
        return [options] {
          Target target = resolve_target(*options);
          const ExperimentRequest& req = target.evaluate.request;
          if (!options->json)
            std::cout << req.op << "  " << options->file << "  " << to_string(req.backend) << " ("
                      << target.device_name << ")  " << req.problem.to_string() << " " << to_string(req.dtype)
                      << "\n";
          const Progress progress = stderr_progress(!options->json);
          progress("compile");
          const BuiltCandidate built = build_candidate({target.source, {}}, target.evaluate);
          const ExperimentResult result = run_candidate(built, target.evaluate, progress);
          if (!options->json && isatty(2)) std::cerr << "\n";
          append_result(options->results, {"bench", options->file, "", target.device_name, &req, &result});
          if (options->json) {
            nlohmann::json j = result;
            j["op"] = req.op;
            j["kernel"] = options->file;
            j["backend"] = to_string(req.backend);
            j["device"] = target.device_name;
            j["problem"] = req.problem.to_string();
            j["dtype"] = to_string(req.dtype);
            j["ceilings"] = req.ceilings;
            // The built module, for driving the kernel outside the harness (a profiler run).
            if (built.build) j["module"] = std::filesystem::absolute(built.build->module).string();
            std::cout << j.dump(2) << "\n";
          } else {
            print_result(std::cout, result);
          }
          return result.passed() ? 0 : 1;
        };
      }};
}

}  // namespace ak::cli
