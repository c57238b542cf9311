// `autokernel verify`: the model of the workspace's profile, as a user runs it — eager and under
// torch.compile in each mode — by itself and with the plan's kernels applied (autokernel.apply),
// each kernel plugged in only where it makes the whole model faster in the mode the plugging is
// decided in (python/autokernel/verify.py, decide.py, in a confined process that loads the
// kernels: its report is their word). The verdict is the judge's (verify_judged.h): the plugged-in
// kernels checked and timed by a process that loads none. Writes kernels.json (the built kernels,
// for apply and export), verify.json and judged.json, and prints the tables: verify's own, PyTorch
// and ours per mode with the ratios, then the judge's; a mismatch or a rejection is a non-zero exit.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>

#include "cli/command.h"
#include "cli/kernelbench_bridge.h"
#include "cli/print.h"
#include "cli/verify_judged.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/python.h"
#include "loop/alternatives.h"
#include "loop/run_state.h"
#include "profile/kernel_manifest.h"
#include "profile/profile_doc.h"

namespace ak::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct VerifyOptions {
  std::string workspace = "workspace", compile_modes = "default,max-autotune-no-cudagraphs,reduce-overhead";
  std::string mode = "auto", plug = "passed";
  int iterations = 20, timeout_s = 3600;
  double budget_s = 0;
  bool json = false;
  bool no_judge = false;
};

std::string us_or_dash(const json& value) {
  return value.is_number() ? microseconds(value.get<double>()) + " µs" : "-";
}

std::string ratio(const json& base, const json& ours) {
  return base.is_number() && ours.is_number() && ours.get<double>() > 0
             ? fixed(base.get<double>() / ours.get<double>(), 2, "x")
             : "-";
}

void print_outputs(const json& v) {
  std::vector<std::vector<std::string>> rows = {{"output", "shape", "relative error", "tolerance", ""}};
  for (const auto& o : v["outputs"])
    rows.push_back({o["name"], o.value("shape", json::array()).dump(),
                    o.contains("relative_error") ? scientific(o["relative_error"].get<double>()) : "-",
                    o.contains("tolerance") ? scientific(o["tolerance"].get<double>()) : "-",
                    o["ok"].get<bool>() ? "ok" : "MISMATCH " + o.value("reason", std::string())});
  if (rows.size() > 1)
    print_table(std::cout, rows, {false, false, true, true, false});
  else
    std::cout << "(no kernel was plugged in: nothing to compare)\n";
}

void print_kernels(const json& v) {
  // A column per mode plugging was decided in (eager always); the reason is the first mode's.
  const std::string decide = v["decide_mode"];
  std::vector<std::string> modes = {"eager"};
  for (const auto& m : v.value("decide_modes", json::array({decide})))
    if (m != "eager") modes.push_back(m);
  std::vector<std::string> header = {"kernel", "op", "problem", "dtype"};
  header.insert(header.end(), modes.begin(), modes.end());
  header.push_back("why");
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto& k : v["kernels"]) {
    const auto& d = k["decisions"];
    const auto in = [&](const std::string& mode) {
      return d.contains(mode) ? (d[mode]["in"].get<bool>() ? "in" : "out") : (k["candidate"] ? "-" : "no");
    };
    const std::string why = d.contains(decide) ? d[decide]["why"].get<std::string>() : k.value("why", "");
    rows.push_back({k["name"], k["op"], k["problem"], k["dtype"]});
    for (const auto& mode : modes) rows.back().push_back(in(mode));
    rows.back().push_back(why);
  }
  print_table(std::cout, rows, std::vector<bool>(header.size(), false));
  for (const auto& f : v["fallbacks"])
    std::cout << "fallback to PyTorch: " << f["op"].get<std::string>() << " x" << f["calls"].get<int>()
              << " (" << f["reason"].get<std::string>() << ")\n";
}

void print_timing(const json& v) {
  const auto& t = v["timing"];
  std::cout << "\ntime per forward pass (" << t["method"].get<std::string>() << ", median of "
            << t["iterations"] << "):\n";
  std::vector<std::vector<std::string>> rows = {{"", "PyTorch", "ours", "speedup", "kernels in", "note"}};
  for (const auto& r : t["rows"]) {
    const std::string mode = r["mode"];
    rows.push_back({mode == "eager" ? "eager" : "torch.compile " + mode, us_or_dash(r["torch_us"]),
                    us_or_dash(r["ours_us"]), ratio(r["torch_us"], r["ours_us"]),
                    std::to_string(r["kernels"].size()), r.value("note", "")});
  }
  for (const auto& r : t["rows"])
    if (r.contains("traced_us")) {
      // PyTorch as timed in the same alternating rounds as the traced graph, where it was
      const json& alone =
          r.value("traced_torch_us", json()).is_number() ? r["traced_torch_us"] : r["torch_us"];
      rows.push_back({"eager, PyTorch's ops from the traced graph", us_or_dash(alone),
                      us_or_dash(r["traced_us"]), ratio(alone, r["traced_us"]), "0",
                      "what tracing alone changes"});
    }
  const auto& replay = t["replay"];
  if (replay.contains("eager_us"))
    rows.push_back({"CUDA graph replay (eager)", us_or_dash(replay["eager_us"]),
                    us_or_dash(replay.value("ours_us", json())),
                    ratio(replay["eager_us"], replay.value("ours_us", json())),
                    std::to_string(replay["kernels"].size()), replay.value("ours_note", "")});
  print_table(std::cout, rows, {false, true, true, true, true, false});
  std::string decided;
  for (const auto& m : v.value("decide_modes", json::array({v["decide_mode"]})))
    decided += (decided.empty() ? "" : ", ") + m.get<std::string>();
  std::cout << "plugging decided by timing the whole model in mode " << decided
            << " (other modes take the first's kernels); verify took "
            << duration(v["elapsed_s"].get<double>()) << "\n";
}

// verify's own process's report: its outputs' comparison, its decisions, its times.
void print_exploration(const json& v) {
  std::cout << "verify " << v["model"]["spec"].get<std::string>() << " (input "
            << v["model"]["input_shape"].dump() << ", " << v["model"]["dtype"].get<std::string>() << ") on "
            << v["device"]["name"].get<std::string>() << "\n\n";
  print_outputs(v);
  std::cout << "\n";
  print_kernels(v);
  print_timing(v);
  std::cout << std::flush;
}

std::string first_mismatch(const json& v) {
  for (const auto& o : v["outputs"]) {
    if (o["ok"].get<bool>()) continue;
    if (o.contains("relative_error"))
      return o["name"].get<std::string>() + " relative error " +
             scientific(o["relative_error"].get<double>()) + " > " + scientific(o["tolerance"].get<double>());
    return o["name"].get<std::string>() + ": " + o.value("reason", std::string("differs"));
  }
  return "outputs differ";
}

// Whether a kernel is a candidate for plugging in, and the problems it was checked on. Without a
// run, every extracted kernel as it is, on the model's own problem (its outputs are checked here);
// after one, only kernels with a version that passed the harness, on the harness's problems.
ManifestEntry candidacy(const PlanModule& m, const std::optional<RunState>& run, bool all) {
  ManifestEntry e{m, true, "", 0, {{m.kernel.shape, m.kernel.dtype}}};
  if (!run) {
    e.why = all ? "--plug all" : "no optimization run: the extracted kernel as it is";
    return e;
  }
  const auto k = std::find_if(run->kernels.begin(), run->kernels.end(),
                              [&](const KernelState& s) { return s.name == m.kernel.name; });
  if (k != run->kernels.end() && k->best_us > 0) {
    if (const KernelState* leader = slot_leader(run->kernels, *k); leader != &*k) {
      // Alternatives of one slot (`--backend both`): the faster checked one is the slot's kernel.
      e.use = all;
      e.why = "slower than its alternative " + leader->name + " (" + kernel_backend(leader->file) + ", " +
              microseconds(leader->best_us) + " µs per call)";
      return e;
    }
    e.best_us = k->best_us;
    e.checked = harness_problems(m.kernel, run->settings.quick);
    e.why = "passed the harness (" + microseconds(k->best_us) + " µs per call)";
    return e;
  }
  e.use = all;
  e.why = k == run->kernels.end() || k->experiments == 0 ? "not reached within the run's budget"
                                                         : "no version passed the harness in the run";
  if (all) e.why = "--plug all (" + e.why + ")";
  return e;
}

// Seconds since the epoch, as Python's time.time(): when verify's budget began.
double epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string epoch_seconds_text(double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << seconds;
  return out.str();
}

// The judge times each model until its noise settles or this many seconds pass.
constexpr double kJudgeMaxTimeSeconds = 3;

// The longest compilation of the decide mode in verify's own measurements (0: none).
double compile_seconds(const json& v) {
  double longest = 0;
  for (const auto& m : v.value("measurements", json::array()))
    if (m.value("mode", std::string()) == v.value("decide_mode", std::string()) && m["compile_s"].is_number())
      longest = std::max(longest, m["compile_s"].get<double>());
  return longest;
}

// The bridge's command line: verify's own process, which loads the kernels, confined to the
// workspace, `scratch` and its own compilers' caches (not those the judge's references compile into).
std::vector<std::string> bridge_arguments(const VerifyOptions& o, const Profile& profile, const fs::path& out,
                                          double started, const fs::path& scratch) {
  const fs::path ws = o.workspace;
  std::ostringstream budget;
  budget << o.budget_s;
  std::vector<std::string> args = {
      "verify",     "--workspace", ws.string(), "--kernels",        (ws / kManifestFile).string(),
      "--json-out", out.string(),  "--device",  profile.device_type};
  args.insert(args.end(), {"--compile-modes", o.compile_modes, "--mode", o.mode, "--iterations",
                           std::to_string(o.iterations), "--budget", budget.str(), "--started",
                           epoch_seconds_text(started)});
  if (o.plug == "all") args.push_back("--no-decide");
  args.insert(args.end(), {"--confine", "--scratch", scratch.string(), "--caches",
                           (cache_dir() / "verify-caches").string()});
  return args;
}

// verify's exit: its own process's outputs' check, that anything was checked, the judge's verdict.
void throw_unless_passed(const json& v, double budget_s) {
  if (!v["passed"].get<bool>())
    throw Error(ErrorKind::Validation,
                "verify: the model's outputs with our kernels differ from eager: " + first_mismatch(v));
  const bool any_candidate =
      std::ranges::any_of(v["kernels"], [](const json& k) { return k.value("candidate", false); });
  if (any_candidate && v["outputs"].empty())  // nothing checked is not a pass
    throw Error(ErrorKind::Timeout,
                "verify: the budget (" + fixed(budget_s, 0, " s") +
                    ") ran out before the model ran with our kernels; nothing was checked");
  if (const std::string failure = v.contains("judged") ? judged_failure(v["judged"]) : ""; !failure.empty())
    throw Error(ErrorKind::Validation, "verify: the judge rejected the model with our kernels: " + failure);
}

int run_verify(const VerifyOptions& o) {
  // The budget counts from here: building the plan's kernels, the custom ops' native code and
  // loading the model are part of what the user waits for.
  const double started = epoch_seconds();
  const fs::path ws = o.workspace;
  const Profile profile = read_profile(ws);
  const Plan plan = read_plan(ws);
  const std::optional<RunState> run =
      fs::exists(ws / kRunStateFile) ? std::optional(load_run_state(ws)) : std::nullopt;
  const BuildInfo built = build_info(profile.backend());
  std::cerr << "autokernel: building the " << plan.kernels.size() << " kernels of the plan...\n";
  std::vector<ManifestEntry> entries;
  for (const PlanModule& m : build_plan_modules(ws, plan, profile.backend(), built.arch))
    entries.push_back(candidacy(m, run, o.plug == "all"));
  json manifest;
  const auto write_manifest = [&] {
    manifest = kernel_manifest(built, entries,
                               [](const ManifestEntry& e) { return fs::absolute(e.module.module).string(); });
    write_file_atomically(ws / kManifestFile, manifest.dump(1) + "\n");
  };
  write_manifest();
  const fs::path out = ws / "verify.json";
  const TempDirectory scratch("autokernel-verify");
  fs::remove(out);
  fs::remove(ws / kJudgedFile);
  run_bridge(bridge_arguments(o, profile, out, started, scratch.path()), std::chrono::seconds(o.timeout_s));
  auto v = json::parse(read_text_file(out));  // (after the bridge: a stale one is not read)
  // The workspace's kernels.json now says what verify decided, as an export's does: apply(model,
  // workspace=ws) plugs what won, not every candidate.
  std::vector<std::string> plugged, candidates;
  for (const ManifestEntry& e : entries)
    if (e.use) candidates.push_back(e.module.kernel.name);
  if (const auto decisions = verify_decisions(v); !decisions.empty()) {
    for (ManifestEntry& e : entries)
      if (const auto d = decisions.find(e.module.kernel.name); d != decisions.end()) {
        std::tie(e.use, e.why) = d->second;
        if (e.use) plugged.push_back(e.module.kernel.name);
      }
    write_manifest();
  }
  if (!o.json) print_exploration(v);  // (before the judge: what it decided, while the judge works)
  // The verdict on what is plugged in comes from the judge, unless verify's own process already
  // failed the outputs (a kernel gains nothing by forging a failure).
  const bool judging = !o.no_judge && v["passed"].get<bool>();
  if (judging) {
    const double left_s =
        o.budget_s <= 0 ? std::numeric_limits<double>::infinity() : o.budget_s - (epoch_seconds() - started);
    const auto runs = judged_runs(plugged, candidates, v["decide_mode"], left_s, compile_seconds(v));
    v["judged"] = judge_model(profile, manifest, runs, kJudgeMaxTimeSeconds, o.timeout_s);
    kb::write_json(ws / kJudgedFile, v["judged"]);
    if (!o.json) print_judged(std::cout, v["judged"]);
  }
  if (o.json) std::cout << v.dump(2) << "\n";
  throw_unless_passed(v, o.budget_s);
  return 0;
}

}  // namespace

Command verify_command() {
  return {
      "verify",
      "time the model as a user runs it (eager, torch.compile per mode) with and without our kernels; "
      "plug each in where it wins; outputs checked against eager",
      [](CLI::App& app) -> Run {
        auto o = std::make_shared<VerifyOptions>();
        app.add_option("--workspace", o->workspace, "holds profile.json and plan.json (and the run)")
            ->capture_default_str();
        app.add_option("--compile-modes", o->compile_modes,
                       "torch.compile modes to time (comma-separated), or none")
            ->capture_default_str();
        app.add_option("--mode", o->mode,
                       "the mode you run the model in, where plugging is decided: eager or a compile mode, "
                       "or several comma-separated, each decided on its own (the first is what export "
                       "plugs; auto: default on a GPU, eager on the CPU)")
            ->capture_default_str();
        app.add_option("--plug", o->plug,
                       "passed: the kernels that passed the harness in the run (without a run: all) are "
                       "candidates, each plugged in where it makes the model faster (default); all: every "
                       "kernel of the plan plugged in, no timing decision (to check outputs)")
            ->check(CLI::IsMember({"passed", "all"}));
        app.add_option("--iterations", o->iterations, "timed forward passes of each kind")
            ->check(CLI::PositiveNumber);
        app.add_option("--budget", o->budget_s,
                       "seconds, from verify's start (its builds included): no measurement starts that "
                       "would end past it, and one still running then is stopped (0: none)")
            ->check(CLI::NonNegativeNumber);
        app.add_option("--timeout", o->timeout_s, "seconds the bridge may take in all")
            ->check(CLI::PositiveNumber);
        app.add_flag("--json", o->json, "print verify.json (with the judge's records) instead of the table");
        app.add_flag("--no-judge", o->no_judge,
                     "skip the judge: the outputs' check and the times are then those of verify's own "
                     "process, which loads the kernels (their word, not a verdict)");
        return [o] { return run_verify(*o); };
      }};
}

}  // namespace ak::cli
