// The CudaHarness fixture of the GPU tests (tests/gpu/test_cuda_harness.cpp, test_cuda_attention.cpp):
// a starter through every stage of the real CLI, with or without defines in front of its own.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_runner.h"
#include "runtime/cuda/cuda_runtime.h"

namespace ak::test {

// The starter of `op` (kernels/cuda/OP.cu) with its defaults replaced by `defines` (the #ifndef
// defaults give way), written into a scratch directory: the file the search would build for that
// configuration.
inline std::string starter_with(const std::string& op, const std::string& defines) {
  const std::string tag = op + "-" + std::to_string(std::hash<std::string>{}(defines));
  const auto path = scratch_dir("cuda-variant-" + tag) / (op + ".cu");
  std::ifstream in(std::string(AK_SOURCE_DIR) + "/kernels/cuda/" + op + ".cu");
  std::ofstream out(path);
  out << defines << "\n" << in.rdbuf();
  return path.string();
}

// The matmul starter with `defines` in front of its own (none: the starter as it is), on one case.
struct MatmulVariant {
  std::string defines, shape, dtype;
};

class CudaHarness : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_device_present()) GTEST_SKIP() << "no CUDA GPU";
  }
  nlohmann::json bench(const std::string& file, const std::string& op, const std::string& shape,
                       std::vector<std::string> extra = {}) {
    std::vector<std::string> args{file,         "--op", op,          "--shape", shape,
                                  "--max-time", "0.5",  "--timeout", "120"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult run;
    auto j = bench_json(args, 600, {}, &run);
    EXPECT_TRUE(j.is_object()) << run.output;
    return j;
  }
  // `file` through every stage on each (shape, dtype) case: PASS on each.
  void expect_every_stage_passes(const std::string& file, const std::string& op,
                                 const std::vector<std::pair<std::string, std::string>>& cases) {
    for (const auto& [shape, dtype] : cases) {
      const auto j = bench(file, op, shape, {"--dtype", dtype});
      EXPECT_EQ(j.value("status", ""), "PASS") << file << ": " << shape << " " << dtype << "\n" << j.dump(2);
    }
  }
  void expect_matmul_variants_pass(const std::vector<MatmulVariant>& variants) {
    for (const auto& [defines, shape, dtype] : variants)
      expect_every_stage_passes(defines.empty() ? std::string(AK_SOURCE_DIR) + "/kernels/cuda/matmul.cu"
                                                : starter_with("matmul", defines),
                                "matmul", {{shape, dtype}});
  }
};

}  // namespace ak::test
