// `autokernel verify`: the model of the workspace's profile with every kernel of its plan plugged
// in (as it stands: after `optimize`, the kept versions and configurations), compared with
// PyTorch eager output by output and timed against eager and torch.compile by the bridge
// (python/autokernel/verify.py). Prints the table; a mismatch is a non-zero exit.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "cli/print.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "profile/plan_modules.h"
#include "profile/profile_doc.h"

namespace ak::cli {
namespace {

namespace fs = std::filesystem;

struct VerifyOptions {
  std::string workspace = "workspace", compile_mode = "max-autotune-no-cudagraphs";
  int iterations = 20, timeout_s = 3600;
  bool json = false;
};

std::string scientific(double value) {
  std::ostringstream out;
  out << std::scientific << std::setprecision(2) << value;
  return out.str();
}

std::string ratio(const nlohmann::json& base, double ours) {
  return base.is_number() && ours > 0 ? fixed(base.get<double>() / ours, 2, "x") : "-";
}

void print_verify(const nlohmann::json& v) {
  std::cout << "verify " << v["model"]["spec"].get<std::string>() << " (input "
            << v["model"]["input_shape"].dump() << ", " << v["model"]["dtype"].get<std::string>() << ") on "
            << v["device"]["name"].get<std::string>() << "\n\n";
  std::vector<std::vector<std::string>> rows = {{"output", "shape", "relative error", "tolerance", ""}};
  for (const auto& o : v["outputs"])
    rows.push_back({o["name"], o.value("shape", nlohmann::json::array()).dump(),
                    o.contains("relative_error") ? scientific(o["relative_error"].get<double>()) : "-",
                    o.contains("tolerance") ? scientific(o["tolerance"].get<double>()) : "-",
                    o["ok"].get<bool>() ? "ok" : "MISMATCH " + o.value("reason", std::string())});
  print_table(std::cout, rows, {false, false, true, true, false});
  std::cout << "\n";
  rows = {{"kernel plugged in", "op", "problem", "dtype", "calls"}};
  for (const auto& k : v["kernels"])
    rows.push_back({k["name"], k["op"], k["shape"], k["dtype"], std::to_string(k["calls"].get<int>())});
  print_table(std::cout, rows, {false, false, false, false, true});
  for (const auto& f : v["fallbacks"])
    std::cout << "fallback to torch: " << f["op"].get<std::string>() << " x" << f["calls"].get<int>() << " ("
              << f["reason"].get<std::string>() << ")\n";
  const auto& t = v["timing"];
  const double ours = t["ours_us"].get<double>();
  std::cout << "\ntime per forward pass (" << t["method"].get<std::string>() << " of " << t["iterations"]
            << "): eager " << microseconds(t["eager_us"].get<double>()) << " µs, torch.compile "
            << (t["compile_us"].is_number() ? microseconds(t["compile_us"].get<double>()) + " µs" : "-")
            << " (" << t["compile_note"].get<std::string>() << "), ours " << microseconds(ours) << " µs\n"
            << "speedup: " << ratio(t["eager_us"], ours) << " over eager, " << ratio(t["compile_us"], ours)
            << " over torch.compile\n";
}

std::string first_mismatch(const nlohmann::json& v) {
  for (const auto& o : v["outputs"]) {
    if (o["ok"].get<bool>()) continue;
    if (o.contains("relative_error"))
      return o["name"].get<std::string>() + " relative error " +
             scientific(o["relative_error"].get<double>()) + " > " + scientific(o["tolerance"].get<double>());
    return o["name"].get<std::string>() + ": " + o.value("reason", std::string("differs"));
  }
  return "outputs differ";
}

int run_verify(const VerifyOptions& o) {
  const fs::path ws = o.workspace;
  const Profile profile = read_profile(ws);
  const Plan plan = read_plan(ws);
  const Backend backend = profile.backend();
  std::string arch;
  if (backend == Backend::Cuda) arch = make_runtime(backend)->info().arch;  // released before the bridge runs
  std::cerr << "autokernel: building the " << plan.kernels.size() << " kernels of the plan...\n";
  nlohmann::json modules = nlohmann::json::array();
  for (const PlanModule& m : build_plan_modules(ws, plan, backend, arch))
    modules.push_back({{"name", m.name},
                       {"op", m.op},
                       {"shape", m.shape},
                       {"dtype", m.dtype},
                       {"config", m.config},
                       {"module", fs::absolute(m.module).string()}});
  fs::create_directories(ws / "verify");
  write_file_atomically(ws / "verify" / "modules.json", modules.dump(1) + "\n");
  const fs::path out = ws / "verify.json";
  run_bridge({"verify", "--workspace", ws.string(), "--modules", (ws / "verify" / "modules.json").string(),
              "--json-out", out.string(), "--device", profile.device_type, "--compile-mode", o.compile_mode,
              "--iterations", std::to_string(o.iterations)},
             std::chrono::seconds(o.timeout_s));
  const auto v = nlohmann::json::parse(read_text_file(out));
  if (o.json)
    std::cout << v.dump(2) << "\n";
  else
    print_verify(v);
  if (!v["passed"].get<bool>())
    throw Error(ErrorKind::Validation,
                "verify: the model's outputs with our kernels differ from eager: " + first_mismatch(v));
  return 0;
}

}  // namespace

Command verify_command() {
  return {"verify",
          "run the model with every optimized kernel plugged in: same outputs as eager, and the end-to-end "
          "speedup",
          [](CLI::App& app) -> Run {
            auto o = std::make_shared<VerifyOptions>();
            app.add_option("--workspace", o->workspace, "holds profile.json and plan.json (and the run)")
                ->capture_default_str();
            app.add_option("--compile-mode", o->compile_mode, "torch.compile mode to compare with, or none")
                ->capture_default_str();
            app.add_option("--iterations", o->iterations, "timed forward passes of each kind")
                ->check(CLI::PositiveNumber);
            app.add_option("--timeout", o->timeout_s, "seconds the bridge may take in all")
                ->check(CLI::PositiveNumber);
            app.add_flag("--json", o->json, "print verify.json instead of the table");
            return [o] { return run_verify(*o); };
          }};
}

}  // namespace ak::cli
