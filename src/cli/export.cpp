// `autokernel export --out DIR [--format wheel|hf-kernels]`: a run's kept kernels as a package
// the user installs into the environment of their model. The kernels that passed the harness are
// built as they stand (kept file and configuration) for this device's architecture; the package
// (written by python/autokernel/export.py) holds their modules, sources and configurations, the
// problems each was checked on, and apply(model). verify's end-to-end decisions, when it ran,
// say which are plugged in by default. `--workspace` given several times merges several runs'
// kernels into one package (a prefill's and a decode step's, say): an exported package carries
// its own kernel table, so two packages' kernels could not serve one model together. A kernel's
// name holds its operator, problem and dtype; one in two runs is exported once, the faster.
#include <algorithm>
#include <iostream>
#include <map>
#include <tuple>

#include "cli/command.h"
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

struct ExportOptions {
  std::vector<std::string> workspaces = {"workspace"};
  std::string out, format = "wheel", name;
  int timeout_s = 600;
  bool force = false, json = false;
};

// The plan's kernels with a version that passed the harness in the run (of alternatives of one
// slot, `--backend both`, the fastest: the others are not exported).
Plan passed_kernels(const Plan& plan, const RunState& run, const fs::path& ws) {
  Plan passed{plan.name, plan.shares_from_baselines, {}};
  for (const PlanKernel& k : plan.kernels)
    for (const KernelState& s : run.kernels)
      if (s.name == k.name && s.best_us > 0 && slot_leader(run.kernels, s) == &s) passed.kernels.push_back(k);
  if (passed.kernels.empty())
    throw Error(ErrorKind::Usage,
                "no kernel of " + ws.string() + " passed the harness in its run: nothing to export");
  return passed;
}

void prepare_out(const fs::path& out, bool force) {
  if (fs::exists(out) && !(fs::is_directory(out) && fs::is_empty(out))) {
    if (!force) throw Error(ErrorKind::Usage, out.string() + " exists: --force replaces it");
    fs::remove_all(out);
  }
}

// One workspace's run, checked before anything is built or written.
struct ExportedRun {
  fs::path ws;
  Profile profile;
  RunState run;
  Plan passed;
  std::optional<JudgedVerdict> judged;  // verify's judge, where it ran
};

std::vector<ManifestEntry> entries_of(const ExportedRun& r, const BuildInfo& built) {
  const auto decisions = verify_decisions(r.ws);
  // verify.json is what verify's own process (which loaded the kernels) wrote; the judge's records
  // are this program's: a kernel is plugged in only where the judge passed it so.
  const std::optional<JudgedVerdict>& judged = r.judged;
  std::vector<ManifestEntry> entries;
  for (const PlanModule& m : build_plan_modules(r.ws, r.passed, built.backend, built.arch)) {
    ManifestEntry e{m, true, "", 0, harness_problems(m.kernel, r.run.settings.quick)};
    for (const KernelState& s : r.run.kernels)
      if (s.name == m.kernel.name) e.best_us = s.best_us;
    e.why = "passed the harness (" + microseconds(e.best_us) + " µs per call); verify has not decided";
    if (const auto d = decisions.find(m.kernel.name); d != decisions.end())
      std::tie(e.use, e.why) = d->second;
    if (e.use && judged && !judged->plugged.contains(m.kernel.name) && decisions.contains(m.kernel.name)) {
      e.use = false;
      e.why =
          std::string("verify decided it in, but the judge did not pass it plugged in (") + kJudgedFile + ")";
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

ExportedRun read_run(const fs::path& ws) {
  std::optional<JudgedVerdict> judged = read_judged(ws);
  if (judged && !judged->failure.empty())
    throw Error(ErrorKind::Validation,
                "verify's judge rejected the model with " + ws.string() + "'s kernels (" + judged->failure +
                    "): nothing exported; fix the kernel and run `autokernel verify` again");
  Profile profile = read_profile(ws);
  const Plan plan = read_plan(ws);
  if (!fs::exists(ws / kRunStateFile))
    throw Error(ErrorKind::Usage,
                "no optimization run in " + ws.string() +
                    ": nothing to export (`autokernel optimize` or `autokernel run` first)");
  RunState run = load_run_state(ws);
  Plan passed = passed_kernels(plan, run, ws);
  return {ws, std::move(profile), std::move(run), std::move(passed), std::move(judged)};
}

// Each run's kernels built, their sources named by absolute path (the package copies them from
// their own workspaces); of a kernel in several runs, the faster version.
json merged_manifest(const std::vector<ExportedRun>& runs, const BuildInfo& built) {
  std::vector<ManifestEntry> entries;
  for (const ExportedRun& r : runs) {
    for (ManifestEntry& e : entries_of(r, built)) {
      e.module.kernel.file = (fs::absolute(r.ws) / e.module.kernel.file).string();
      const auto same = std::find_if(entries.begin(), entries.end(), [&](const ManifestEntry& kept) {
        return kept.module.kernel.name == e.module.kernel.name;
      });
      if (same == entries.end())
        entries.push_back(std::move(e));
      else if (e.best_us < same->best_us)
        *same = std::move(e);
    }
  }
  return kernel_manifest(built, entries,
                         [](const ManifestEntry& e) { return fs::absolute(e.module.module).string(); });
}

int run_export(const ExportOptions& o) {
  const fs::path out = o.out;
  std::vector<ExportedRun> runs;
  for (const std::string& ws : o.workspaces) runs.push_back(read_run(ws));
  for (const ExportedRun& r : runs)
    if (r.profile.backend() != runs.front().profile.backend())
      throw Error(ErrorKind::Usage, r.ws.string() + " was profiled on another device than " +
                                        runs.front().ws.string() +
                                        ": one package holds one backend's kernels");
  const fs::path ws = runs.front().ws;  // the package's manifest and summary go into the first
  const Profile& profile = runs.front().profile;
  prepare_out(out, o.force);
  const BuildInfo built = build_info(profile.backend());
  size_t passed = 0;
  for (const ExportedRun& r : runs) passed += r.passed.kernels.size();
  std::cerr << "autokernel: building the " << passed << " kernels that passed...\n";
  json manifest = merged_manifest(runs, built);
  manifest["model"] = profile.short_name();
  fs::create_directories(ws / "export");
  write_file_atomically(ws / "export" / kManifestFile, manifest.dump(1) + "\n");
  const fs::path summary_file = ws / "export" / "export.json";
  run_bridge({"export", "--manifest", (ws / "export" / kManifestFile).string(), "--out", out.string(),
              "--name", o.name.empty() ? profile.short_name() : o.name, "--format", o.format, "--json-out",
              summary_file.string()},
             std::chrono::seconds(o.timeout_s));
  const json summary = json::parse(read_text_file(summary_file));
  if (o.json) {
    std::cout << summary.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"kernel", "op", "problem", "dtype", "plugged in", "why"}};
  for (const auto& k : summary["kernels"])
    rows.push_back(
        {k["name"], k["op"], k["problem"], k["dtype"], k["use"].get<bool>() ? "yes" : "no", k["why"]});
  print_table(std::cout, rows, {false, false, false, false, false, false});
  const std::string import = summary["import"];
  std::cout << "\nexported " << summary["kernels"].size() << " kernels (" << built.arch << ") to "
            << out.string() << " as " << o.format << "\n";
  if (o.format == "wheel")
    std::cout << "next: pip install " << out.string() << "; then in your script: import " << import << "; "
              << import << ".apply(model, example_inputs)\n";
  else
    std::cout << "next: kernels.get_local_kernel(pathlib.Path(\"" << out.string() << "\"), backend=...)\n";
  return 0;
}

}  // namespace

Command export_command() {
  return {"export", "package a run's kept kernels for pip (wheel) or the Hugging Face kernels loader",
          [](CLI::App& app) -> Run {
            auto o = std::make_shared<ExportOptions>();
            app.add_option("--workspace", o->workspaces,
                           "the run's workspace; several (--workspace A --workspace B) make one package")
                ->allow_extra_args(false)
                ->capture_default_str();
            app.add_option("--out", o->out, "directory of the package")->required();
            app.add_option("--format", o->format,
                           "wheel (pip install DIR) or hf-kernels (kernels.get_local_kernel)")
                ->check(CLI::IsMember({"wheel", "hf-kernels"}))
                ->capture_default_str();
            app.add_option("--name", o->name, "the package's name (default: autokernel-<model>)");
            app.add_flag("--force", o->force, "replace --out if it exists");
            app.add_option("--timeout", o->timeout_s, "seconds the packaging may take")
                ->check(CLI::PositiveNumber);
            app.add_flag("--json", o->json, "print the export's summary as JSON");
            return [o] { return run_export(*o); };
          }};
}

}  // namespace ak::cli
