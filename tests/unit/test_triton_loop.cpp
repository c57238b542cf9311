// The loop across backends: `--backend both` plans a CUDA and a Triton starter for each operator
// (alternatives of one slot), a slot counts once in the shares and the projected speedup (its
// fastest kernel), the Amdahl pick weighs an alternative by how far it is behind its slot's
// fastest, and `report` names the backend that won each slot.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "core/error.h"
#include "loop/alternatives.h"
#include "loop/decision.h"
#include "loop/plan.h"

namespace ak::test {
namespace {
namespace fs = std::filesystem;

TEST(TritonLoop, BackendOptionsNameTheStarterKinds) {
  EXPECT_EQ(starter_kinds("both", Backend::Cuda), (std::vector<std::string>{"cuda", "triton"}));
  EXPECT_EQ(starter_kinds("triton", Backend::Cuda), (std::vector<std::string>{"triton"}));
  EXPECT_EQ(starter_kinds("auto", Backend::Host), (std::vector<std::string>{"host"}));
  EXPECT_THROW(starter_kinds("both", Backend::Host), Error);
  EXPECT_EQ(device_of_backend_option("triton", Backend::Host), Backend::Cuda);
  EXPECT_EQ(device_of_backend_option("auto", Backend::Host), Backend::Host);
}

TEST(TritonLoop, BothPutsACudaAndATritonStarterInTheSuitePlan) {
  const fs::path ws = scratch_dir("triton-suite");
  const Plan plan =
      write_suite_plan(ws, Backend::Cuda, {"rmsnorm", "matmul"}, starter_kinds("both", Backend::Cuda));
  ASSERT_EQ(plan.kernels.size(), 4u);
  EXPECT_EQ(plan.kernels[0].name, "rmsnorm");
  EXPECT_EQ(plan.kernels[0].file, "kernels/rmsnorm/rmsnorm.cu");
  EXPECT_EQ(plan.kernels[1].name, "rmsnorm_triton");
  EXPECT_EQ(plan.kernels[1].file, "kernels/rmsnorm_triton/rmsnorm.py");
  EXPECT_EQ(plan.kernels[1].shape, plan.kernels[0].shape);
  EXPECT_EQ(plan.kernels[3].file, "kernels/matmul_triton/matmul.py");
  for (const auto& k : plan.kernels) EXPECT_TRUE(fs::exists(ws / k.file)) << k.file;
  EXPECT_EQ(read_plan(ws).kernels.size(), 4u);
  fs::remove_all(ws.parent_path() / ws.filename());
}

KernelState kernel(const std::string& name, const std::string& op, const std::string& ext) {
  KernelState k;
  k.name = name;
  k.op = op;
  k.file = "kernels/" + name + "/" + op + ext;
  k.shape = "8192x8192";
  k.dtype = "fp16";
  return k;
}

// rmsnorm on CUDA (baseline 100, then 90 us) and on Triton (120, then 80 us), softmax on CUDA
// (100 us): two slots of equal baseline, so half the time each.
RunState two_slots() {
  RunState state;
  state.shares_from_baselines = true;
  state.kernels = {kernel("rmsnorm", "rmsnorm", ".cu"), kernel("rmsnorm_triton", "rmsnorm", ".py"),
                   kernel("softmax", "softmax", ".cu")};
  int n = 0;
  const auto record = [&](const std::string& name, const std::string& decision, double us) {
    apply(state, {++n, name, "", "PASS", decision, "c" + std::to_string(n), us, 0.01, 0.5, 50, 1.0 * n});
  };
  record("rmsnorm", "baseline", 100);
  record("rmsnorm_triton", "baseline", 120);
  record("softmax", "baseline", 100);
  record("rmsnorm", "kept", 90);
  record("rmsnorm_triton", "kept", 80);
  return state;
}

TEST(TritonLoop, ASlotCountsOnceAtItsFastestKernel) {
  RunState state = two_slots();
  for (const auto& k : state.kernels) EXPECT_DOUBLE_EQ(k.share, 0.5) << k.name;
  EXPECT_EQ(slot_leader(state.kernels, state.kernels[0])->name, "rmsnorm_triton");
  EXPECT_DOUBLE_EQ(slot_baseline_us(state.kernels, state.kernels[1]), 100);
  EXPECT_NEAR(state.projected_speedup, 1.0 / (0.5 * 0.8 + 0.5 * 1.0), 1e-12);
  EXPECT_EQ(kernel_backend(state.kernels[1].file), "triton");
}

TEST(TritonLoop, TheAmdahlPickGoesAcrossTheAlternatives) {
  RunState state = two_slots();
  // Rooflines of 0.5: softmax's slot has 50 us above its floor, rmsnorm's 40 (Triton, the
  // leader) or 35 scaled by 80/90 (CUDA, behind it): softmax first.
  EXPECT_EQ(pick_next(state)->name, "softmax");
  state.kernels[2].done = kDonePatience;
  EXPECT_EQ(pick_next(state)->name, "rmsnorm_triton");
  state.kernels[1].done = kDonePatience;
  EXPECT_EQ(pick_next(state)->name, "rmsnorm");
}

TEST(TritonLoop, ReportNamesTheBackendThatWonEachSlot) {
  const fs::path ws = scratch_dir("triton-report") / "workspace";
  fs::create_directories(ws);
  RunState state = two_slots();
  state.name = "suite";
  state.backend = "cuda";
  save_run_state(ws, state);
  const ProcessResult run = run_cli({"report", "--workspace", ws.string(), "--no-plot"});
  ASSERT_TRUE(run.ok()) << run.output;
  EXPECT_NE(run.output.find("rmsnorm 8192x8192 fp16: triton won (cuda 90.0 µs, triton 80.0 µs)"),
            std::string::npos)
      << run.output;
  const auto j = json_of(run_cli({"report", "--workspace", ws.string(), "--no-plot", "--json"}));
  ASSERT_EQ(j["winners"].size(), 1u) << j.dump(1);
  EXPECT_EQ(j["winners"][0]["backend"], "triton");
  EXPECT_EQ(j["kernels"][1]["backend"], "triton");
  fs::remove_all(ws.parent_path());
}

}  // namespace
}  // namespace ak::test
