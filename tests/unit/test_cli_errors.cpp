// Bad input gets a one-line error naming the problem and a non-zero exit; nothing is written.
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace ak::test {
namespace {

struct BadInput {
  const char* name;
  std::vector<std::string> args;
  const char* message;
};

void PrintTo(const BadInput& b, std::ostream* os) {
  *os << b.name;
}

class CliErrors : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliErrors, OneLineAndNonZeroExit) {
  const auto dir = scratch_dir("cli-errors");
  std::vector<std::string> args = GetParam().args;
  args.insert(args.end(), {"--results", (dir / "results.tsv").string()});
  const ProcessResult run = run_cli(args, 60);
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find(GetParam().message), std::string::npos) << run.output;
  EXPECT_LE(std::count(run.output.begin(), run.output.end(), '\n'), 2) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "results.tsv"));
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, CliErrors,
    ::testing::Values(
        BadInput{"missing_file", {"bench", "/nonexistent/k.cpp", "--op", "reduce"}, "kernel file not found"},
        BadInput{"unknown_op", {"bench", kernel("good_reduce.cpp"), "--op", "conv9d"}, "unknown op 'conv9d'"},
        BadInput{"bad_shape",
                 {"bench", kernel("good_reduce.cpp"), "--op", "reduce", "--shape", "12xfoo"},
                 "bad shape"},
        BadInput{"wrong_rank",
                 {"bench", kernel("good_reduce.cpp"), "--op", "reduce", "--shape", "8x8x8"},
                 "expected 2 dimensions"},
        BadInput{"bad_dtype",
                 {"bench", kernel("good_reduce.cpp"), "--op", "reduce", "--dtype", "fp8"},
                 "unknown dtype"},
        BadInput{"bad_budget",
                 {"tune", kernel("tunable_repeat.cpp"), "--op", "reduce", "--budget", "soon"},
                 "bad budget"},
        BadInput{"negative_confirm_rounds",
                 {"tune", kernel("tunable_repeat.cpp"), "--op", "reduce", "--confirm-rounds", "-1"},
                 "--confirm-rounds: Value -1 not in range 0 to 50"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(CliErrorsNoGpu, CudaBackendWithoutAGpuIsOneLine) {
  const ProcessResult probe = run_cli({"device", "--backend", "cuda", "--json"}, 60);
  if (probe.ok()) GTEST_SKIP() << "a GPU is present";
  EXPECT_NE(probe.exit_code, 0);
  EXPECT_TRUE(probe.output.find("CUDA") != std::string::npos ||
              probe.output.find("cuda") != std::string::npos)
      << probe.output;
  EXPECT_LE(std::count(probe.output.begin(), probe.output.end(), '\n'), 1) << probe.output;
}

TEST(Cli, HelpExplainsEveryCommand) {
  for (const char* command : {"device", "bench", "tune"}) {
    const ProcessResult run = run_cli({command, "--help"}, 30);
    EXPECT_EQ(run.exit_code, 0) << command;
    EXPECT_NE(run.output.find("--json"), std::string::npos) << command << ": " << run.output;
  }
}

}  // namespace
}  // namespace ak::test
