#include "cli/target.h"

#include <unistd.h>

#include <iostream>

#include "core/error.h"
#include "core/registry.h"
#include "runtime/ceilings_cache.h"

namespace ak::cli {

void TargetOptions::add_to(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a later flag overrides
  app.add_option("file", file, "kernel source (.cu or Triton .py for cuda, .cpp for host)")->required();
  app.add_option("--op", op,
                 "operator the kernel implements (matmul, softmax, layernorm, rmsnorm, "
                 "flash_attention, fused_mlp, cross_entropy, rotary_embedding, reduce)")
      ->required();
  app.add_option("--backend", backend, "cuda, host, or auto (from the file's extension)")
      ->check(CLI::IsMember({"auto", "cuda", "host"}));
  app.add_option("--dtype", dtype, "dtype of the timed problem: fp16, bf16 or fp32");
  app.add_option("--shape", shape,
                 "timed problem, e.g. 8192x8192 or 4x32x4096x128:causal=0 (default: the op's standard)");
  app.add_flag("--quick", quick, "smoke test and the timed problem only, then time");
  app.add_flag("--json", json, "print one JSON document instead of the table");
  app.add_option("--seed", seed, "seed of the input sets");
  app.add_option("--timeout", timeout_s, "seconds before an experiment counts as hung (TIMEOUT)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-time", max_time_s, "seconds of timing samples at most per experiment")
      ->check(CLI::PositiveNumber);
  app.add_option("--results", results, "results table to append to");
  app.add_option("--arch", arch,
                 "CUDA architecture to build for (default: the device's own, e.g. sm_90a; compute_80: that "
                 "target's PTX, compiled for the device on load)");
}

Target resolve_target(const TargetOptions& o) {
  Target t;
  t.op = &find_op(o.op);
  t.source = o.file;
  if (!std::filesystem::is_regular_file(t.source))
    throw Error(ErrorKind::Usage, "kernel file not found: " + o.file);
  const auto ext = t.source.extension();
  Backend backend = o.backend == "auto" ? (ext == ".cu" || ext == ".py" ? Backend::Cuda : Backend::Host)
                                        : parse_backend(o.backend);
  const DType dtype = parse_dtype(o.dtype);
  Problem problem = o.shape.empty() ? t.op->default_problem() : parse_problem(o.shape);
  t.op->validate(problem);

  t.runtime = make_runtime(backend);
  t.device_name = t.runtime->info().name;
  if (std::getenv("AK_QUIET_CEILINGS") == nullptr && !cached_ceilings(t.runtime->info()))
    std::cerr << "autokernel: measuring the ceilings of " << t.device_name << " (once per device)...\n";

  ExperimentRequest& req = t.evaluate.request;
  req.op = std::string(t.op->name());
  req.backend = backend;
  req.problem = problem;
  req.dtype = dtype;
  req.quick = o.quick;
  req.seed = o.seed;
  req.timing.max_seconds = o.max_time_s;
  req.ceilings = device_ceilings(*t.runtime);
  t.evaluate.arch = o.arch.empty() ? t.runtime->info().arch : o.arch;
  t.evaluate.timeout = std::chrono::seconds(o.timeout_s);
  return t;
}

Progress stderr_progress(bool enabled) {
  if (!enabled || !::isatty(STDERR_FILENO)) return [](std::string_view) {};
  return [](std::string_view stage) { std::cerr << "  " << stage << "..." << std::flush; };
}

}  // namespace ak::cli
