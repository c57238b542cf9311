// `autokernel extract --top N`: the profile's top operators, each as a standalone kernel (the
// backend's starter) with the model's own problem and dtype, and the plan `optimize` runs. With
// --model and no profile of it in the workspace, a shipped profile (measured on a GPU and kept in
// the repository) stands in: extract starts without running the model.
#include "profile/extract.h"

#include <iostream>

#include "cli/command.h"
#include "cli/print.h"
#include "profile/shipped_profiles.h"

namespace ak::cli {
namespace {

struct ExtractOptions {
  std::string workspace = "workspace", backend = "auto", model, input_shape, dtype;
  int top = 5;
  bool json = false;
};

int run_extract(const ExtractOptions& o) {
  if (!o.model.empty()) {
    const std::string used = ensure_profile(o.workspace, o.model, o.input_shape, o.dtype);  // may throw
    std::cerr << "autokernel: " << used << "\n";
  }
  const Profile profile = read_profile(o.workspace);
  const Backend backend = device_of_backend_option(o.backend, profile.backend());
  const auto kinds = starter_kinds(o.backend, backend);
  // The order is by time alone; the rooflines (which need the device's ceilings) are the profile's table.
  const Ranking ranking = rank_profile(profile, Ceilings{});
  std::vector<std::string> passed_over;
  const Plan plan =
      extract_plan(o.workspace, profile, ranking, static_cast<size_t>(o.top), backend, kinds, &passed_over);
  for (const auto& line : passed_over) std::cerr << "autokernel: passed over " << line << "\n";
  if (o.json) {
    std::cout << nlohmann::json(plan).dump(2) << "\n";
    return 0;
  }
  std::cout << "extracted " << plan.kernels.size() << " kernels of " << profile.model.spec << " into "
            << o.workspace << " (" << (kinds.size() > 1 ? "cuda and triton" : kinds.front())
            << " starters):\n\n";
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "problem", "dtype", "share"}};
  double share = 0;
  for (const auto& k : plan.kernels) {
    rows.push_back({k.file, k.op, k.shape, k.dtype, fixed(100 * k.share, 1, "%")});
    share += k.share;
  }
  print_table(std::cout, rows, {false, false, false, false, true});
  std::cout << "\nthey are " << fixed(100 * share, 1, "%") << " of the model's " << profile.time_kind
            << "\nnext: autokernel optimize --workspace " << o.workspace << "\n";
  return 0;
}

}  // namespace

Command extract_command() {
  return {"extract", "write the profile's top operators as standalone kernels with the model's shapes",
          [](CLI::App& app) -> Run {
            auto o = std::make_shared<ExtractOptions>();
            app.add_option("--top", o->top, "how many operators, by time")
                ->check(CLI::PositiveNumber)
                ->capture_default_str();
            app.add_option("--backend", o->backend,
                           "starters: cuda, triton, both (each operator gets a CUDA and a Triton kernel; the "
                           "loop keeps the faster), host, or auto (the profiled device's)")
                ->check(CLI::IsMember({"auto", "cuda", "triton", "both", "host"}));
            app.add_option("--workspace", o->workspace, "holds profile.json; gets plan.json and kernels/")
                ->capture_default_str();
            app.add_option("--model", o->model,
                           "the profiled model; without its profile in the workspace, a shipped one is used");
            app.add_option("--input-shape", o->input_shape,
                           "with --model: the shipped profile's input shape");
            app.add_option("--dtype", o->dtype, "with --model: the shipped profile's dtype")
                ->check(CLI::IsMember({"fp16", "bf16", "fp32"}));
            app.add_flag("--json", o->json, "print the plan as JSON");
            return [o] { return run_extract(*o); };
          }};
}

}  // namespace ak::cli
