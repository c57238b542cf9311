#include "loop/proposer.h"

#include "core/error.h"
#include "core/paths.h"
#include "search/agent.h"

namespace ak {
namespace {

class SearchProposer final : public Proposer {
 public:
  explicit SearchProposer(std::unique_ptr<Strategy> strategy) : strategy_(std::move(strategy)) {}
  bool lookahead() const override { return true; }
  std::optional<Proposal> next(const ProposerContext& context) override {
    auto config = strategy_->next(context.history);
    if (!config) return std::nullopt;
    return Proposal{*config, false, std::nullopt, std::string(strategy_->name())};
  }

 private:
  std::unique_ptr<Strategy> strategy_;
};

std::string read_playbook() {
  const auto path = project_dir() / "docs" / "playbook.md";
  return std::filesystem::exists(path) ? read_text_file(path) : std::string();
}

class AgentProposer final : public Proposer {
 public:
  explicit AgentProposer(AgentSettings settings)
      : settings_(std::move(settings)), playbook_(read_playbook()) {}
  bool lookahead() const override { return false; }

  std::optional<Proposal> next(const ProposerContext& context) override {
    AgentContext prompt_context;
    prompt_context.op = settings_.op;
    prompt_context.problem = settings_.problem;
    prompt_context.dtype = settings_.dtype;
    prompt_context.kernel = context.source;
    prompt_context.playbook = playbook_;
    prompt_context.last_report = context.last_report;
    prompt_context.best_us = context.kernel->best_us;
    prompt_context.roofline_fraction = context.kernel->best_roofline;
    for (const Trial& t : context.history)
      if (!t.pending)
        prompt_context.history.push_back(
            {0, t.ok ? "PASS" : "FAIL", "", t.seconds * 1e6, to_string(t.config)});
    const AgentOutcome outcome = run_agent(
        {settings_.command, context.source, agent_prompt(prompt_context), settings_.timeout, settings_.op});

    Proposal proposal;
    proposal.edits_source = true;
    proposal.note = "agent: " + to_string(outcome.status);
    if (outcome.status != AgentStatus::Edited) {
      ExperimentResult failure;
      failure.status = Status::Error;
      failure.stage = "agent";
      failure.reason = "agent " + to_string(outcome.status) + ": " + outcome.detail;
      failure.total_seconds = outcome.seconds;
      proposal.failure = failure;
      return proposal;
    }
    // Keep the kept configuration when the edited file still declares every one of its values.
    try {
      const TuneSpace space = parse_tune_space(read_text_file(context.source));
      proposal.config = parse_config(to_string(settings_.kept_config), space);
    } catch (const Error&) {
      proposal.config = {};
    }
    return proposal;
  }

 private:
  AgentSettings settings_;
  std::string playbook_;
};

}  // namespace

std::unique_ptr<Proposer> make_search_proposer(const std::string& strategy, std::vector<Config> feasible,
                                               uint64_t seed) {
  return std::make_unique<SearchProposer>(make_strategy(strategy, std::move(feasible), seed));
}

std::unique_ptr<Proposer> make_agent_proposer(AgentSettings settings) {
  return std::make_unique<AgentProposer>(std::move(settings));
}

}  // namespace ak
