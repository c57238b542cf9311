#include "profile/starter_fit.h"

#include <filesystem>

#include "core/paths.h"
#include "core/problem.h"
#include "core/registry.h"
#include "loop/plan.h"
#include "search/tune_space.h"

namespace ak {

std::optional<std::string> starter_refusal(std::string_view kind, const std::string& op,
                                           const std::string& problem) {
  const auto starter = starter_path(kind, op);
  if (!std::filesystem::exists(starter)) return std::nullopt;
  const TuneSpace space = parse_tune_space(read_text_file(starter));
  if (!feasible_configs(space, problem_symbols(find_op(op), parse_problem(problem)), kMaxTuneConfigs).empty())
    return std::nullopt;
  return "the " + std::string(kind) + " starter of " + op + " takes no " + problem +
         ": no configuration of its @tune space meets its @require rules there";
}

void drop_refused_ops(nlohmann::json& row, Backend backend, double min_share) {
  if (!row.contains("ops") || !row.contains("total_us") || row.contains("error")) return;
  nlohmann::json kept = nlohmann::json::array(), refused = nlohmann::json::array();
  double ours_us = 0;
  for (const auto& op : row["ops"]) {
    if (auto why = starter_refusal(to_string(backend), op.at("op"), op.at("problem"))) {
      refused.push_back(*why);
      continue;
    }
    ours_us += op.value("us", 0.0);
    kept.push_back(op);
  }
  if (refused.empty()) return;
  const double total = row["total_us"].get<double>();
  row["ops"] = kept;
  row["refused"] = refused;
  row["share"] = total > 0 ? ours_us / total : 0.0;
  row["mapped"] = row["share"].get<double>() >= min_share;
}

}  // namespace ak
