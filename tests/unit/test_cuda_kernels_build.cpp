// Every CUDA kernel compiles for sm_90a (nvcc is on the CI machine, a GPU is not) through the
// engine's own compiler, in its default configuration, with no local-memory spills, no stack
// frame in its resource report and no wgmma serialized by ptxas.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "core/error.h"
#include "core/paths.h"
#include "harness/lint.h"
#include "runtime/compiler.h"

namespace ak {
namespace {

std::vector<std::filesystem::path> cuda_kernels() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(AK_SOURCE_DIR) + "/kernels/cuda"))
    if (entry.path().extension() == ".cu") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// Sum of every "N bytes <what>" figure in an nvcc --resource-usage report.
long total_bytes(const std::string& log, const std::string& what) {
  const std::regex pattern("([0-9]+) bytes " + what);
  long total = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), pattern), end; it != end; ++it)
    total += std::stol((*it)[1]);
  return total;
}

// Builds `file` with `defines` and checks the resource report; skips where there is no nvcc.
void expect_builds_without_spills(const std::filesystem::path& file, const Defines& defines) {
  BuildResult build;
  try {
    build = build_module({file, defines, Backend::Cuda, "sm_90a", std::chrono::seconds(600)});
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Unsupported) GTEST_SKIP() << e.what();  // no nvcc on this machine
    FAIL() << e.what();
  }
  EXPECT_TRUE(std::filesystem::exists(build.module));
  ASSERT_NE(build.log.find("registers"), std::string::npos) << build.log;  // the report is there
  EXPECT_EQ(total_bytes(build.log, "spill stores"), 0) << build.log;
  EXPECT_EQ(total_bytes(build.log, "spill loads"), 0) << build.log;
  EXPECT_EQ(total_bytes(build.log, "stack frame"), 0) << build.log;
  // ptxas's C7512: "wgmma.mma_async instructions are serialized" (a wait after every one), which
  // it does instead of spilling where a warpgroup's registers run short.
  EXPECT_EQ(build.log.find("Potential Performance Loss"), std::string::npos) << build.log;
}

TEST(CudaKernels, CompileForSm90aWithoutSpills) {
  const auto files = cuda_kernels();
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    EXPECT_TRUE(lint_kernel_source(read_text_file(file)).empty());
    expect_builds_without_spills(file, {});
  }
}

// The compute-bound starters build for an Ampere or an Ada GPU too (sm_80; sm_86 and sm_89 take the
// same code): their Hopper kernels become traps there, which the host never launches. A build for
// sm_90 without its "a" features, which cannot hold those kernels, fails with one line saying so.
TEST(CudaKernels, ComputeStartersBuildForAmpereAndRefuseSm90WithoutItsFeatures) {
  for (const std::string op : {"matmul", "fused_mlp", "flash_attention"}) {
    SCOPED_TRACE(op);
    const std::filesystem::path file = std::string(AK_SOURCE_DIR) + "/kernels/cuda/" + op + ".cu";
    try {
      const BuildResult build = build_module({file, {}, Backend::Cuda, "sm_80", std::chrono::seconds(600)});
      EXPECT_TRUE(std::filesystem::exists(build.module));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Unsupported) GTEST_SKIP() << e.what();  // no nvcc on this machine
      FAIL() << e.what();
    }
  }
  try {
    build_module({std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu",
                  {},
                  Backend::Cuda,
                  "sm_90",
                  std::chrono::seconds(600)});
    ADD_FAILURE() << "matmul built for sm_90";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("build for sm_90a"), std::string::npos) << e.what();
  }
}

// Variants the defaults leave out, whose code only a search would otherwise compile: attention's
// lazy rescaling (the running maximum moves only by more than 8) and its grid of one block per
// query tile (or causal pair) instead of one per SM; its non-causal key tiles of 176 keys; matmul's skinny
// path on the tensor cores in registers up to 64 rows of A (eight 8-column operands; the default
// takes 17 rows and more through shared memory, SKINNY_STAGED); its split of K over a cluster's
// blocks with 256-row tiles among the heights (SKINNY_CLUSTER); its wgmma tiles in clusters of two
// sharing A (CLUSTER); its 112-wide wgmma tiles, 6 stages deep.
TEST(CudaKernels, VariantsOffByDefaultCompileWithoutSpills) {
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/flash_attention.cu",
                               {{"LAZY_RESCALE", "1"}, {"PERSISTENT", "0"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/flash_attention.cu",
                               {{"KEYS", "176"}});
  // The trace marks bench/attention_timeline.cu builds the kernel with: a trace that spilled would
  // time a different kernel from the one it explains.
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/flash_attention.cu",
                               {{"AK_ATTENTION_TRACE", "1"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/flash_attention.cu",
                               {{"CHAIN", "1"}, {"TMA_STORE", "0"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/flash_attention.cu",
                               {{"CHAIN", "1"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu",
                               {{"SKINNY_MAX_M", "64"}, {"SKINNY_STAGED", "0"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu",
                               {{"SKINNY_CLUSTER", "1"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu", {{"CLUSTER", "2"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu",
                               {{"BLOCK_N", "112"}, {"STAGES", "6"}});
}

// The split tails, off by default until timed (split_tail_plan.h): the attention's pieces publish
// and add O and the row states, the matmul's their accumulators; neither may spill.
TEST(CudaKernels, SplitTailsCompileWithoutSpills) {
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/flash_attention.cu",
                               {{"SPLIT_TAIL", "1"}});
  expect_builds_without_spills(std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu", {{"SPLIT_TAIL", "1"}});
}

}  // namespace
}  // namespace ak
