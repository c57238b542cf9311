// `autokernel kernelbench list|eval|map|run|score`: KernelBench's problems through our judge.
// eval judges one solution (python/autokernel/kernelbench: a judge process and a separate solution
// process); map finds the problems our operators compute and judges a ModelNew of our kernels for
// them; run is the loop on the problems (our kernels optimized on each problem's shapes, or an
// agent's solutions); score computes fast_p from records.
#include <iostream>

#include "cli/command.h"
#include "cli/kernelbench_bridge.h"
#include "cli/kernelbench_print.h"
#include "cli/kernelbench_run.h"
#include "cli/kernelbench_score.h"
#include "cli/print.h"
#include "core/error.h"
#include "core/paths.h"

namespace ak::cli {
namespace {
namespace fs = std::filesystem;
using kb::LoopOptions;

void add_shrink(CLI::App& app, kb::EvalSettings& e) {
  app.add_option(
         "--shrink", e.shrink,
         "divide every size constant (>= 64) of the problem files by this: a quick run on a small machine")
      ->check(CLI::PositiveNumber);
}

void add_eval_options(CLI::App& app, kb::EvalSettings& e) {
  app.add_option("--device", e.device, "cuda, cpu or auto")->capture_default_str();
  app.add_option("--precision", e.precision, "fp32, fp16 or bf16 (inputs and weights cast)")
      ->capture_default_str();
  app.add_option("--trials", e.trials, "correctness trials on fresh inputs")->check(CLI::PositiveNumber);
  app.add_option("--max-time", e.max_time_s, "seconds of timing rounds per model at most")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-rounds", e.min_rounds, "timing rounds per model at least")
      ->check(CLI::PositiveNumber);
  app.add_option("--call-timeout", e.call_timeout_s, "seconds a call may take before it counts as hung")
      ->check(CLI::PositiveNumber);
  app.add_option("--build-timeout", e.build_timeout_s,
                 "seconds to import and build a solution (and its first call)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", e.timeout_s, "seconds one evaluation may take in all")
      ->check(CLI::PositiveNumber);
  app.add_flag_callback(
      "--no-timing", [&e] { e.timing = false; }, "correctness only");
  add_shrink(app, e);
}

void add_selection(CLI::App& app, LoopOptions& o) {
  app.add_option("--dir", o.dir,
                 "KernelBench problems (levelN/ directories; default $AUTOKERNEL_KERNELBENCH "
                 "or the project's shared copy)");
  app.add_option("--level", o.level, "only this level")->check(CLI::PositiveNumber);
  app.add_option("--problems", o.problems, "only these problem numbers, e.g. 1,23,95");
  app.add_option("--workspace", o.workspace, "per-problem directories and the results")
      ->capture_default_str();
}

Run eval_setup(CLI::App& app) {
  struct Options {
    std::string dir, problem, solution, record;
    kb::EvalSettings eval;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--problem", o->problem, "level1/23_Softmax.py (under --dir) or a problem file")->required();
  app.add_option("--solution", o->solution, "a file defining class ModelNew")->required();
  app.add_option("--dir", o->dir,
                 "KernelBench problems (default $AUTOKERNEL_KERNELBENCH or the shared copy)");
  app.add_option("--baselines", o->eval.baselines, "eager,compile, a subset, or none")->capture_default_str();
  add_eval_options(app, o->eval);
  app.add_option("--record", o->record, "also write the JSON record to this file");
  app.add_flag("--json", o->json, "print the JSON record instead of the table");
  return [o] {
    if (!fs::is_regular_file(o->solution))
      throw Error(ErrorKind::Usage, "solution file not found: " + o->solution);
    kb::make_undumpable();
    const auto record =
        kb::evaluate(kb::problems_dir(o->dir), o->problem, fs::absolute(o->solution), o->eval, !o->json);
    if (!o->record.empty()) kb::write_json(o->record, record);
    if (o->json)
      std::cout << record.dump(2) << "\n";
    else
      kb::print_record(std::cout, record);
    return record["status"] == "PASS" ? 0 : 1;
  };
}

Run list_setup(CLI::App& app) {
  auto o = std::make_shared<LoopOptions>();
  auto json = std::make_shared<bool>(false);
  add_selection(app, *o);
  add_shrink(app, o->eval);
  app.add_flag("--json", *json, "print the problems as JSON");
  return [o, json] {
    o->dir = kb::problems_dir(o->dir);
    const auto problems = kb::list_problems(*o);
    if (*json) {
      std::cout << problems.dump(2) << "\n";
      return 0;
    }
    std::vector<std::vector<std::string>> rows = {{"problem", "inputs"}};
    for (const auto& p : problems) {
      std::string inputs = p.contains("error") ? "error: " + p["error"].get<std::string>() : "";
      for (const auto& i : p.value("inputs", nlohmann::json::array()))
        inputs += (inputs.empty() ? "" : ", ") + i["shape"].dump() + " " + i["dtype"].get<std::string>();
      rows.push_back({p["key"].get<std::string>(), inputs});
    }
    print_table(std::cout, rows, {false, false});
    std::cout << problems.size() << " problems in " << o->dir << "\n";
    return 0;
  };
}

void add_loop_options(CLI::App& app, LoopOptions& o) {
  add_selection(app, o);
  app.add_option("--min-share", o.min_share, "mapped: our operators' share of the reference's time")
      ->capture_default_str();
  app.add_option("--top", o.top, "operators extracted per mapped problem")->check(CLI::PositiveNumber);
  app.add_option("--baselines", o.eval.baselines,
                 "timed beside the solution: eager,compile, a subset, or none")
      ->capture_default_str();
  app.add_option("--baseline", o.baseline, "what fast_p compares with: eager or compile")
      ->check(CLI::IsMember({"eager", "compile"}));
  add_eval_options(app, o.eval);
}

// Map and run end alike: the rows and the scores to a file, then the table (or the JSON).
int finish(const LoopOptions& o, const nlohmann::json& rows, const std::string& what, bool json) {
  const auto summary = kb::summarize(rows, o.baseline);
  kb::write_json(fs::path(o.workspace) / ("kernelbench-" + what + ".json"), summary);
  if (json) {
    std::cout << summary.dump(2) << "\n";
    return 0;
  }
  kb::print_problems(std::cout, rows, o.baseline);
  std::vector<kb::Scored> attempted;
  for (const auto& row : rows)
    if (row.contains("record")) attempted.push_back(kb::scored(row["record"], o.baseline));
  std::cout << "\n";
  if (attempted.empty())
    std::cout << "no problem attempted\n";
  else
    kb::print_scores(std::cout, kb::score(attempted, {0, 1, 2}), o.baseline);
  std::cout << "rows and scores: " << (fs::path(o.workspace) / ("kernelbench-" + what + ".json")).string()
            << "\n";
  return 0;
}

Run map_setup(CLI::App& app) {
  auto o = std::make_shared<LoopOptions>();
  auto json = std::make_shared<bool>(false);
  o->eval.baselines = "eager";
  add_loop_options(app, *o);
  app.add_flag_callback(
      "--no-eval", [o] { o->evaluate = false; }, "only map: no kernels built, nothing judged");
  app.add_flag("--json", *json, "print the rows and scores as JSON");
  return [o, json] {
    o->dir = kb::problems_dir(o->dir);
    o->progress = true;
    kb::make_undumpable();
    auto document = kb::map_problems(*o);
    auto& rows = document["problems"];
    if (o->evaluate)
      for (auto& row : rows)
        if (row.value("mapped", false)) kb::solve_with_ours(*o, document["device"]["type"], row);
    return finish(*o, rows, "map", *json);
  };
}

Run run_setup(CLI::App& app) {
  auto o = std::make_shared<LoopOptions>();
  auto json = std::make_shared<bool>(false);
  o->proposer = "search";
  o->eval.baselines = "eager";
  add_loop_options(app, *o);
  app.add_option("--proposer", o->proposer,
                 "search (our kernels, optimized on each problem's shapes) or agent")
      ->check(CLI::IsMember({"search", "agent"}));
  app.add_option("--agent-cmd", o->agent_cmd,
                 "with --proposer agent: a shell command that writes $AK_KB_SOLUTION");
  app.add_option("--agent-timeout", o->agent_timeout_s, "seconds per agent attempt")
      ->check(CLI::PositiveNumber);
  app.add_option("--attempts", o->attempts,
                 "agent attempts per problem (the next one is told the last failure)")
      ->check(CLI::PositiveNumber);
  auto budget = std::make_shared<std::string>();
  auto quick = std::make_shared<bool>(false);
  app.add_option("--budget", *budget,
                 "with --proposer search: the loop's budget per problem (e.g. 20 or 5m)");
  app.add_flag("--quick", *quick, "with --proposer search: the loop's quick experiments");
  app.add_flag("--json", *json, "print the rows and scores as JSON");
  return [o, json, budget, quick] {
    if (o->proposer == "agent" && o->agent_cmd.empty())
      throw Error(ErrorKind::Usage, "--proposer agent needs --agent-cmd");
    if (!budget->empty()) o->optimize_args.insert(o->optimize_args.end(), {"--budget", *budget});
    if (*quick) o->optimize_args.push_back("--quick");
    o->dir = kb::problems_dir(o->dir);
    kb::make_undumpable();
    nlohmann::json rows;
    if (o->proposer == "agent") {
      rows = kb::discover_problems(*o);
      for (auto& row : rows) kb::solve_with_agent(*o, row);
    } else {
      auto document = kb::map_problems(*o);
      rows = document["problems"];
      for (auto& row : rows)
        if (row.value("mapped", false)) kb::solve_with_ours(*o, document["device"]["type"], row);
    }
    return finish(*o, rows, "run", *json);
  };
}

// Every record in a file or under a directory (eval.json files): a record itself, or the rows of a
// map or run summary.
void collect_records(const fs::path& path, nlohmann::json& records) {
  if (fs::is_directory(path)) {
    for (const auto& entry : fs::recursive_directory_iterator(path))
      if (entry.path().filename() == "eval.json") collect_records(entry.path(), records);
    return;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Usage, path.string() + " is not JSON: " + e.what());
  }
  if (j.is_object() && j.contains("problems")) {
    for (const auto& row : j["problems"])
      if (row.contains("record")) records.push_back(row["record"]);
  } else {
    records.push_back(j);
  }
}

Run score_setup(CLI::App& app) {
  auto paths = std::make_shared<std::vector<std::string>>();
  auto baseline = std::make_shared<std::string>("eager");
  auto json = std::make_shared<bool>(false);
  app.add_option("records", *paths, "eval records, map/run summaries, or directories holding eval.json files")
      ->required();
  app.add_option("--baseline", *baseline, "eager or compile")->check(CLI::IsMember({"eager", "compile"}));
  app.add_flag("--json", *json, "print the scores as JSON");
  return [paths, baseline, json] {
    nlohmann::json records = nlohmann::json::array();
    for (const auto& p : *paths) {
      if (!fs::exists(p)) throw Error(ErrorKind::Usage, "no such file or directory: " + p);
      collect_records(p, records);
    }
    std::vector<kb::Scored> scored;
    for (const auto& r : records) scored.push_back(kb::scored(r, *baseline));
    if (scored.empty()) throw Error(ErrorKind::Usage, "no evaluation records found");
    const auto levels = kb::score(scored, {0, 1, 2});
    if (*json)
      std::cout << kb::to_json(levels, *baseline).dump(2) << "\n";
    else
      kb::print_scores(std::cout, levels, *baseline);
    return 0;
  };
}

}  // namespace

Command kernelbench_command() {
  return {"kernelbench", "KernelBench problems through our judge: eval, map, run (the loop) and fast_p",
          [](CLI::App& app) -> Run {
            app.require_subcommand(1);
            auto runs = std::make_shared<std::vector<std::pair<CLI::App*, Run>>>();
            const std::vector<std::pair<std::string, std::string>> subcommands = {
                {"list", "the problems of a KernelBench directory and their inputs"},
                {"eval", "judge one solution (class ModelNew) against a problem: correctness, then time"},
                {"map", "which problems our operators compute; judge a ModelNew of our kernels for those"},
                {"run", "the loop on KernelBench problems (our kernels optimized, or an agent), and fast_p"},
                {"score", "fast_0, fast_1, fast_2 per level from evaluation records"}};
            const std::vector<Run (*)(CLI::App&)> setups = {list_setup, eval_setup, map_setup, run_setup,
                                                            score_setup};
            for (size_t i = 0; i < subcommands.size(); ++i) {
              CLI::App* sub = app.add_subcommand(subcommands[i].first, subcommands[i].second);
              runs->emplace_back(sub, setups[i](*sub));
            }
            return [runs] {
              for (auto& [sub, run] : *runs)
                if (sub->parsed()) return run();
              return 2;
            };
          }};
}

}  // namespace ak::cli
