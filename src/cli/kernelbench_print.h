// The tables of `autokernel kernelbench`: one evaluation, the map, a run's problems, the scores.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/kernelbench_score.h"

namespace ak::cli::kb {

// "PASS", or "INCORRECT (trial 2 of 5): output 0: relative error 1 > 0.0001".
std::string status_line(const nlohmann::json& record);

// One evaluation: status, correctness, and the timing of the solution beside the baselines.
void print_record(std::ostream& out, const nlohmann::json& record);

// One row per problem of a map or a run, with its evaluation's status and speedup when it has one.
void print_problems(std::ostream& out, const nlohmann::json& problems, const std::string& baseline);

void print_scores(std::ostream& out, const std::vector<LevelScore>& levels, const std::string& baseline);

}  // namespace ak::cli::kb
