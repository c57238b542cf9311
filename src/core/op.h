// The operator contract. One subclass per operator in src/ops/<op>.cpp, registered in the one
// table of registry.cpp. An op says what a kernel receives (signature), on which problems each
// correctness stage runs, how inputs are drawn (random and adversarial), what the exact answer
// is (a float64 reference), how much work it is (FLOPs and bytes) and how close is close enough.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/problem.h"
#include "core/tensor.h"

namespace ak {

// Everything a kernel is called with for one problem and dtype, in ABI order.
struct Signature {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<double> scalars;
  // Scratch every caller hands the kernel (ak_call::workspace), e.g. an intermediate that two
  // launches pass between them; none for most operators.
  std::optional<TensorSpec> workspace = {};
};

// Problems for each correctness stage. The harness adds the user's (or model's) own problem to
// the sweep, and runs every sweep and edge problem in each of fp16, bf16 and fp32.
struct StageProblems {
  Problem smoke;                   // small, fast, catches gross errors
  std::vector<Problem> sweep;      // 8+ realistic shapes
  std::vector<Problem> stability;  // problems the adversarial cases run on
  std::vector<Problem> edge;       // non-multiples of 16 and of block sizes, one row, tiny, huge rows
};

// Acceptance thresholds. An output passes when every element satisfies
//   |out - ref| <= atol * rms(ref) + rtol * |ref|
// and the whole tensor satisfies ||out - ref||_2 / ||ref||_2 <= norm_rtol.
// The norm test is why an all-zeros output never passes (its relative error is 1).
struct Tolerance {
  double rtol;
  double atol;
  double norm_rtol;
};

// How a problem splits into independent units: rows, or (batch, head-group) planes. Each tensor
// holds `elements` contiguous elements per unit, units in order, or is shared by every unit (0).
// A unit of every output depends only on the same unit of every input and on the shared inputs
// (a shared output, a mean over units, depends on all). The timing draws new contents for the
// units of every launch and computes the reference of the few units it checks (drawn_inputs.h).
struct UnitLayout {
  int64_t count = 1;
  std::vector<int64_t> inputs, outputs;  // elements per unit, 0 = shared
};

// The input cases of the stability stage; "random" is the ordinary case of every other stage.
inline constexpr std::string_view kRandomCase = "random";

class Op {
 public:
  virtual ~Op() = default;

  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;
  // Names of the problem dimensions in order ("M", "N"); also the symbols @require may use.
  virtual std::vector<std::string> dim_names() const = 0;
  // Named parameters a problem may set (e.g. "causal"), with their defaults.
  virtual std::vector<std::pair<std::string, double>> param_defaults() const { return {}; }

  // Throws Error(Usage) with a one-line reason if the op cannot take this problem: the rank and
  // positive dimensions of dim_names(), only parameters of param_defaults(), then validate_rules.
  void validate(const Problem& problem) const;
  virtual Signature signature(const Problem& problem, DType dtype) const = 0;

  // The standard benchmark problem (the shapes of ../shared/REFERENCE-SYSTEM.md).
  virtual Problem default_problem() const = 0;
  virtual StageProblems stage_problems() const = 0;
  // The stage problems for an experiment timed on `primary`: by default the fixed set; an op
  // whose parameter changes how its inputs are laid out (matmul's b_nk) carries it over, so that
  // every stage checks the layout the kernel will be called with.
  virtual StageProblems stage_problems_like(const Problem& /*primary*/) const { return stage_problems(); }

  // Adversarial cases for the stability stage (e.g. "large", "near_constant", "dominant").
  virtual std::vector<std::string> stability_cases() const = 0;
  // Fills `inputs` (already shaped per signature) with values for `input_case`; values must be
  // representable in the tensor's dtype after rounding (the harness rounds them).
  virtual void generate(const Problem& problem, std::string_view input_case, std::mt19937_64& rng,
                        std::vector<Values>& inputs) const = 0;

  // Computes the outputs in float64 from the (already dtype-rounded) inputs, in parallel
  // (core/parallel.h). A "row" is an index over all but the last dimension of the outputs.
  // `rows` empty: compute everything. Non-empty: compute at least those rows of every output
  // (an op may compute more); the harness compares only them (and still checks that every
  // element was written and is finite). Asked for the stage checks only of ops whose
  // row_sampling() is true, when the full reference would cost too much (matmul 8192^3), and of
  // every op for the few units of the timed runs it checks (timed_slots.h).
  virtual void reference(const Problem& problem, const std::vector<Values>& inputs,
                         std::vector<Values>& outputs, const std::vector<int64_t>& rows) const = 0;
  virtual bool row_sampling() const { return false; }

  virtual UnitLayout units(const Problem& problem) const = 0;
  // The problem of `count` units of `problem` side by side: units() of it has `count` units of
  // the same elements, and its shared tensors are `problem`'s (the judge computes the reference of
  // a few units of a timed drawing on it). By default the first dimension is the units' count.
  virtual Problem units_problem(const Problem& problem, int64_t count) const;

  virtual double flops(const Problem& problem) const = 0;
  // The fewest bytes a kernel must move: each input read once, each output written once.
  virtual double bytes(const Problem& problem, DType dtype) const = 0;
  virtual Tolerance tolerance(DType dtype) const;

 protected:
  // The op's own rules beyond rank and parameter names (e.g. "D must be even"); runs after them.
  virtual void validate_rules(const Problem&) const {}
};

// The tolerances of the reference system per dtype (fp16 1e-2, bf16 2e-2, fp32 1e-4) that ops
// use unless they have a measured reason to differ.
Tolerance default_tolerance(DType dtype);

}  // namespace ak
