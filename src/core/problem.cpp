#include "core/problem.h"

#include <charconv>
#include <sstream>

#include "core/error.h"

namespace ak {

double Problem::param(const std::string& name, double fallback) const {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

int64_t Problem::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string Problem::to_string() const {
  std::ostringstream out;
  for (size_t i = 0; i < dims.size(); ++i) out << (i ? "x" : "") << dims[i];
  bool first = true;
  for (const auto& [name, value] : params) {
    out << (first ? ":" : ",") << name << "=" << value;
    first = false;
  }
  return out.str();
}

namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

template <typename T>
T parse_number(std::string_view part, std::string_view whole) {
  T value{};
  auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || ptr != part.data() + part.size())
    throw Error(ErrorKind::Usage,
                "bad shape '" + std::string(whole) + "': '" + std::string(part) +
                    "' is not a number (expected e.g. 8192x8192 or 4x32x4096x128:causal=0)");
  return value;
}

}  // namespace

Problem parse_problem(std::string_view text) {
  Problem problem;
  const size_t colon = text.find(':');
  for (std::string_view part : split(text.substr(0, colon), 'x')) {
    const auto dim = parse_number<int64_t>(part, text);
    if (dim <= 0)
      throw Error(ErrorKind::Usage, "bad shape '" + std::string(text) + "': dimensions must be positive");
    problem.dims.push_back(dim);
  }
  if (colon != std::string_view::npos) {
    for (std::string_view assignment : split(text.substr(colon + 1), ',')) {
      const size_t eq = assignment.find('=');
      if (eq == std::string_view::npos || eq == 0)
        throw Error(ErrorKind::Usage,
                    "bad shape parameter '" + std::string(assignment) + "' (expected name=value)");
      problem.params[std::string(assignment.substr(0, eq))] =
          parse_number<double>(assignment.substr(eq + 1), text);
    }
  }
  return problem;
}

}  // namespace ak
