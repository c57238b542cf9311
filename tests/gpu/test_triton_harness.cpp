// The harness's Triton path on the GPU, through the real CLI: Triton starters compiled ahead of
// time pass every stage (fp32 matmul at the fp32 tolerance, which TF32 would not meet),
// deliberately wrong Triton kernels are rejected by the stages and checks, a file that does not
// compile is COMPILE_ERROR and the engine carries on.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak::test {
namespace {

std::string starter(const std::string& op) {
  return std::string(AK_SOURCE_DIR) + "/kernels/triton/" + op + ".py";
}

class TritonHarness : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
    dir_ = scratch_dir("triton-bench");
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  nlohmann::json bench(const std::string& file, const std::string& op, const std::string& shape,
                       std::vector<std::string> extra = {}) {
    std::vector<std::string> args{file,         "--op", op,          "--shape", shape,
                                  "--max-time", "0.5",  "--timeout", "300"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult run;
    auto j = bench_json(args, 900, {}, &run);
    EXPECT_TRUE(j.is_object()) << run.output;
    return j;
  }
  std::filesystem::path dir_;
};

TEST_F(TritonHarness, RmsnormStarterPassesEveryStage) {
  const auto j = bench(starter("rmsnorm"), "rmsnorm", "4096x4096");
  EXPECT_EQ(j.value("status", ""), "PASS") << j.dump(2);
  EXPECT_EQ(j["stages"].size(), 5u);
  EXPECT_GT(j["gbps"].get<double>(), 100.0);
  EXPECT_EQ(j.value("backend", ""), "cuda");
}

TEST_F(TritonHarness, MatmulPassesEveryStageInFp32ToleranceToo) {
  const auto j = bench(starter("matmul"), "matmul", "512x512x512", {"--dtype", "fp32"});
  EXPECT_EQ(j.value("status", ""), "PASS") << j.dump(2);
}

// B as a Linear's [N, K] weight (b_nk = 1): the variant that reads B's tiles k-contiguous. Its
// fp16/bf16 build for K not a multiple of 16 spills ~1 KB a thread; before the launcher grew the
// context's stack in ak_prepare, its first launch grew it behind the held stream and the stream
// gate opened by its timeout (2026-11-25, docs/benchmarks.md; TritonLauncher.MatmulReserves...).
TEST_F(TritonHarness, MatmulTakesALinearsWeightThroughEveryStage) {
  for (const std::string dtype : {"fp16", "fp32"}) {
    const auto j = bench(starter("matmul"), "matmul", "300x520x72:b_nk=1", {"--dtype", dtype});
    EXPECT_EQ(j.value("status", ""), "PASS") << dtype << "\n" << j.dump(2);
  }
}

TEST_F(TritonHarness, CausalGroupedAttentionPasses) {
  const auto j = bench(starter("flash_attention"), "flash_attention", "1x8x512x128:causal=1,kv_heads=2",
                       {"--dtype", "bf16"});
  EXPECT_EQ(j.value("status", ""), "PASS") << j.dump(2);
}

TEST_F(TritonHarness, WrongArithmeticIsRejected) {
  const auto j = bench(kernel("wrong_triton_rmsnorm.py"), "rmsnorm", "1024x1024");
  EXPECT_EQ(j.value("status", ""), "FAIL") << j.dump(2);
  EXPECT_EQ(j.value("stage", ""), "smoke") << j.dump(2);
}

TEST_F(TritonHarness, AnUnwrittenColumnIsRejected) {
  const auto j = bench(kernel("unwritten_triton_rmsnorm.py"), "rmsnorm", "1024x1024");
  EXPECT_EQ(j.value("status", ""), "FAIL") << j.dump(2);
}

TEST_F(TritonHarness, AFileThatDoesNotCompileIsACompileErrorAndTheEngineCarriesOn) {
  const auto file = dir_ / "broken.py";
  std::ofstream(file) << "import triton\n\n@triton.jit\ndef broken(x\n";
  const auto j = bench(file.string(), "rmsnorm", "1024x1024");
  EXPECT_EQ(j.value("status", ""), "COMPILE_ERROR") << j.dump(2);
  EXPECT_NE(j.value("reason", "").find("broken.py:4:"), std::string::npos) << j.dump(2);
  const auto after = bench(starter("softmax"), "softmax", "1024x4096", {"--quick"});
  EXPECT_EQ(after.value("status", ""), "PASS") << after.dump(2);
}

}  // namespace
}  // namespace ak::test
