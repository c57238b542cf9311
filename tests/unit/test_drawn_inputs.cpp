// The timed runs' inputs (drawn_inputs.h, timed_slots.h) on the host backend: every launch's
// units are new -- no unit's contents recur in a slot, across slots or across batches, so no
// output a kernel kept is right for them -- and the reference the judge computes for a few
// units of a drawing, rebuilt on the host, is the reference of the inputs on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string_view>

#include "cli_runner.h"
#include "core/registry.h"
#include "harness/arena.h"
#include "harness/device_case.h"
#include "harness/drawn_inputs.h"
#include "harness/launcher.h"
#include "harness/prepared_case.h"
#include "harness/timed_slots.h"
#include "runtime/compiler.h"
#include "runtime/runtime.h"

namespace ak::test {
namespace {

using namespace std::chrono_literals;

struct Case {
  const char* op;
  const char* problem;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.op << " " << c.problem;
}

class DrawnInputsOfEveryOp : public ::testing::TestWithParam<Case> {};

// Draws the inputs on the (host) device, computes the whole reference from them, and compares
// the judge's reference of two units rebuilt on the host, element for element.
TEST_P(DrawnInputsOfEveryOp, AUnitsReferenceIsThatOfTheInputsOnTheDevice) {
  const Op& op = find_op(GetParam().op);
  const Problem problem = parse_problem(GetParam().problem);
  const DType dtype = DType::F16;
  auto source = prepare_case(op, {problem, dtype, std::string(kRandomCase), 5});
  auto runtime = make_runtime(Backend::Host);
  DeviceCases cases(*runtime);
  const auto device = cases.get(source, false);
  const DrawnInputs drawn(op, problem, source);
  const Signature& sig = source->signature;
  const uint64_t key = 0xfeedbeef;

  std::vector<Values> inputs, outputs;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    auto buffer = runtime->allocate(sig.inputs[i].bytes());
    drawn.fill(*runtime, *device, i, buffer->data(), key);
    const auto* bytes = static_cast<const std::byte*>(buffer->data());
    inputs.push_back(
        {sig.inputs[i], decode(sig.inputs[i], std::vector<std::byte>(bytes, bytes + sig.inputs[i].bytes()))});
  }
  for (const auto& spec : sig.outputs)
    outputs.push_back({spec, std::vector<double>(static_cast<size_t>(spec.numel()))});
  op.reference(problem, inputs, outputs, {});

  const UnitLayout& units = drawn.units();
  UnitRequest request{key, {units.count - 1, 0}, {}, {}};
  for (size_t j = 0; j < sig.outputs.size(); ++j) {
    const int64_t elements = units.outputs[j];
    request.ranges.emplace_back();
    if (elements > 0)
      for (int64_t u : request.units) request.ranges[j].emplace_back(u * elements, elements);
  }
  const auto expected = drawn.reference({request, request}).at(1);
  size_t compared = 0;
  for (size_t j = 0; j < sig.outputs.size(); ++j) {
    size_t k = 0;
    for (const auto& [first, count] : request.ranges[j])
      for (int64_t e = first; e < first + count; ++e, ++k, ++compared)
        ASSERT_EQ(expected[j].at(k), outputs[j].data[static_cast<size_t>(e)])
            << sig.outputs[j].name << "[" << e << "]";
  }
  EXPECT_GT(compared, 0u);

  // Every unit and element, one unit at a time: a shared output (a mean over units) from the
  // units' means.
  const DrawnInputs one_by_one(op, problem, source, /*chunk_elements=*/1);
  UnitRequest whole{key, {}, {}, {}};
  for (int64_t u = 0; u < units.count; ++u) whole.units.push_back(u);
  for (const auto& spec : sig.outputs) whole.ranges.push_back({{0, spec.numel()}});
  const auto all = one_by_one.reference({whole}).at(0);
  for (size_t j = 0; j < sig.outputs.size(); ++j)
    for (size_t e = 0; e < outputs[j].data.size(); ++e)
      ASSERT_NEAR(all[j].at(e), outputs[j].data[e], 1e-12 * (1 + std::fabs(outputs[j].data[e])))
          << sig.outputs[j].name << "[" << e << "]";

  // A drawn input is the source's values rearranged, not the source: nothing to remember.
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    if (units.inputs[i] <= 0) continue;
    const auto* drawn_bytes = inputs[i].data.data();
    std::vector<double> source_values = decode(
        sig.inputs[i], std::vector<std::byte>(source->input_bytes[i].begin(), source->input_bytes[i].end()));
    EXPECT_NE(std::memcmp(drawn_bytes, source_values.data(), source_values.size() * sizeof(double)), 0)
        << sig.inputs[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, DrawnInputsOfEveryOp,
                         ::testing::Values(Case{"matmul", "64x48x32"}, Case{"matmul", "40x24x16:b_nk=1"},
                                           Case{"softmax", "16x100"}, Case{"layernorm", "16x100"},
                                           Case{"rmsnorm", "16x100"}, Case{"reduce", "16x100"},
                                           Case{"cross_entropy", "16x100"},
                                           Case{"rotary_embedding", "2x3x8x16"},
                                           Case{"flash_attention", "2x4x32x16:causal=1,kv_heads=2"},
                                           Case{"fused_mlp", "16x32x48"}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.op) + "_" + std::to_string(param_info.index);
                         });

// The timed slots as run_experiment sets them up, on the honest host reduce: refilled batch after
// batch, no unit's contents are ever seen twice.
TEST(TimedSlots, NoUnitsContentsRecurInASlotAcrossSlotsOrAcrossBatches) {
  const Op& op = find_op("reduce");
  const Problem problem = parse_problem("64x40");
  const Signature signature = op.signature(problem, DType::F16);
  auto runtime = make_runtime(Backend::Host);
  auto arena = runtime->share(8 * arena_bytes_of(signature) + (size_t{1} << 20));
  ArenaAllocator allocator{*arena};
  Launcher launcher{Backend::Host, *arena, AK_CLI_PATH};
  launcher.load(build_module({kernel("good_reduce.cpp"), {}, Backend::Host, "", 300s}).module);
  DeviceCases cases{*runtime};
  const CheckContext ctx{*runtime, allocator, launcher, op, cases};
  TimedSlots slots(ctx, problem, prepare_case(op, {problem, DType::F16, std::string(kRandomCase), 9}), 4);

  std::set<std::string> seen;
  const size_t row_bytes = 40 * 2;
  int units = 0;
  for (int batch = 0; batch < 6; ++batch) {
    slots.refill();
    for (size_t s = 0; s < slots.size(); ++s) {
      const auto* x = static_cast<const char*>(slots.slot_args(s).inputs[0]->data());
      for (int64_t r = 0; r < 64; ++r, ++units)
        EXPECT_TRUE(seen.insert(std::string(x + r * row_bytes, row_bytes)).second)
            << "row " << r << " of slot " << s << " in batch " << batch << " was seen before";
    }
  }
  EXPECT_EQ(units, 6 * 4 * 64);
}

}  // namespace
}  // namespace ak::test
