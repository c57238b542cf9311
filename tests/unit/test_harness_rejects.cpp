// The harness against deliberately broken host kernels: each must be rejected at the right
// stage for the right reason, and a good one must pass. Runs the real CLI (lint, compile,
// isolated worker, five stages, timing) on the host backend.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.h"
#include "core/paths.h"
#include "harness/results_log.h"

namespace ak::test {
namespace {

struct Expectation {
  const char* kernel;
  const char* status;
  const char* stage;   // "" = any
  const char* reason;  // substring of the reason
  std::vector<std::string> extra_args;
};

nlohmann::json bench(const std::string& file, const std::vector<std::string>& extra,
                     int* exit_code = nullptr) {
  // Generous limit: CI machines are small and may be busy; the hang test sets its own.
  std::vector<std::string> args{kernel(file), "--op",      "reduce", "--backend",  "host", "--shape",
                                "96x1000",    "--timeout", "180",    "--max-time", "0.2"};
  args.insert(args.end(), extra.begin(), extra.end());
  ProcessResult run;
  auto j = bench_json(args, 300, {}, &run);
  if (exit_code) *exit_code = run.exit_code;
  EXPECT_TRUE(j.is_object()) << run.output;
  return j;
}

void PrintTo(const Expectation& e, std::ostream* os) {
  *os << e.kernel;
}

class Rejects : public ::testing::TestWithParam<Expectation> {};

TEST_P(Rejects, AtTheRightStageForTheRightReason) {
  const Expectation& e = GetParam();
  int exit_code = 0;
  const auto j = bench(e.kernel, e.extra_args, &exit_code);
  EXPECT_EQ(j.value("status", ""), e.status) << j.dump(2);
  if (*e.stage) {
    EXPECT_EQ(j.value("stage", ""), e.stage) << j.dump(2);
  }
  EXPECT_NE(j.value("reason", "").find(e.reason), std::string::npos) << j.dump(2);
  EXPECT_EQ(exit_code, 1);
}

INSTANTIATE_TEST_SUITE_P(
    BrokenKernels, Rejects,
    ::testing::Values(
        Expectation{"wrong_values.cpp", "FAIL", "smoke", "reference", {}},
        Expectation{"unwritten_element.cpp", "FAIL", "smoke", "never written", {}},
        Expectation{"modifies_input.cpp", "FAIL", "smoke", "input x was modified", {}},
        Expectation{"writes_past_end.cpp", "FAIL", "smoke", "past the end of y", {}},
        Expectation{"nondeterministic.cpp", "FAIL", "determinism", "differs bitwise", {"--dtype", "fp32"}},
        Expectation{"cached_result.cpp", "FAIL", "smoke", "set 1", {}},
        Expectation{"all_zeros.cpp", "FAIL", "smoke", "reference", {}},
        Expectation{"hangs.cpp", "TIMEOUT", "smoke", "killed", {"--timeout", "8"}},
        Expectation{"segfaults.cpp", "CRASH", "smoke", "SIGSEGV", {}},
        Expectation{"static_constructor.cpp", "LINT", "lint", "constructor", {}},
        Expectation{"no_entry_point.cpp", "FAIL", "load", "does not export ak_launch", {}},
        Expectation{"compile_error.cpp", "COMPILE_ERROR", "compile", "undefined_function", {}}),
    [](const auto& param_info) {
      std::string name = param_info.param.kernel;
      return name.substr(0, name.find('.'));
    });

TEST(Harness, PassesACorrectKernelThroughEveryStageAndTimesIt) {
  const auto j = bench("good_reduce.cpp", {});
  ASSERT_EQ(j.value("status", ""), "PASS") << j.dump(2);
  std::vector<std::string> stages;
  for (const auto& s : j["stages"]) {
    stages.push_back(s["stage"]);
    EXPECT_TRUE(s["passed"].get<bool>());
    EXPECT_GT(s["checks"].get<int>(), 0);
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"smoke", "sweep", "stability", "determinism", "edge"}));
  EXPECT_GT(j["timing"]["median_us"].get<double>(), 0);
  EXPECT_GE(j["timing"]["samples"].get<int>(), 10);
  EXPECT_GT(j["gbps"].get<double>(), 0);
  EXPECT_GT(j["roofline"].get<double>(), 0);
}

TEST(Harness, AppendsOneRowPerExperimentToResults) {
  const auto dir = scratch_dir("results");
  const auto tsv = (dir / "results.tsv").string();
  for (const char* file : {"good_reduce.cpp", "wrong_values.cpp"})
    run_cli({"bench", kernel(file), "--op", "reduce", "--shape", "32x100", "--quick", "--json", "--max-time",
             "0.1", "--results", tsv});
  std::ifstream in(tsv);
  std::string header, first, second, extra;
  std::getline(in, header);
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(header + "\n", results_header());
  EXPECT_NE(first.find("\tPASS\t"), std::string::npos) << first;
  EXPECT_NE(second.find("\tFAIL\t"), std::string::npos) << second;
  EXPECT_FALSE(std::getline(in, extra));
  // Where the time went: the passing run names every phase it went through; the failing one
  // stops at the stage that failed (no timing).
  const auto rows = read_results(tsv);
  ASSERT_EQ(rows.size(), 2u);
  for (const char* phase :
       {"setup=", "launcher=", "smoke=", "primary=", "timing=", "check=", "teardown=", "total="})
    EXPECT_NE(rows[0].at("phases").find(phase), std::string::npos) << rows[0].at("phases");
  EXPECT_EQ(rows[1].at("phases").find("timing="), std::string::npos) << rows[1].at("phases");
}

// A results.tsv begun before columns were added (the workers') keeps every row: the older rows are
// read by the older header, the newer ones, longer by the added columns, by the current one.
TEST(Harness, ResultsBegunBeforeTheWorkerColumnsKeepEveryRow) {
  const auto dir = scratch_dir("results-old");
  const auto tsv = dir / "results.tsv";
  std::string header = results_header();
  const std::string added = "\tworker\tfirst_worker\tfirst_us\tbest_again_us\tagain_us\n";
  ASSERT_TRUE(header.ends_with(added));
  const std::string old_header = header.substr(0, header.size() - added.size()) + "\n";
  size_t columns = 1;
  for (char c : old_header) columns += c == '\t';
  std::string old_row;
  for (size_t i = 0; i < columns; ++i) old_row += (i ? "\t" : "") + std::string(i == 0 ? "then" : "x");
  write_file_atomically(tsv, old_header + old_row + "\n");
  ExperimentRequest request;
  ExperimentResult result;
  ResultRow row("optimize", "k.cpp", "", "dev", &request, &result);
  row.worker = "gpu1";
  append_result(tsv, row);
  const auto rows = read_results(tsv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("timestamp"), "then");
  EXPECT_EQ(rows[0].count("worker"), 0u);
  EXPECT_EQ(rows[1].at("worker"), "gpu1");
  EXPECT_EQ(rows[1].at("command"), "optimize");
}

// Every operator's host starter through the judge and the launcher, timed on fresh inputs: each
// op's unit layout (how the timing rearranges its inputs) must keep the reference right.
class HostStarters : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(HostStarters, PassQuickAndAreTimed) {
  const auto [op, shape] = GetParam();
  const auto dir = scratch_dir(std::string("starter-") + op);
  const ProcessResult run = run_cli({"bench", std::string(AK_SOURCE_DIR) + "/kernels/host/" + op + ".cpp",
                                     "--op", op, "--backend", "host", "--shape", shape, "--quick", "--json",
                                     "--max-time", "0.2", "--results", (dir / "results.tsv").string()});
  std::filesystem::remove_all(dir);
  const auto j = json_of(run);
  EXPECT_EQ(j.value("status", ""), "PASS") << run.output;
  EXPECT_GE(j["timing"]["slots"].get<int>(), 8) << j.dump(2);
  EXPECT_GT(j["timing"]["median_us"].get<double>(), 0) << j.dump(2);
}

INSTANTIATE_TEST_SUITE_P(
    EveryOp, HostStarters,
    ::testing::Values(std::pair{"matmul", "64x96x80"}, std::pair{"softmax", "64x256"},
                      std::pair{"layernorm", "64x256"}, std::pair{"rmsnorm", "64x256"},
                      std::pair{"reduce", "64x256"}, std::pair{"cross_entropy", "64x1000"},
                      std::pair{"rotary_embedding", "2x3x64x32"},
                      std::pair{"rotary_embedding", "2x3x64x32:bshd=1"},
                      std::pair{"flash_attention", "2x4x64x32:causal=1,kv_heads=2"},
                      std::pair{"flash_attention", "2x4x64x32:bshd=1,causal=1,kv_heads=2"},
                      std::pair{"fused_mlp", "32x64x128"}),
    [](const auto& param_info) {
      const std::string shape = param_info.param.second;
      return std::string(param_info.param.first) + (shape.find("bshd=1") != std::string::npos ? "_bshd" : "");
    });

// matmul with B held as a Linear's [N, K] weight (b_nk = 1): every stage presents the transposed
// view, so the starter (which reads the strides) passes them all, and a kernel that reads B as
// row-major [K, N] is caught, while the same kernel passes on a plain B.
TEST(Harness, MatmulOnALinearsWeightChecksTheTransposedView) {
  const auto bench_matmul = [](const std::string& file, const std::string& shape, bool quick) {
    std::vector<std::string> args{file,   "--op",    "matmul", "--backend",  "host", "--dtype",
                                  "fp32", "--shape", shape,    "--max-time", "0.2"};
    if (quick) args.push_back("--quick");  // smoke and the timed problem, in fp32 only
    ProcessResult run;
    return bench_json(args, 300, {}, &run);
  };
  const std::string starter = std::string(AK_SOURCE_DIR) + "/kernels/host/matmul.cpp";
  const auto good = bench_matmul(starter, "96x80x64:b_nk=1", false);
  EXPECT_EQ(good.value("status", ""), "PASS") << good.dump(2);
  const auto wrong = bench_matmul(kernel("matmul_ignores_layout.cpp"), "96x80x64:b_nk=1", true);
  EXPECT_EQ(wrong.value("status", ""), "FAIL") << wrong.dump(2);
  EXPECT_EQ(wrong.value("stage", ""), "smoke") << wrong.dump(2);
  const auto plain = bench_matmul(kernel("matmul_ignores_layout.cpp"), "96x80x64", true);
  EXPECT_EQ(plain.value("status", ""), "PASS") << plain.dump(2);
}

// Attention and rotary on a model's [B, S, H, D] projections (bshd = 1): every stage presents
// them as [B, H, S, D] views with those buffers' strides, so the starters (which read the strides)
// pass them all, and a rotary that reads x as contiguous [B, H, S, D] is caught, while the same
// kernel passes on plain tensors.
TEST(Harness, AttentionAndRotaryOnAModelsProjectionsCheckTheirLayout) {
  const auto bench_op = [](const std::string& file, const std::string& op, const std::string& shape,
                           bool quick) {
    std::vector<std::string> args{file,   "--op",    op,    "--backend",  "host", "--dtype",
                                  "fp32", "--shape", shape, "--max-time", "0.2"};
    if (quick) args.push_back("--quick");
    ProcessResult run;
    return bench_json(args, 300, {}, &run);
  };
  const std::string starters = std::string(AK_SOURCE_DIR) + "/kernels/host/";
  for (const auto& [op, shape] : {std::pair{"rotary_embedding", "2x3x64x32:bshd=1"},
                                  std::pair{"flash_attention", "2x4x64x32:bshd=1,causal=0,kv_heads=2"}}) {
    const auto good = bench_op(starters + op + ".cpp", op, shape, false);
    EXPECT_EQ(good.value("status", ""), "PASS") << good.dump(2);
  }
  const auto wrong =
      bench_op(kernel("rotary_ignores_layout.cpp"), "rotary_embedding", "2x3x64x32:bshd=1", true);
  EXPECT_EQ(wrong.value("status", ""), "FAIL") << wrong.dump(2);
  EXPECT_EQ(wrong.value("stage", ""), "smoke") << wrong.dump(2);
  const auto plain = bench_op(kernel("rotary_ignores_layout.cpp"), "rotary_embedding", "2x3x64x32", true);
  EXPECT_EQ(plain.value("status", ""), "PASS") << plain.dump(2);
}

// fused_mlp's signature gives its kernels a workspace (the intermediate h): the judge hands one to
// every call, guarded, and fills it with garbage before each, so a kernel that uses it honestly
// passes, one that counts on finding its last call's h there fails, and so does one that writes
// past the workspace's end only in the timed launches.
TEST(Harness, TheWorkspaceIsHandedToEveryCallAndClearedBetweenThem) {
  auto bench_mlp = [](const std::string& file) {
    ProcessResult run;
    auto j = bench_json({kernel(file), "--op", "fused_mlp", "--backend", "host", "--shape", "64x128x344",
                         "--timeout", "180", "--max-time", "0.2"},
                        300, {}, &run);
    EXPECT_TRUE(j.is_object()) << run.output;
    return j;
  };
  const auto honest = bench_mlp("mlp_workspace.cpp");
  EXPECT_EQ(honest.value("status", ""), "PASS") << honest.dump(2);
  const auto kept = bench_mlp("cheats/workspace_kept.cpp");
  EXPECT_EQ(kept.value("status", ""), "FAIL") << kept.dump(2);
  EXPECT_NE(kept.value("reason", "").find("differs bitwise"), std::string::npos) << kept.dump(2);
  // The workspace is guarded in the timed launches as in the checks.
  const auto overrun = bench_mlp("cheats/workspace_overrun_later.cpp");
  EXPECT_EQ(overrun.value("status", ""), "FAIL") << overrun.dump(2);
  const std::string reason = overrun.value("reason", "");
  EXPECT_NE(reason.find("wrote past the end of h"), std::string::npos) << overrun.dump(2);
  EXPECT_NE(reason.find("(a timed launch)"), std::string::npos) << overrun.dump(2);
}

// A diagnosis of the judge's clock: the user (never the kernel) may fix the number of timed slots.
TEST(Harness, TimedSlotsFollowTheEnvironmentAndABadValueIsOneLine) {
  auto bench_with = [](const std::string& slots, ProcessResult* run) {
    return bench_json({kernel("good_reduce.cpp"), "--op", "reduce", "--backend", "host", "--shape", "96x1000",
                       "--max-time", "0.2"},
                      300, {{"AUTOKERNEL_TIMING_SLOTS", slots}}, run);
  };
  ProcessResult run;
  const auto three = bench_with("3", &run);
  ASSERT_EQ(three.value("status", ""), "PASS") << three.dump(2);
  EXPECT_EQ(three["timing"]["slots"].get<int>(), 3);
  EXPECT_LT(three["timing"]["launcher_batch_us"].get<double>(), 0);  // the host's launcher has no events
  const auto bad = bench_with("65", &run);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(bad.value("reason", "").find("AUTOKERNEL_TIMING_SLOTS must be a number of slots from 1 to 64"),
            std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace ak::test
