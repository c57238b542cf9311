// A problem instance of an operator: its dimensions (named by the op, e.g. M x N) and optional
// named parameters (e.g. causal=0). Written and parsed as "8192x8192" or "4x32x4096x128:causal=0".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ak {

struct Problem {
  std::vector<int64_t> dims;
  std::map<std::string, double> params;

  double param(const std::string& name, double fallback) const;
  int64_t numel() const;  // product of dims
  std::string to_string() const;
  bool operator==(const Problem&) const = default;
};

Problem parse_problem(std::string_view text);  // throws Error(Usage) naming the bad part

}  // namespace ak
