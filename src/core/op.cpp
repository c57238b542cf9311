#include "core/op.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace ak {

Tolerance default_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16: return {1e-2, 1e-2, 1e-2};
    case DType::BF16: return {2e-2, 2e-2, 2e-2};
    default: return {1e-4, 1e-4, 1e-5};
  }
}

Tolerance Op::tolerance(DType dtype) const {
  return default_tolerance(dtype);
}

Problem Op::units_problem(const Problem& problem, int64_t count) const {
  Problem part = problem;
  part.dims.at(0) = count;
  return part;
}

void Op::validate(const Problem& problem) const {
  const auto names = dim_names();
  auto usage = [&](const std::string& what) {
    return Error(ErrorKind::Usage, std::string(name()) + ": " + what);
  };
  if (problem.dims.size() != names.size()) {
    std::ostringstream out;
    out << "expected " << names.size() << " dimensions (";
    for (size_t i = 0; i < names.size(); ++i) out << (i ? "x" : "") << names[i];
    out << "), got '" << problem.to_string() << "'";
    throw usage(out.str());
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (problem.dims[i] <= 0) throw usage(names[i] + " must be positive, got '" + problem.to_string() + "'");
  const auto known = param_defaults();
  for (const auto& entry : problem.params) {
    const std::string& param = entry.first;  // a named variable: lambdas may not capture bindings (clang 14)
    if (std::any_of(known.begin(), known.end(), [&](const auto& k) { return k.first == param; })) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k.first;
    throw usage("unknown parameter '" + param + "' (known: " + (list.empty() ? "none" : list) + ")");
  }
  validate_rules(problem);
}

}  // namespace ak
