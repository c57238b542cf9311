// `autokernel profile --model llama|gpt2|bert|path/to/file.py:Class`: the bridge
// (python/autokernel/profile.py) traces the model's forward pass, finds our operators in the
// graph whatever the model's code structure, and runs it under torch.profiler, writing
// workspace/profile.json and the Chrome trace; then the ranking against this device's measured
// ceilings, the Amdahl plan and the share of the time left unknown are printed.
#include <iostream>
#include <map>

#include "cli/command.h"
#include "cli/print.h"
#include "core/paths.h"
#include "core/python.h"
#include "profile/ranking.h"
#include "profile/shipped_profiles.h"
#include "runtime/ceilings_cache.h"

namespace ak::cli {
namespace {

struct ProfileOptions {
  std::string model, input_shape, dtype = "auto", device = "auto", workspace = "workspace", ship;
  int iterations = 3, rows = 20, timeout_s = 1800;
  bool json = false;
};

std::string entry_label(const RankedEntry& r) {
  return r.entry.op ? *r.entry.op : r.entry.aten + " (unknown)";
}

double unknown_share(const Ranking& ranking) {
  double share = 0;
  for (const auto& r : ranking.entries)
    if (!r.op) share += r.share;
  return share;
}

nlohmann::json ranking_json(const Profile& p, const Ranking& ranking, const Ceilings& ceilings) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& r : ranking.entries) {
    nlohmann::json j = {
        {"name", entry_label(r)}, {"us", r.entry.us}, {"calls", r.entry.calls}, {"share", r.share}};
    if (r.entry.op) j.update({{"op", *r.entry.op}, {"problem", r.problem}, {"dtype", r.entry.dtype}});
    if (r.op) {
      j.update({{"roofline_us", r.roofline_us},
                {"bound", r.bound},
                {"headroom", r.headroom},
                {"projected_speedup", r.projected}});
    }
    if (!r.note.empty()) j["note"] = r.note;
    entries.push_back(j);
  }
  nlohmann::json sites = nlohmann::json::array();
  for (const auto& site : p.sites)
    sites.push_back({{"path", site.path},
                     {"op", site.op},
                     {"problem", site.problem},
                     {"dtype", site.dtype},
                     {"label", site.label}});
  return {{"model", p.model.spec},
          {"device", p.device_name},
          {"time_kind", p.time_kind},
          {"total_us", p.total_us},
          {"wall_us", p.wall_us},
          {"ceilings", ceilings},
          {"entries", entries},
          {"covered_share", ranking.covered_share},
          {"unknown_share", unknown_share(ranking)},
          {"sites", sites},
          {"notes", p.notes},
          {"projected_speedup", ranking.projected_all}};
}

// What the graph matching found, grouped: "rmsnorm x5 (rmsnorm written out)".
void print_sites(const Profile& p) {
  std::map<std::pair<std::string, std::string>, int> counts;
  for (const auto& site : p.sites) ++counts[{site.op, site.label}];
  std::cout << "operators found in the traced graph:";
  if (counts.empty()) std::cout << " none";
  for (const auto& [key, n] : counts)
    std::cout << "\n  " << key.first << " x" << n << " (" << key.second << ")";
  std::cout << "\n";
  for (const auto& note : p.notes) std::cout << "note: " << note << "\n";
  std::cout << "\n";
}

void print_ranking(const Profile& p, const Ranking& ranking, size_t max_rows) {
  std::cout << "profile of " << p.model.spec << " (input " << nlohmann::json(p.model.input_shape).dump()
            << ", " << p.model.dtype << ") on " << p.device_name << ": " << microseconds(p.total_us)
            << " µs of " << p.time_kind << " per forward pass (wall " << microseconds(p.wall_us)
            << " µs)\n\n";
  print_sites(p);
  std::vector<std::vector<std::string>> rows = {{"#", "operator", "problem", "dtype", "calls", "µs", "share",
                                                 "bound", "roofline µs", "headroom",
                                                 "end-to-end if at roofline"}};
  for (size_t i = 0; i < ranking.entries.size() && i < max_rows; ++i) {
    const RankedEntry& r = ranking.entries[i];
    rows.push_back({std::to_string(i + 1), entry_label(r), r.problem, r.entry.dtype,
                    r.entry.op ? fixed(r.entry.calls, 0) : "", microseconds(r.entry.us),
                    fixed(100 * r.share, 1, "%"), r.op ? r.bound : "",
                    r.op ? microseconds(r.roofline_us) : "", r.op ? fixed(r.headroom, 1, "x") : "",
                    r.op ? fixed(r.projected, 3, "x") : (r.note.empty() ? "" : "not extractable")});
  }
  print_table(std::cout, rows, {true, false, false, false, true, true, true, false, true, true, true});
  if (ranking.entries.size() > max_rows)
    std::cout << "(" << ranking.entries.size() - max_rows
              << " more entries; --rows to see them, --json for all)\n";
  std::cout << "\nunknown (no operator of ours): " << fixed(100 * unknown_share(ranking), 1, "%")
            << " of the time\n"
            << "Amdahl: our operators are " << fixed(100 * ranking.covered_share, 1, "%")
            << " of the time; at their rooflines the model would run " << fixed(ranking.projected_all, 2, "x")
            << " faster end to end\n";
}

int run_profile(const ProfileOptions& o) {
  const bool gpu = backend_of_device(o.device) == Backend::Cuda;
  const std::string device = gpu ? "cuda" : "cpu";
  std::vector<std::string> args = {"profile",
                                   "--model",
                                   o.model,
                                   "--dtype",
                                   o.dtype == "auto" ? (gpu ? "fp16" : "fp32") : o.dtype,
                                   "--device",
                                   device,
                                   "--workspace",
                                   o.workspace,
                                   "--iterations",
                                   std::to_string(o.iterations)};
  if (!o.input_shape.empty()) args.insert(args.end(), {"--input-shape", o.input_shape});
  run_bridge(args, std::chrono::seconds(o.timeout_s));

  const Profile profile = read_profile(o.workspace);
  if (!o.ship.empty()) {  // bench/gpu_bridge.sh: a profile to keep in the repository
    std::filesystem::create_directories(o.ship);
    auto document = nlohmann::json::parse(read_text_file(std::filesystem::path(o.workspace) / kProfileFile));
    document.erase("trace");  // the trace stays in the workspace
    write_file_atomically(std::filesystem::path(o.ship) / shipped_name(profile), document.dump(1) + "\n");
  }
  auto runtime = make_runtime(profile.backend());
  const Ceilings ceilings = device_ceilings(*runtime);
  const Ranking ranking = rank_profile(profile, ceilings);
  if (o.json) {
    std::cout << ranking_json(profile, ranking, ceilings).dump(2) << "\n";
    return 0;
  }
  print_ranking(profile, ranking, static_cast<size_t>(o.rows));
  std::cout << "profile: " << o.workspace << "/profile.json; trace (Perfetto): " << o.workspace
            << "/profile/trace.json\nnext: autokernel extract --workspace " << o.workspace << "\n";
  return 0;
}

}  // namespace

Command profile_command() {
  return {"profile", "profile a PyTorch model, rank its operators by GPU time and print the Amdahl plan",
          [](CLI::App& app) -> Run {
            auto o = std::make_shared<ProfileOptions>();
            app.add_option("--model", o->model,
                           "llama, llama-7b, gpt2, bert (or *-tiny), or path/to/file.py:Class")
                ->required();
            app.add_option("--input-shape", o->input_shape,
                           "e.g. 8,512 (batch, tokens); default: the model's own");
            app.add_option("--dtype", o->dtype, "fp16, bf16, fp32 (default fp16 on a GPU, fp32 on the CPU)")
                ->check(CLI::IsMember({"auto", "fp16", "bf16", "fp32"}));
            app.add_option("--device", o->device, "cuda, cpu, or auto")
                ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
            app.add_option("--workspace", o->workspace, "where profile.json and the trace go")
                ->capture_default_str();
            app.add_option("--iterations", o->iterations, "forward passes profiled (after two warm-ups)")
                ->check(CLI::PositiveNumber);
            app.add_option("--rows", o->rows, "rows of the table")->check(CLI::PositiveNumber);
            app.add_option("--timeout", o->timeout_s, "seconds the model may take in all")
                ->check(CLI::PositiveNumber);
            app.add_option("--ship", o->ship,
                           "also write the profile into this directory under its shipped name "
                           "(python/autokernel/profiles/ is where extract --model finds them)");
            app.add_flag("--json", o->json, "print the ranking as JSON");
            return [o] { return run_profile(*o); };
          }};
}

}  // namespace ak::cli
