// `autokernel tune FILE --op OP`: searches the kernel's declared @tune space. Candidates compile
// in parallel on CPU threads ahead of the device, which runs one isolated experiment at a time.
// A winner other than the first configuration is then timed again against it in alternating
// rounds (search/confirm.h), and recommended only where every round confirms the gain.
#include <chrono>
#include <deque>
#include <future>
#include <iomanip>
#include <iostream>
#include <optional>
#include <thread>
#include <utility>

#include "cli/command.h"
#include "cli/print.h"
#include "cli/target.h"
#include "core/error.h"
#include "core/paths.h"
#include "harness/experiment_server.h"
#include "harness/results_log.h"
#include "search/budget.h"
#include "search/confirm.h"
#include "search/strategy.h"
#include "search/tune_space.h"

namespace ak::cli {
namespace {

struct TuneOptions {
  TargetOptions target;
  std::string strategy = "exhaustive";
  std::string budget;
  int jobs = 0;
  int confirm_rounds = 5;  // 5 rounds: drift alone puts the winner ahead in all five 1 time in 32
};

// The least gain a confirmation accepts: below 1% a configuration is not worth a user's change.
constexpr double kConfirmMinGain = 0.01;

struct Finished {
  Config config;
  ExperimentResult result;
};

std::string shown(const Config& config) {
  return config.empty() ? "(defaults)" : to_string(config);
}

nlohmann::json to_json_row(const Finished& f) {
  nlohmann::json j = f.result;
  j["config"] = to_string(f.config);
  return j;
}

void print_row(size_t index, size_t total, size_t width, const Finished& f) {
  std::cout << "[" << index << "/" << total << "] " << std::left << std::setw(static_cast<int>(width) + 2)
            << shown(f.config) << summary_line(f.result) << std::endl;
}

const Finished* best_of(const std::vector<Finished>& done) {
  const Finished* best = nullptr;
  for (const auto& f : done)
    if (f.result.passed() && (!best || f.result.timing.median_us < best->result.timing.median_us)) best = &f;
  return best;
}

// `first` and `best` timed again, `rounds` times each, alternating which goes first in a round. A
// confirming run that does not pass ends it unconfirmed: a winner that passes once is no winner.
// Every run goes to the results table as a "tune-confirm" row.
Confirmation confirm_best(const Finished& first, const Finished& best, const Target& target,
                          const TuneOptions& o) {
  if (!o.target.json)
    std::cout << "\nconfirming: the first and the best timed again in " << o.confirm_rounds
              << " rounds, alternating which goes first" << std::endl;
  const BuiltCandidate first_built = build_candidate({target.source, first.config}, target.evaluate);
  const BuiltCandidate best_built = build_candidate({target.source, best.config}, target.evaluate);
  std::vector<ConfirmRound> rounds;
  for (int r = 0; r < o.confirm_rounds; ++r) {
    ConfirmRound round;
    for (int turn = 0; turn < 2; ++turn) {
      const bool best_turn = (turn == 0) == (r % 2 == 1);
      const Finished& which = best_turn ? best : first;
      const ExperimentResult result =
          run_candidate(best_turn ? best_built : first_built, target.evaluate, [](std::string_view) {});
      append_result(o.target.results, {"tune-confirm", o.target.file, to_string(which.config),
                                       target.device_name, &target.evaluate.request, &result});
      if (!result.passed())
        return {std::move(rounds), 0, false,
                std::string(best_turn ? "the best" : "the first") +
                    " configuration did not pass a confirming run (" + to_string(result.status) + ": " +
                    result.reason + ")"};
      (best_turn ? round.best_us : round.first_us) = result.timing.median_us;
    }
    rounds.push_back(round);
    if (!o.target.json)
      std::cout << "  round " << r + 1 << ": first " << round.first_us << " us, best " << round.best_us
                << " us" << std::endl;
  }
  return judge_confirmation(std::move(rounds), kConfirmMinGain);
}

nlohmann::json to_json(const Confirmation& c) {
  nlohmann::json rounds = nlohmann::json::array();
  for (const auto& r : c.rounds) rounds.push_back({{"first_us", r.first_us}, {"best_us", r.best_us}});
  return {{"rounds", rounds}, {"gain", c.gain}, {"confirmed", c.confirmed}, {"why", c.why}};
}

int run_tune(const TuneOptions& o) {
  Target target = resolve_target(o.target);
  ExperimentServer server;  // one for the whole run: the plan's cases are prepared once, not per candidate
  target.evaluate.server = &server;
  const TuneSpace space = parse_tune_space(read_text_file(target.source));
  const auto feasible =
      feasible_configs(space, problem_symbols(*target.op, target.evaluate.request.problem), kMaxTuneConfigs);
  if (feasible.empty())
    throw Error(ErrorKind::Usage,
                "no configuration of " + o.target.file + " satisfies its @require lines for this problem");
  const Budget budget = parse_budget(o.budget, feasible.size());
  auto strategy = make_strategy(o.strategy, feasible, o.target.seed);
  const size_t total = std::min(feasible.size(), budget.experiments);
  const int jobs = o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (!o.target.json) {
    std::cout << "tuning " << o.target.file << " (" << target.evaluate.request.op << ", "
              << target.evaluate.request.problem.to_string() << " "
              << to_string(target.evaluate.request.dtype) << ") on " << target.device_name << ": "
              << feasible.size() << " feasible of " << space.size() << " configurations, strategy "
              << o.strategy << ", up to " << total << " experiments";
    if (o.confirm_rounds > 0)
      std::cout << ", then up to " << 2 * o.confirm_rounds << " confirming the best against the first";
    std::cout << "\n";
  }

  size_t width = 0;  // of the config column: the longest configuration's text
  for (const auto& c : feasible) width = std::max(width, to_string(c).size());
  // Pending trials join the history as not-ok until they finish, so no strategy proposes them twice.
  std::vector<Trial> history;
  std::vector<Finished> done;
  std::deque<std::pair<Config, std::future<BuiltCandidate>>> pipeline;
  const auto start = std::chrono::steady_clock::now();
  auto over_budget = [&] {
    return done.size() >= total || std::chrono::steady_clock::now() - start >= budget.duration;
  };
  // The file's own defaults first, when they are a feasible point: "gain over the first" is then
  // the gain over the kernel as written, and `--budget 1` times exactly that.
  auto defaults = default_config(read_text_file(target.source), space);
  if (defaults && std::find(feasible.begin(), feasible.end(), *defaults) == feasible.end()) defaults.reset();
  auto refill = [&] {
    while (static_cast<int>(pipeline.size()) < jobs && done.size() + pipeline.size() < total) {
      auto next = defaults ? std::exchange(defaults, std::nullopt) : strategy->next(history);
      if (!next) break;
      history.push_back({*next, false, 0, true});
      Candidate candidate{target.source, *next};
      pipeline.emplace_back(*next, std::async(std::launch::async, [candidate, &target] {
        return build_candidate(candidate, target.evaluate);
      }));
    }
  };
  refill();
  while (!pipeline.empty() && !over_budget()) {
    auto [config, future] = std::move(pipeline.front());
    pipeline.pop_front();
    const BuiltCandidate built = future.get();
    refill();
    Finished f{config, run_candidate(built, target.evaluate, [](std::string_view) {})};
    for (auto& t : history)
      if (t.config == config) t = {config, f.result.passed(), f.result.timing.median_us * 1e-6, false};
    append_result(o.target.results, {"tune", o.target.file, to_string(config), target.device_name,
                                     &target.evaluate.request, &f.result});
    done.push_back(std::move(f));
    if (!o.target.json) print_row(done.size(), total, width, done.back());
  }
  for (auto& [config, future] : pipeline) future.wait();  // let in-flight compiles finish into the cache

  const Finished* best = best_of(done);
  const Finished& first = done.front();
  const double gain =
      best && first.result.passed() ? first.result.timing.median_us / best->result.timing.median_us : 0;
  // What to use: the winner, unless it beat a passing first configuration only in the search's
  // single readings and its confirmation says otherwise.
  std::optional<Confirmation> confirmation;
  if (best && best != &first && first.result.passed() && o.confirm_rounds > 0)
    confirmation = confirm_best(first, *best, target, o);
  const Finished* recommended = confirmation && !confirmation->confirmed ? &first : best;
  if (o.target.json) {
    nlohmann::json j = {{"op", target.evaluate.request.op}, {"kernel", o.target.file},
                        {"device", target.device_name},     {"strategy", o.strategy},
                        {"feasible", feasible.size()},      {"experiments", done.size()}};
    j["trials"] = nlohmann::json::array();
    for (const auto& f : done) j["trials"].push_back(to_json_row(f));
    j["best"] = best ? to_json_row(*best) : nlohmann::json(nullptr);
    j["gain_over_first"] = gain;  // the search's single readings; the confirmation's gain is the one to quote
    j["confirmation"] = confirmation ? to_json(*confirmation) : nlohmann::json(nullptr);
    j["recommended"] = recommended ? nlohmann::json(to_string(recommended->config)) : nlohmann::json(nullptr);
    std::cout << j.dump(2) << "\n";
  } else if (best) {
    std::cout << "\nbest: " << shown(best->config) << "\n  " << summary_line(best->result) << "\n";
    if (gain > 0)
      std::cout << "  " << std::fixed << std::setprecision(2) << gain
                << "x faster than the first configuration (" << to_string(first.config) << ", "
                << first.result.timing.median_us << " us) in the search's readings\n";
    if (confirmation)
      std::cout << (confirmation->confirmed ? "confirmed: " : "not confirmed: ") << confirmation->why << "\n";
    std::cout << "recommended: " << shown(recommended->config) << "\n";
  } else {
    std::cout << "\nno configuration passed the harness\n";
  }
  return best ? 0 : 1;
}

}  // namespace

Command tune_command() {
  return {"tune", "search a kernel's @tune space and print the best configuration", [](CLI::App& app) -> Run {
            auto o = std::make_shared<TuneOptions>();
            o->target.add_to(app);
            app.add_option("--strategy", o->strategy,
                           "search strategy (default exhaustive):" + strategies_help());
            app.add_option("--budget", o->budget,
                           "experiments (e.g. 20) or time (e.g. 90s, 10m, 1h); default: the whole space");
            app.add_option("--jobs", o->jobs, "parallel compiles (default: hardware threads)");
            app.add_option("--confirm-rounds", o->confirm_rounds,
                           "rounds that time the best and the first configuration again, alternating, "
                           "before the best is recommended (default 5; 0: none)")
                ->check(CLI::Range(0, 50));
            return [o] { return run_tune(*o); };
          }};
}

}  // namespace ak::cli
