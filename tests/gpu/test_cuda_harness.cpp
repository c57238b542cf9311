// The harness on the GPU through the real CLI: the CUDA rmsnorm starter passes, a kernel that
// works outside call->stream is caught, an illegal address is a CRASH that the engine survives.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak::test {
namespace {

class CudaHarness : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  }
  nlohmann::json bench(const std::string& file, const std::string& op, const std::string& shape,
                       std::vector<std::string> extra = {}) {
    const auto dir = scratch_dir("cuda-bench");
    std::vector<std::string> args{"bench",
                                  file,
                                  "--op",
                                  op,
                                  "--shape",
                                  shape,
                                  "--json",
                                  "--max-time",
                                  "0.5",
                                  "--timeout",
                                  "120",
                                  "--results",
                                  (dir / "results.tsv").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult run = run_cli(args, 600);
    auto j = json_of(run);
    EXPECT_TRUE(j.is_object()) << run.output;
    return j;
  }
};

TEST_F(CudaHarness, RmsnormStarterPassesEveryStage) {
  const auto j = bench(std::string(AK_SOURCE_DIR) + "/kernels/cuda/rmsnorm.cu", "rmsnorm", "4096x4096");
  EXPECT_EQ(j.value("status", ""), "PASS") << j.dump(2);
  EXPECT_EQ(j["stages"].size(), 5u);
  EXPECT_GT(j["gbps"].get<double>(), 100.0);
}

// fp32 at its 1e-4 tolerance through the split-K paths: 4 output tiles over a long K (the GEMM
// splits K 66 ways on an H100), and one output column over K = 256K (the float4 matrix-vector
// kernel, split 64 ways). The stages add the rest: M == 1, N == 1 with odd sizes, small splits.
TEST_F(CudaHarness, MatmulFp32StarterPassesEveryStageWithSplitK) {
  for (const std::string shape : {"256x256x65536", "512x1x262144"}) {
    const auto j =
        bench(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu", "matmul", shape, {"--dtype", "fp32"});
    EXPECT_EQ(j.value("status", ""), "PASS") << shape << "\n" << j.dump(2);
  }
}

TEST_F(CudaHarness, GoodReducePasses) {
  const auto j = bench(kernel("cuda_good_reduce.cu"), "reduce", "4096x1000");
  EXPECT_EQ(j.value("status", ""), "PASS") << j.dump(2);
}

TEST_F(CudaHarness, WorkOnTheDefaultStreamIsCaught) {
  const auto j = bench(kernel("cuda_default_stream.cu"), "reduce", "4096x1000");
  EXPECT_EQ(j.value("status", ""), "FAIL") << j.dump(2);
  EXPECT_NE(j.value("reason", "").find("outside call->stream"), std::string::npos) << j.dump(2);
}

TEST_F(CudaHarness, IllegalAddressIsACrashAndTheEngineCarriesOn) {
  const auto j = bench(kernel("cuda_illegal_address.cu"), "reduce", "4096x1000");
  EXPECT_EQ(j.value("status", ""), "CRASH") << j.dump(2);
  const auto after = bench(kernel("cuda_good_reduce.cu"), "reduce", "4096x1000", {"--quick"});
  EXPECT_EQ(after.value("status", ""), "PASS") << after.dump(2);
}

}  // namespace
}  // namespace ak::test
