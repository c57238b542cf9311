// The cheat battery on the GPU (label gpu): the CUDA kernels of tests/kernels/cheats through the
// real CLI, the judge and the sandboxed launcher. Each must be rejected with a reason naming what
// happened; result reuse may pass only at an honest kernel's time.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <string_view>

#include "cli_runner.h"
#include "core/paths.h"
#include "harness/results_log.h"
#include "loop/plan.h"
#include "loop/run_state.h"
#include "loop_cheats.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak::test {
namespace {

nlohmann::json bench_cuda(const std::string& file, const std::string& shape = "4096x1000") {
  ProcessResult run;
  auto j =
      bench_json({kernel(file), "--op", "reduce", "--shape", shape, "--max-time", "0.5", "--timeout", "120"},
                 600, {}, &run);
  EXPECT_TRUE(j.is_object()) << run.output;
  return j;
}

struct Cheat {
  const char* kernel;
  const char* status;
  const char* reason;
};

void PrintTo(const Cheat& c, std::ostream* os) {
  *os << c.kernel;
}

class CudaCheatBattery : public ::testing::TestWithParam<Cheat> {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  }
};

TEST_P(CudaCheatBattery, IsRejectedWithAReasonThatNamesIt) {
  const Cheat& c = GetParam();
  const auto j = bench_cuda(std::string("cheats/") + c.kernel);
  EXPECT_EQ(j.value("status", ""), c.status) << j.dump(2);
  const std::string reason = j.value("reason", "");
  std::cout << c.kernel << ": " << j.value("status", "") << " " << reason << "\n";
  // c.reason: what the reason must say, alternatives split by '|' (a cheat that more than one
  // check rejects may meet either first, by its inputs).
  bool named = false;
  const std::string_view wanted = c.reason;
  for (size_t at = 0;;) {
    const size_t bar = wanted.find('|', at);
    named = named || reason.find(wanted.substr(at, bar == std::string_view::npos ? bar : bar - at)) !=
                         std::string::npos;
    if (bar == std::string_view::npos) break;
    at = bar + 1;
  }
  EXPECT_TRUE(named) << "expected the reason to say " << c.reason << ": " << j.dump(2);
}

INSTANTIATE_TEST_SUITE_P(
    Cuda, CudaCheatBattery,
    ::testing::Values(Cheat{"cuda_skip_after_stages.cu", "FAIL", "sampled outputs never written"},
                      Cheat{"cuda_deferred_elsewhere.cu", "FAIL", ""},
                      Cheat{"cuda_forge_channel.cu", "FAIL", "unexpected message on the launch channel"},
                      Cheat{"cuda_fork.cu", "CRASH", "called fork"},
                      Cheat{"cuda_batched_calls.cu", "FAIL", "call never made"},
                      Cheat{"cuda_row_cache.cu", "FAIL", "reference|differs bitwise"},
                      Cheat{"cuda_busy_while_refilled.cu", "FAIL", "writes of the next batch's inputs took"}),
    [](const auto& param_info) {
      std::string name = param_info.param.kernel;
      return name.substr(0, name.find('.'));
    });

TEST(CudaCheats, ResultReuseGainsNothing) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  const auto honest = bench_cuda("cuda_good_reduce.cu");
  const auto cheat = bench_cuda("cheats/cuda_fingerprint_reuse.cu");
  ASSERT_EQ(honest.value("status", ""), "PASS") << honest.dump(2);
  if (cheat.value("status", "") != "PASS") return;
  const double honest_us = honest["timing"]["median_us"], cheat_us = cheat["timing"]["median_us"];
  EXPECT_GT(cheat_us, 0.5 * honest_us) << "reused results read as a speedup: " << cheat.dump(2);
}

// The launcher sees the judge's GPU alone, however many the machine has: with several, its
// CUDA_VISIBLE_DEVICES names that one by UUID; AUTOKERNEL_SOLE_GPU_BY_UUID=1 takes that path on a
// one-GPU machine too (a UUID the driver did not take would leave the launcher no GPU).
TEST(CudaCheats, TheLauncherSeesTheJudgesGpuAlone) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  for (const char* by_uuid : {"0", "1"}) {
    ProcessResult run;
    const auto j = bench_json({kernel("cuda_one_gpu_seen.cu"), "--op", "reduce", "--shape", "4096x1000",
                               "--max-time", "0.3", "--timeout", "120"},
                              600, {{"AUTOKERNEL_SOLE_GPU_BY_UUID", by_uuid}}, &run);
    ASSERT_TRUE(j.is_object()) << run.output;
    EXPECT_EQ(j.value("status", ""), "PASS")
        << "AUTOKERNEL_SOLE_GPU_BY_UUID=" << by_uuid << ": " << j.dump(2);
  }
}

// Inputs kept in L2 across the judge's flush by a persisting access-policy window: the judge
// resets persisting lines before each batch, so the cheat runs at an honest kernel's time. 16 MB
// inputs: the set-aside (up to three quarters of L2) holds two of the 16 slots.
TEST(CudaCheats, L2PersistenceGainsNothing) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  const auto honest = bench_cuda("cuda_good_reduce.cu", "4096x2048");
  const auto cheat = bench_cuda("cheats/cuda_l2_persist.cu", "4096x2048");
  ASSERT_EQ(honest.value("status", ""), "PASS") << honest.dump(2);
  ASSERT_EQ(cheat.value("status", ""), "PASS") << cheat.dump(2);
  const double honest_us = honest["timing"]["median_us"], cheat_us = cheat["timing"]["median_us"];
  std::cout << "L2 persistence: honest " << honest_us << " us, cheat " << cheat_us << " us\n";
  EXPECT_GT(cheat_us, 0.96 * honest_us) << "L2 kept across the flush read as a speedup: " << cheat.dump(2);
}

// The loop on the GPU with an agent that submits the CUDA cheats (a forged verdict, skipped timed
// work, a process started from ak_launch): none kept, each recorded with what it did.
TEST(CudaCheats, TheLoopKeepsNoneOfTheCheatsAnAgentSubmits) {
  if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  const auto ws = scratch_dir("cuda-loop-cheats") / "workspace";
  std::filesystem::create_directories(ws / "kernels" / "sum");
  // The starter's include made absolute, as the cheating agent makes its kernels'.
  std::string starter = read_text_file(kernel("cuda_good_reduce.cu"));
  const std::string local = "cuda_reduce.cuh\"";
  starter.replace(starter.find(local), local.size(), kernel("cuda_reduce.cuh").append("\""));
  std::ofstream(ws / "kernels" / "sum" / "sum.cu") << starter;
  const Plan plan{"test", false, {{"sum", "reduce", "kernels/sum/sum.cu", "4096x1000", "fp16", 0.5}}};
  write_file_atomically(ws / kPlanFile, nlohmann::json(plan).dump());
  const AgentStateDir state("cuda-cheats-agent-state");
  const std::string agent = "sh '" + std::string(AK_TEST_KERNELS) + "/../loop_agents/cheating.sh' '" +
                            state.file("calls").string() + "' cuda";
  const auto run =
      run_cli({"optimize", "--workspace", ws.string(), "--backend", "cuda", "--timeout", "120", "--max-time",
               "0.3", "--json", "--agent-cmd", agent, "--agent-timeout", "30", "--patience", "4"},
              900);
  ASSERT_TRUE(run.ok()) << run.output;
  const auto rows = read_results(ws / kResultsFile);
  ASSERT_GE(rows.size(), 4u) << run.output;
  expect_cheats_rejected_and_none_kept(rows);
  EXPECT_EQ(read_text_file(ws / "kernels" / "sum" / "sum.cu"), starter);
}

}  // namespace
}  // namespace ak::test
