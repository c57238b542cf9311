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
