// `autokernel ops`: the operators a kernel can implement — their dimensions, parameters and
// default problem — and, with --signature, exactly what a kernel receives for one problem (the
// ABI order of inputs, outputs and scalars), which the Python bridge's op table is tested against.
#include <iostream>

#include "autokernel/abi.h"
#include "cli/command.h"
#include "cli/print.h"
#include "core/registry.h"

namespace ak::cli {
namespace {

struct OpsOptions {
  std::string signature, shape, dtype = "fp16";
  bool json = false;
};

nlohmann::json tensors_json(const std::vector<TensorSpec>& specs) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& t : specs)
    j.push_back({{"name", t.name}, {"dtype", to_string(t.dtype)}, {"shape", t.shape}});
  return j;
}

int print_signature(const OpsOptions& o) {
  const Op& op = find_op(o.signature);
  const Problem problem = o.shape.empty() ? op.default_problem() : parse_problem(o.shape);
  op.validate(problem);
  const Signature s = op.signature(problem, parse_dtype(o.dtype));
  const nlohmann::json j = {{"op", op.name()},
                            {"problem", problem.to_string()},
                            {"dtype", o.dtype},
                            {"inputs", tensors_json(s.inputs)},
                            {"outputs", tensors_json(s.outputs)},
                            {"scalars", s.scalars},
                            {"workspace", s.workspace ? tensors_json({*s.workspace})[0] : nlohmann::json()}};
  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << op.name() << " " << problem.to_string() << " " << o.dtype << "\n";
  for (const auto& t : s.inputs) std::cout << "  in   " << t.to_string() << "\n";
  for (const auto& t : s.outputs) std::cout << "  out  " << t.to_string() << "\n";
  for (double v : s.scalars) std::cout << "  scalar " << v << "\n";
  if (s.workspace) std::cout << "  work " << s.workspace->to_string() << "\n";
  return 0;
}

int run_ops(const OpsOptions& o) {
  if (!o.signature.empty()) return print_signature(o);
  nlohmann::json ops = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows = {{"operator", "dims", "params", "default problem", "what"}};
  for (const auto& op : all_ops()) {
    std::string dims, params;
    for (const auto& d : op->dim_names()) dims += (dims.empty() ? "" : "x") + d;
    nlohmann::json param_json = nlohmann::json::object();
    for (const auto& [name, value] : op->param_defaults()) {
      params += (params.empty() ? "" : ",") + name + "=" + fixed(value, 0);
      param_json[name] = value;
    }
    rows.push_back({std::string(op->name()), dims, params, op->default_problem().to_string(),
                    std::string(op->summary())});
    ops.push_back({{"name", op->name()},
                   {"summary", op->summary()},
                   {"dims", op->dim_names()},
                   {"params", param_json},
                   {"default_problem", op->default_problem().to_string()}});
  }
  if (o.json) {
    const nlohmann::json abi = {
        {"version", AK_ABI_VERSION}, {"sizeof_call", sizeof(ak_call)}, {"sizeof_tensor", sizeof(ak_tensor)}};
    std::cout << nlohmann::json{{"abi", abi}, {"ops", ops}}.dump(2) << "\n";
    return 0;
  }
  print_table(std::cout, rows, {false, false, false, false, false});
  return 0;
}

}  // namespace

Command ops_command() {
  return {
      "ops", "list the operators, or show what a kernel of one receives (--signature OP)",
      [](CLI::App& app) -> Run {
        auto o = std::make_shared<OpsOptions>();
        app.add_option("--signature", o->signature,
                       "an operator: print its kernel's inputs, outputs, scalars");
        app.add_option("--shape", o->shape, "with --signature: the problem (default: the op's standard one)");
        app.add_option("--dtype", o->dtype, "with --signature: fp16, bf16 or fp32")->capture_default_str();
        app.add_flag("--json", o->json, "print JSON");
        return [o] { return run_ops(*o); };
      }};
}

}  // namespace ak::cli
