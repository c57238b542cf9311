// Helpers shared by the operator files: input drawing and shape checks.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/op.h"

namespace ak::ops {

// Fills every value with N(mean, stddev) draws.
void fill_normal(Values& v, std::mt19937_64& rng, double mean = 0.0, double stddev = 1.0);
void fill_uniform(Values& v, std::mt19937_64& rng, double lo, double hi);

// Throws Error(Usage) "<op>: <what>" when `ok` is false.
void require(const Op& op, bool ok, const std::string& what);
// The problem's parameter `name` (or `fallback`), which must be a whole number.
int64_t int_param(const Op& op, const Problem& problem, const std::string& name, int64_t fallback);

// Bytes of `elements` values of type `t`, as a double for the roofline arithmetic.
double bytes_of(int64_t elements, DType t);

// Runs body(row) for every row in [0, n_rows) when `rows` is empty, else for each listed row, in
// parallel. For the references of row-sampling ops; throws Error(Internal) on a row out of range.
void for_each_row(int64_t n_rows, const std::vector<int64_t>& rows, const std::function<void(int64_t)>& body);

// The input cases shared by the row-wise ops (norms, softmax, reduce, cross-entropy):
//   large:         values ~ N(0, 1) * 1e3 (fp16 holds up to 65504), so sums of squares overflow
//                  a half accumulator;
//   near_constant: every row is c + N(0, 1e-3): a variance near zero;
//   dominant:      one element per row is +30, the rest N(0, 1): one value dominates;
//   extreme:       values ~ N(0, 1) * 60: exp() of them overflows fp32 unless the max is taken out.
// Applies `input_case` to the 2-D tensor `v` (rows x cols). Returns false for an unknown case.
// The stage problems of the row-wise ops over x[M, N] (norms, softmax, reduce): LLM-like widths
// in the sweep plus `extra_sweep`, the op's own characteristic width, and the edge sizes (one
// row, N = 1, odd and prime widths, a 65536-wide row).
StageProblems rowwise_stage_problems(const Problem& extra_sweep);

// `problems` with parameter `name` = 1 in every one when `on`: a layout parameter (matmul's b_nk,
// attention's bshd) of the timed problem carried over, so that every stage checks the layout the
// kernel will be called with.
StageProblems with_param_everywhere(StageProblems problems, const std::string& name, bool on);

bool apply_rowwise_case(std::string_view input_case, Values& v, std::mt19937_64& rng);

}  // namespace ak::ops
