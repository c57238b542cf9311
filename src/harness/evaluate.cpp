#include "harness/evaluate.h"

#include "core/error.h"
#include "core/paths.h"
#include "harness/experiment_server.h"
#include "harness/lint.h"

namespace ak {

std::string lint_report(const std::filesystem::path& source) {
  const auto findings = lint_kernel_source(read_text_file(source));
  std::string report;
  for (const auto& f : findings) report += (report.empty() ? "" : "; ") + describe(f);
  return report;
}

BuiltCandidate build_candidate(const Candidate& candidate, const EvaluateOptions& options) {
  BuiltCandidate built;
  ExperimentResult& failure = built.failure;
  try {
    if (std::string lint = lint_report(candidate.source); !lint.empty()) {
      failure.status = Status::LintError;
      failure.stage = "lint";
      failure.reason = lint;
      return built;
    }
    BuildResult build = build_module({candidate.source, candidate.defines, options.request.backend,
                                      options.arch, options.compile_timeout});
    built.build = std::move(build);
  } catch (const Error& e) {
    failure.status = e.kind() == ErrorKind::Compile || e.kind() == ErrorKind::Timeout ? Status::CompileError
                                                                                      : Status::Error;
    failure.stage = "compile";
    failure.reason = e.what();
  }
  return built;
}

ExperimentResult run_candidate(const BuiltCandidate& built, const EvaluateOptions& options,
                               const Progress& progress) {
  if (!built.build) return built.failure;
  ExperimentRequest request = options.request;
  request.module = built.build->module;
  ExperimentResult result = options.server ? options.server->run(request, options.timeout, progress)
                                           : run_isolated(request, options.timeout, progress);
  result.compile_seconds = built.build->seconds;
  result.compile_cached = built.build->cached;
  return result;
}

}  // namespace ak
