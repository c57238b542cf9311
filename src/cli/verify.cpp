// `autokernel verify`: the model of the workspace's profile with every kernel of its plan plugged
// in (as it stands: after `optimize`, the kept versions and configurations), compared with
// PyTorch eager output by output and timed against eager and torch.compile by the bridge
// (python/autokernel/verify.py). Prints the table; a mismatch is a non-zero exit.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/print.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "loop/run_state.h"
#include "profile/plan_modules.h"
#include "profile/profile_doc.h"

namespace ak::cli {
namespace {

namespace fs = std::filesystem;

struct VerifyOptions {
  std::string workspace = "workspace", compile_mode = "max-autotune-no-cudagraphs", plug = "faster";
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

// The outputs of the plugged-in run, then those of its CUDA graph's replay (named so), if any.
nlohmann::json compared_outputs(const nlohmann::json& v) {
  nlohmann::json all = v["outputs"];
  if (v.contains("graph_outputs") && v["graph_outputs"].is_array())
    for (auto o : v["graph_outputs"]) {
      o["name"] = o["name"].get<std::string>() + " (graph replay)";
      all.push_back(o);
    }
  return all;
}

void print_verify(const nlohmann::json& v) {
  std::cout << "verify " << v["model"]["spec"].get<std::string>() << " (input "
            << v["model"]["input_shape"].dump() << ", " << v["model"]["dtype"].get<std::string>() << ") on "
            << v["device"]["name"].get<std::string>() << "\n\n";
  std::vector<std::vector<std::string>> rows = {{"output", "shape", "relative error", "tolerance", ""}};
  for (const auto& o : compared_outputs(v))
    rows.push_back({o["name"], o.value("shape", nlohmann::json::array()).dump(),
                    o.contains("relative_error") ? scientific(o["relative_error"].get<double>()) : "-",
                    o.contains("tolerance") ? scientific(o["tolerance"].get<double>()) : "-",
                    o["ok"].get<bool>() ? "ok" : "MISMATCH " + o.value("reason", std::string())});
  print_table(std::cout, rows, {false, false, true, true, false});
  std::cout << "\n";
  rows = {{"kernel", "op", "problem", "dtype", "plugged in", "calls", "why"}};
  for (const auto& k : v["kernels"])
    rows.push_back({k["name"], k["op"], k["shape"], k["dtype"], k.value("use", true) ? "yes" : "no",
                    std::to_string(k["calls"].get<int>()), k.value("why", std::string())});
  print_table(std::cout, rows, {false, false, false, false, false, true, false});
  for (const auto& f : v["fallbacks"])
    std::cout << "fallback to torch: " << f["op"].get<std::string>() << " x" << f["calls"].get<int>() << " ("
              << f["reason"].get<std::string>() << ")\n";
  const auto& t = v["timing"];
  const auto us = [&](const char* key) {
    return t.contains(key) && t[key].is_number() ? microseconds(t[key].get<double>()) + " µs"
                                                 : std::string("-");
  };
  std::cout << "\ntime per forward pass (" << t["method"].get<std::string>() << " of " << t["iterations"]
            << "):\n";
  rows = {{"", "eager", "torch.compile", "ours"},
          {"as run", us("eager_us"), us("compile_us"), us("ours_us")},
          {"CUDA graph replay", us("eager_graph_us"), "", us("ours_graph_us")}};
  print_table(std::cout, rows, {false, true, true, true});
  std::cout << "torch.compile: " << t["compile_note"].get<std::string>() << "\n";
  for (const char* note : {"eager_graph_note", "ours_graph_note"})
    if (t.contains(note)) std::cout << note << ": " << t[note].get<std::string>() << "\n";
  const double ours = t["ours_us"].get<double>();
  std::cout << "speedup as run: " << ratio(t["eager_us"], ours) << " over eager, "
            << ratio(t["compile_us"], ours) << " over torch.compile\n";
  if (t.contains("ours_graph_us")) {
    const double graphed = t["ours_graph_us"].get<double>();
    std::cout << "speedup replayed: " << ratio(t["eager_us"], graphed) << " over eager, "
              << ratio(t.value("eager_graph_us", nlohmann::json()), graphed) << " over eager replayed, "
              << ratio(t["compile_us"], graphed) << " over torch.compile\n";
  }
}

std::string first_mismatch(const nlohmann::json& v) {
  for (const auto& o : compared_outputs(v)) {
    if (o["ok"].get<bool>()) continue;
    if (o.contains("relative_error"))
      return o["name"].get<std::string>() + " relative error " +
             scientific(o["relative_error"].get<double>()) + " > " + scientific(o["tolerance"].get<double>());
    return o["name"].get<std::string>() + ": " + o.value("reason", std::string("differs"));
  }
  return "outputs differ";
}

// PyTorch's own time per call of a kernel's problem, from the profile (0 when it has none).
double torch_us_per_call(const Profile& profile, const PlanKernel& m) {
  for (const auto& e : profile.entries)
    if (e.op == m.op && e.dtype == m.dtype && e.calls > 0 && parse_problem(e.problem).to_string() == m.shape)
      return e.us / e.calls;
  return 0;
}

// Whether verify plugs a kernel in, and why. Without a run, every extracted kernel (the check of
// the model's outputs is the point). After a run, only a kernel that passed the harness and beat
// PyTorch's own time for its problem: a kernel that would slow the model down stays out.
std::pair<bool, std::string> plug_decision(const PlanKernel& m, const Profile& profile,
                                           const std::optional<RunState>& run, bool all) {
  if (all) return {true, "--plug all"};
  if (!run) return {true, "no optimization run: the extracted kernel as it is"};
  const auto k = std::find_if(run->kernels.begin(), run->kernels.end(),
                              [&](const KernelState& s) { return s.name == m.name; });
  if (k == run->kernels.end() || k->experiments == 0) return {false, "not reached within the run's budget"};
  if (k->best_us <= 0) return {false, "no version passed the harness in the run"};
  const double theirs = torch_us_per_call(profile, m);
  const std::string times = microseconds(k->best_us) + " µs vs PyTorch's " + microseconds(theirs) + " µs";
  if (theirs > 0 && k->best_us >= theirs) return {false, "slower: " + times};
  return {true, theirs > 0 ? times : "passed the harness"};
}

int run_verify(const VerifyOptions& o) {
  const fs::path ws = o.workspace;
  const Profile profile = read_profile(ws);
  const Plan plan = read_plan(ws);
  const std::optional<RunState> run =
      fs::exists(ws / kRunStateFile) ? std::optional(load_run_state(ws)) : std::nullopt;
  const Backend backend = profile.backend();
  std::string arch;
  if (backend == Backend::Cuda) arch = make_runtime(backend)->info().arch;  // released before the bridge runs
  std::cerr << "autokernel: building the " << plan.kernels.size() << " kernels of the plan...\n";
  nlohmann::json modules = nlohmann::json::array();
  for (const PlanModule& m : build_plan_modules(ws, plan, backend, arch)) {
    const auto [use, why] = plug_decision(m.kernel, profile, run, o.plug == "all");
    modules.push_back({{"name", m.kernel.name},
                       {"op", m.kernel.op},
                       {"shape", m.kernel.shape},
                       {"dtype", m.kernel.dtype},
                       {"config", m.config},
                       {"module", fs::absolute(m.module).string()},
                       {"use", use},
                       {"why", why}});
  }
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
            app.add_option("--plug", o->plug,
                           "faster: after a run, only kernels that passed and beat PyTorch's own time "
                           "(default); all: every kernel of the plan")
                ->check(CLI::IsMember({"faster", "all"}));
            app.add_option("--iterations", o->iterations, "timed forward passes of each kind")
                ->check(CLI::PositiveNumber);
            app.add_option("--timeout", o->timeout_s, "seconds the bridge may take in all")
                ->check(CLI::PositiveNumber);
            app.add_flag("--json", o->json, "print verify.json instead of the table");
            return [o] { return run_verify(*o); };
          }};
}

}  // namespace ak::cli
