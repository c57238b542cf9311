// `autokernel extract`: the profile's top operators as standalone kernels. Each becomes a
// directory workspace/kernels/<name>/ holding the backend's starter for the operator, and
// plan.json lists them with the model's exact problem and dtype (the primary problem the loop
// times and the harness adds to its sweep) and their share of the model's time.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "loop/plan.h"
#include "profile/ranking.h"

namespace ak {

// "matmul_4096x2304x768_fp16", "flash_attention_8x12x512x64_causal1_kv_heads4_bf16".
std::string kernel_name(const RankedEntry& entry);

// Writes the top `top` extractable entries (by time) into the workspace and returns the plan.
// `kinds` are the starters of each entry (plan.h starter_kinds; empty: the backend's own); with
// two, each entry gets both, the second named <name>_<kind> (alternatives of one slot). A starter
// that takes no configuration at an entry's problem (plan.h starter_refusal) is left out, and the
// entry too when no starter takes it; `passed_over` (when given) gets a line for each.
// Throws Error(Usage) when the workspace already holds a run (a new one needs a new workspace),
// or when the profile has nothing of ours to extract.
Plan extract_plan(const std::filesystem::path& workspace, const Profile& profile, const Ranking& ranking,
                  size_t top, Backend backend, const std::vector<std::string>& kinds = {},
                  std::vector<std::string>* passed_over = nullptr);

}  // namespace ak
