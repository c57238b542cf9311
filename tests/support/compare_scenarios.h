// Outputs beside their references for Runtime::scan_output, each with what a correct scan finds:
// the host runtime is checked against these (label cpu), the CUDA runtime against the host's
// results on the same data (label gpu).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "runtime/runtime.h"

namespace ak::testing {

struct CompareScenario {
  std::string name;
  DType dtype = DType::F16;
  int64_t row_len = 1000;
  std::vector<std::byte> output;
  std::vector<float> reference;  // the compared elements, in order
  std::vector<int64_t> rows;     // empty: all compared
  double atol = 1e-3, rtol = 1e-2;
  OutputScan expected;  // indices and counts; the sums are checked against each other
};

inline void set_element(CompareScenario& s, int64_t i, double value) {
  store_from_double(s.output.data(), s.dtype, static_cast<size_t>(i), value);
}

inline void set_bits(CompareScenario& s, int64_t i, uint32_t bits) {
  std::memcpy(s.output.data() + i * static_cast<int64_t>(size_of(s.dtype)), &bits, size_of(s.dtype));
}

// numel elements near a random reference; rows (when given) are the compared ones.
inline CompareScenario make_scenario(std::string name, DType dtype, int64_t numel,
                                     std::vector<int64_t> rows = {}) {
  CompareScenario s;
  s.name = std::move(name);
  s.dtype = dtype;
  s.rows = std::move(rows);
  s.output.resize(static_cast<size_t>(numel) * size_of(dtype));
  std::mt19937_64 rng(numel);
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  std::vector<double> full(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    full[static_cast<size_t>(i)] = value(rng);
    set_element(s, i, full[static_cast<size_t>(i)]);
  }
  if (s.rows.empty()) {
    s.reference.assign(full.begin(), full.end());
  } else {
    for (int64_t r : s.rows)
      for (int64_t c = 0; c < s.row_len; ++c)
        s.reference.push_back(static_cast<float>(full[static_cast<size_t>(r * s.row_len + c)]));
  }
  s.expected.compared = static_cast<int64_t>(s.reference.size());
  return s;
}

inline std::vector<CompareScenario> compare_scenarios() {
  std::vector<CompareScenario> all;
  for (DType t : kFloatTypes) all.push_back(make_scenario("clean " + std::string(to_string(t)), t, 100'003));

  auto unwritten = make_scenario("unwritten", DType::F16, 50'000);
  set_bits(unwritten, 99'000 % 50'000, 0xFFFF);
  set_bits(unwritten, 777, 0xFFFF);
  unwritten.expected.unwritten = 2;
  unwritten.expected.first_unwritten = 777;
  all.push_back(unwritten);

  auto nonfinite = make_scenario("nonfinite", DType::F32, 50'000);
  set_bits(nonfinite, 6000, 0x7F800000u);  // inf
  set_bits(nonfinite, 5000, 0x7FC00000u);  // NaN
  nonfinite.expected.first_nonfinite = 5000;
  nonfinite.expected.first_violation = 6000;  // inf is out of any tolerance; NaN compares false
  all.push_back(nonfinite);

  auto wrong = make_scenario("violation", DType::BF16, 70'001);
  set_element(wrong, 70'000, 9.0);
  set_element(wrong, 4242, 5.0);
  wrong.expected.first_violation = 4242;
  all.push_back(wrong);

  // 100 rows of 1000; rows 0, 17, 99 compared. A wrong value in row 50 is not compared; the one
  // in row 99 is found; an unwritten element of row 50 still counts.
  auto sampled = make_scenario("rows", DType::F16, 100'000, {0, 17, 99});
  set_element(sampled, 50 * 1000 + 3, 7.0);
  set_element(sampled, 99 * 1000 + 3, 7.0);
  set_bits(sampled, 50 * 1000 + 9, 0xFFFF);
  sampled.expected.first_violation = 99 * 1000 + 3;
  sampled.expected.unwritten = 1;
  sampled.expected.first_unwritten = 50 * 1000 + 9;
  all.push_back(sampled);
  return all;
}

// Copies a scenario into the runtime's memory and scans it there.
inline OutputScan scan_scenario(Runtime& runtime, const CompareScenario& s) {
  auto upload = [&](const void* data, size_t bytes) {
    auto buffer = runtime.allocate(bytes);
    runtime.upload(buffer->data(), data, bytes);
    return buffer;
  };
  auto output = upload(s.output.data(), s.output.size());
  auto reference = upload(s.reference.data(), s.reference.size() * sizeof(float));
  auto rows = s.rows.empty() ? nullptr : upload(s.rows.data(), s.rows.size() * sizeof(int64_t));
  OutputScanJob job;
  job.output = output->data();
  job.dtype = s.dtype;
  job.numel = static_cast<int64_t>(s.output.size() / size_of(s.dtype));
  job.reference = static_cast<const float*>(reference->data());
  job.rows = rows ? static_cast<const int64_t*>(rows->data()) : nullptr;
  job.n_rows = static_cast<int64_t>(s.rows.size());
  job.row_len = s.row_len;
  job.atol = s.atol;
  job.rtol = s.rtol;
  return runtime.scan_output(job);
}

// first_difference and first_byte_not on buffers of `bytes` (plus one) that differ at `at` and at
// their last byte, compared at an aligned and an unaligned start.
inline void expect_first_mismatches(Runtime& runtime, size_t bytes, size_t at) {
  const std::byte fill{0x5A}, zero{0}, one{1};
  auto a = runtime.allocate(bytes + 1), b = runtime.allocate(bytes + 1);
  runtime.fill(a->data(), fill, bytes + 1);
  runtime.fill(b->data(), fill, bytes + 1);
  auto* pa = static_cast<std::byte*>(a->data());
  auto* pb = static_cast<std::byte*>(b->data());
  EXPECT_EQ(runtime.first_difference(pa, pb, bytes), -1);
  EXPECT_EQ(runtime.first_byte_not(pa + 1, fill, bytes), -1);
  runtime.upload(pb + bytes - 1, &zero, 1);
  runtime.upload(pb + at, &one, 1);
  runtime.upload(pb + at + 12, &one, 1);
  const auto expected = static_cast<int64_t>(at);
  EXPECT_EQ(runtime.first_difference(pa, pb, bytes), expected);
  EXPECT_EQ(runtime.first_difference(pa + 1, pb + 1, bytes), expected - 1);
  EXPECT_EQ(runtime.first_byte_not(pb, fill, bytes), expected);
  EXPECT_EQ(runtime.first_byte_not(pb + at + 1, fill, 100), 11);
  EXPECT_EQ(runtime.first_byte_not(pb, fill, at), -1);
  EXPECT_EQ(runtime.first_difference(pa, pb, 0), -1);
}

}  // namespace ak::testing
