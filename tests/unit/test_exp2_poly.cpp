// The exponential that attention kernels may compute on the FMA pipes instead of MUFU
// (include/autokernel/exp2_poly.h), run on the CPU: the same code a kernel runs.
#include <gtest/gtest.h>

#include <cmath>

#include "autokernel/exp2_poly.h"

namespace ak {
namespace {

using ak_exp2::exp2_poly;

// Every float step of 1e-5 over the range softmax feeds it (scores minus the row maximum, so
// x <= 0, down to where 2^x no longer matters): relative error below half an fp16 rounding, so
// that P rounded to fp16 or bf16 for P V is what an exact exponential would round to, or one
// rounding step off.
TEST(Exp2Poly, RelativeErrorIsUnderAnFp16RoundingOverTheSoftmaxRange) {
  double worst = 0;
  float worst_at = 0;
  for (int i = 0; i <= 12'500'000; ++i) {
    const float x = -125.0f * static_cast<float>(i) / 12'500'000.0f;
    const double exact = std::exp2(static_cast<double>(x));
    const double error = std::fabs(static_cast<double>(exp2_poly(x)) - exact) / exact;
    if (error > worst) {
      worst = error;
      worst_at = x;
    }
  }
  EXPECT_LT(worst, 1e-4) << "at x = " << worst_at;
}

TEST(Exp2Poly, ExactPowersAndTheEdgesOfItsRange) {
  for (int n = 0; n >= -124; --n)
    EXPECT_NEAR(exp2_poly(static_cast<float>(n)) / std::ldexp(1.0, n), 1.0, 1e-4) << n;
  EXPECT_EQ(exp2_poly(-INFINITY), exp2_poly(-125.0f));  // a masked score: 2^-125, never negative
  EXPECT_GT(exp2_poly(-INFINITY), 0.0f);
  EXPECT_LT(exp2_poly(-INFINITY), 1e-37f);
  EXPECT_TRUE(std::isnan(exp2_poly(NAN)));     // as ex2: a NaN score is not hidden
  EXPECT_NEAR(exp2_poly(1e-6f), 1.0f, 1e-4f);  // rounding may leave x a hair above 0
}

}  // namespace
}  // namespace ak
