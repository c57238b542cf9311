// The model pipeline on the CPU with host kernels: profile a small model written as a user would
// (tests/models/tiny_lm.py), extract its operators, verify the model with the kernels plugged in,
// and catch a wrong kernel. Needs the project's Python (scripts/install-python.sh makes it).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>

#include "cli_runner.h"
#include "harness/results_log.h"

namespace ak::test {
namespace {

const std::string kTinyModel = std::string(AK_TEST_MODELS) + "/tiny_lm.py:TinyLM";

// A test's scratch directory, removed when the test ends.
struct Scratch {
  explicit Scratch(const std::string& name) : dir(scratch_dir(name)) {}
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::filesystem::path dir;
};

// The workspace's kernel of `op` replaced by tests/kernels/`file`; false where the plan has none.
bool replace_kernel(const std::filesystem::path& ws, const std::string& op, const std::string& file) {
  const auto plan = nlohmann::json::parse(std::ifstream(ws / "plan.json"));
  for (const auto& k : plan["kernels"])
    if (k["op"] == op)
      return std::filesystem::copy_file(kernel(file), ws / k["file"].get<std::string>(),
                                        std::filesystem::copy_options::overwrite_existing);
  return false;
}

std::filesystem::path profiled_and_extracted(const Scratch& scratch, const std::string& model = kTinyModel) {
  const auto ws = scratch.dir / "workspace";
  const ProcessResult profile = run_cli({"profile", "--model", model, "--workspace", ws.string(), "--json"});
  EXPECT_TRUE(profile.ok()) << profile.output;
  const ProcessResult extract =
      run_cli({"extract", "--top", "20", "--backend", "host", "--workspace", ws.string(), "--json"});
  EXPECT_TRUE(extract.ok()) << extract.output;
  return ws;
}

TEST(ModelCli, ProfileAttributesEveryOperatorOnce) {
  const Scratch scratch("model-profile");
  const auto ws = scratch.dir / "workspace";
  const ProcessResult run = run_cli({"profile", "--model", kTinyModel, "--workspace", ws.string(), "--json"});
  ASSERT_TRUE(run.ok()) << run.output;
  const auto j = json_of(run);
  std::set<std::string> ops;
  double shares = 0, total = 0;
  for (const auto& e : j["entries"]) {
    if (e.contains("op")) ops.insert(e["op"].get<std::string>());
    shares += e["share"].get<double>();
    total += e["us"].get<double>();
  }
  // The tiny model reaches eight of the nine operators (its attention is written out, not SDPA).
  EXPECT_EQ(ops, (std::set<std::string>{"matmul", "rmsnorm", "rotary_embedding", "fused_mlp", "softmax",
                                        "layernorm", "cross_entropy", "reduce"}));
  EXPECT_NEAR(shares, 1.0, 1e-6);  // every entry once: the shares add up to the whole
  EXPECT_NEAR(total, j["total_us"].get<double>(), 1e-6 * total);
  EXPECT_NEAR(j["unknown_share"].get<double>(), 1.0 - j["covered_share"].get<double>(), 1e-6);
  // Our operators are two thirds of the tiny model's CPU op time at rest; on a busy machine (CTest
  // runs a test beside this one on each core) one preempted op can hold most of a profile's time,
  // so a low share is measured up to three times more: the best reading counts.
  double covered = j["covered_share"].get<double>();
  for (int again = 0; again < 3 && covered <= 0.3; ++again) {
    const ProcessResult rerun =
        run_cli({"profile", "--model", kTinyModel, "--workspace", ws.string(), "--json"});
    ASSERT_TRUE(rerun.ok()) << rerun.output;
    covered = std::max(covered, json_of(rerun)["covered_share"].get<double>());
  }
  EXPECT_GT(covered, 0.3);
  EXPECT_GT(j["projected_speedup"].get<double>(), 1.0);
  std::set<std::string> labels;
  for (const auto& site : j["sites"]) labels.insert(site["label"].get<std::string>());
  EXPECT_TRUE(labels.contains("rmsnorm written out")) << j["sites"].dump();
  EXPECT_TRUE(labels.contains("rotary (rotate-half)")) << j["sites"].dump();
  EXPECT_TRUE(std::filesystem::exists(ws / "profile" / "trace.json"));
}

TEST(ModelCli, ExtractWritesThePlanWithTheModelsShapes) {
  const Scratch scratch("model-extract");
  const auto ws = profiled_and_extracted(scratch);
  const auto plan = nlohmann::json::parse(std::ifstream(ws / "plan.json"));
  ASSERT_GE(plan["kernels"].size(), 8u);
  std::set<std::string> shapes;
  for (const auto& k : plan["kernels"]) {
    EXPECT_TRUE(std::filesystem::exists(ws / k["file"].get<std::string>())) << k.dump();
    EXPECT_EQ(k["dtype"], "fp32");
    shapes.insert(k["op"].get<std::string>() + " " + k["shape"].get<std::string>());
  }
  // The model's own problems: 2x24 tokens of width 48, SwiGLU hidden 136, 4 heads of 12; its
  // Linear layers' weights go to matmul as they are held, [N, K] (b_nk).
  EXPECT_TRUE(shapes.contains("fused_mlp 48x48x136")) << plan.dump();
  EXPECT_TRUE(shapes.contains("rotary_embedding 2x4x24x12")) << plan.dump();
  EXPECT_TRUE(shapes.contains("matmul 48x144x48:b_nk=1")) << plan.dump();
}

// The model named as users name theirs, by a path relative to where they run the engine
// ("examples/hf_llama.py:HFLlama"): the judge, whose processes run in directories of their own,
// must still find it (on the H100 it rejected transformers' Llama: "model file not found").
TEST(ModelCli, VerifyPlugsEveryKernelInAndOutputsMatch) {
  const Scratch scratch("model-verify");
  const std::string relative_model =
      std::filesystem::relative(std::string(AK_TEST_MODELS) + "/tiny_lm.py").string() + ":TinyLM";
  ASSERT_FALSE(std::filesystem::path(relative_model).is_absolute());
  const auto ws = profiled_and_extracted(scratch, relative_model);
  const ProcessResult run = run_cli({"verify", "--workspace", ws.string(), "--plug", "all", "--compile-modes",
                                     "none", "--iterations", "2", "--json"});
  ASSERT_TRUE(run.ok()) << run.output;
  const auto j = json_of(run);
  EXPECT_TRUE(j["passed"].get<bool>());
  ASSERT_GE(j["kernels"].size(), 8u);
  for (const auto& k : j["kernels"]) EXPECT_GE(k["calls"]["eager"].get<int>(), 1) << k.dump();
  ASSERT_FALSE(j["outputs"].empty());
  for (const auto& o : j["outputs"]) EXPECT_LT(o["relative_error"].get<double>(), 1e-4) << o.dump();
  const auto& eager = j["timing"]["rows"][0];
  EXPECT_EQ(eager["mode"], "eager");
  EXPECT_GT(eager["ours_us"].get<double>(), 0);
  EXPECT_GT(eager["torch_us"].get<double>(), 0);
  EXPECT_TRUE(std::filesystem::exists(ws / "kernels.json"));
  // The verdict: the judge, a process that loads no kernel, on the set plugged in.
  ASSERT_EQ(j["judged"].size(), 1u) << j["judged"].dump();
  const auto& judged = j["judged"][0];
  EXPECT_EQ(judged["mode"], "eager");
  EXPECT_EQ(judged["kernels"].size(), j["kernels"].size());
  const auto& record = judged["record"];
  EXPECT_EQ(record["status"], "PASS") << record.dump();
  EXPECT_EQ(record["correctness"]["passed"], 5) << record.dump();
  EXPECT_EQ(record["correctness"]["criterion"], "model") << record.dump();
  EXPECT_LT(record["correctness"]["relative_error"].get<double>(), 1e-4) << record.dump();
  EXPECT_GT(record["timing"]["solution"]["median_us"].get<double>(), 0) << record.dump();
  EXPECT_GT(record["speedup"]["eager"].get<double>(), 0) << record.dump();
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(ws / "judged.json")), j["judged"]);
}

TEST(ModelCli, AfterARunOnlyKernelsThatPassedAreCandidatesAndEachIsDecidedByTheModelsTime) {
  const Scratch scratch("model-after-run");
  const auto ws = profiled_and_extracted(scratch);
  const ProcessResult optimize =
      run_cli({"optimize", "--workspace", ws.string(), "--backend", "host", "--budget", "1", "--json"});
  ASSERT_TRUE(optimize.ok()) << optimize.output;
  const ProcessResult run = run_cli(
      {"verify", "--workspace", ws.string(), "--compile-modes", "none", "--iterations", "1", "--json"});
  ASSERT_TRUE(run.ok()) << run.output;
  const auto j = json_of(run);
  const auto& kernels = j["kernels"];
  ASSERT_GE(kernels.size(), 2u);
  // The one experiment's kernel is the only candidate; timing the whole model decides it, and the
  // reason names the model's times (or that none of its calls has the problem).
  EXPECT_TRUE(kernels[0]["candidate"].get<bool>()) << kernels[0].dump();
  const std::string why = kernels[0]["decisions"]["eager"]["why"];
  EXPECT_TRUE(why.find("µs") != std::string::npos || why.find("no call") != std::string::npos) << why;
  for (size_t i = 1; i < kernels.size(); ++i) {
    EXPECT_FALSE(kernels[i]["candidate"].get<bool>()) << kernels[i].dump();
    EXPECT_EQ(kernels[i]["why"], "not reached within the run's budget");
    EXPECT_EQ(kernels[i]["calls"]["eager"], 0);
  }
  EXPECT_TRUE(j["passed"].get<bool>());
  // The workspace's kernels.json, which apply(model, workspace=...) loads, says what verify decided
  // (it had said every candidate was in, whatever verify decided: apply plugged kernels left out).
  const auto manifest = nlohmann::json::parse(std::ifstream(ws / "kernels.json"));
  int found = 0;
  for (const auto& entry : manifest["kernels"]) {
    if (entry["name"] != kernels[0]["name"]) continue;
    ++found;
    EXPECT_EQ(entry["use"], kernels[0]["decisions"]["eager"]["in"]) << entry.dump();
    EXPECT_EQ(entry["why"].get<std::string>(), "verify, eager: " + why) << entry.dump();
  }
  EXPECT_EQ(found, 1) << manifest.dump();
}

TEST(ModelCli, VerifyWhoseBudgetEndsBeforeAnyTimingStillChecksTheOutputs) {
  const Scratch scratch("model-verify-budget");
  const auto ws = profiled_and_extracted(scratch);
  // Two seconds from verify's start: spent building the kernels and starting the bridge, so the
  // first measurement is stopped at once. The budget bounds the timing, not the check: the
  // outputs with every candidate are compared from one untimed forward pass.
  const ProcessResult run = run_cli({"verify", "--workspace", ws.string(), "--compile-modes", "none",
                                     "--iterations", "1", "--budget", "2", "--json"});
  ASSERT_TRUE(run.ok()) << run.output;
  const auto j = nlohmann::json::parse(std::ifstream(ws / "verify.json"));
  EXPECT_TRUE(j["stopped_at_budget_end"].get<bool>()) << j.dump();
  EXPECT_TRUE(j["passed"].get<bool>()) << j.dump();
  ASSERT_FALSE(j["outputs"].empty()) << j.dump();
  for (const auto& o : j["outputs"])
    EXPECT_NE(o["name"].get<std::string>().find("untimed"), std::string::npos);
  EXPECT_NE(j["timing"]["rows"][0]["note"].get<std::string>().find("stopped"), std::string::npos) << j.dump();
  EXPECT_GE(j["elapsed_s"].get<double>(), 2.0);  // it counts from the CLI's start, builds included
}

TEST(ModelCli, VerifyCatchesAWrongKernel) {
  const Scratch scratch("model-wrong");
  const auto ws = profiled_and_extracted(scratch);
  ASSERT_TRUE(replace_kernel(ws, "rmsnorm", "wrong_rmsnorm.cpp"));
  const ProcessResult run =
      run_cli({"verify", "--workspace", ws.string(), "--compile-modes", "none", "--iterations", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("MISMATCH"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("differ from eager"), std::string::npos) << run.output;
}

TEST(ModelCli, TheVerdictComesFromTheJudgeNotFromTheProcessThatLoadsTheKernels) {
  const Scratch scratch("model-forged");
  const auto ws = profiled_and_extracted(scratch);
  // Wrong, and it rewrites verify's own report as passed when verify's Python process ends.
  ASSERT_TRUE(replace_kernel(ws, "rmsnorm", "wrong_rmsnorm_forges_verify.cpp"));
  const std::vector<std::string> verify = {"verify",          "--workspace", ws.string(),    "--plug", "all",
                                           "--compile-modes", "none",        "--iterations", "1"};
  // Without the judge the forgery works: the report says passed (the test can tell). The kernel's
  // process is confined to the workspace: its file beside it is not there.
  std::vector<std::string> unjudged = verify;
  unjudged.push_back("--no-judge");
  const ProcessResult forged = run_cli(unjudged);
  EXPECT_TRUE(forged.ok()) << forged.output;
  EXPECT_EQ(forged.output.find("MISMATCH"), std::string::npos) << forged.output;
  const auto planted = scratch.dir / "planted-by-a-kernel";
  EXPECT_FALSE(std::filesystem::exists(planted));
  ::setenv("AUTOKERNEL_UNCONFINED", "1", 1);  // (unconfined it gets out: the test can tell)
  const ProcessResult unconfined = run_cli(unjudged);
  ::unsetenv("AUTOKERNEL_UNCONFINED");
  EXPECT_TRUE(unconfined.ok()) << unconfined.output;
  EXPECT_TRUE(std::filesystem::exists(planted));
  // With it, the verdict is the judge's, which compared the outputs in a process of its own.
  const ProcessResult judged = run_cli(verify);
  EXPECT_EQ(judged.exit_code, 1) << judged.output;
  EXPECT_NE(judged.output.find("the judge rejected the model with our kernels: eager"), std::string::npos)
      << judged.output;
  EXPECT_NE(judged.output.find("INCORRECT in trial 1 of 5"), std::string::npos) << judged.output;
  EXPECT_NE(judged.output.find("relative error"), std::string::npos) << judged.output;
}

// The longest experiment of a run's results.tsv, built and measured: its phases' compile + total
// ("compile=2.98 setup=0.21 ... total=4.40", phase_seconds).
double longest_experiment_seconds(const std::filesystem::path& results) {
  double longest = 0;
  for (const ResultRecord& row : read_results(results)) {
    const std::string phases = " " + row.at("phases");
    const auto seconds = [&](const std::string& phase) {
      const auto at = phases.find(" " + phase + "=");
      return at == std::string::npos ? 0.0 : std::atof(phases.c_str() + at + phase.size() + 2);
    };
    longest = std::max(longest, seconds("compile") + seconds("total"));
  }
  return longest;
}

TEST(ModelCli, RunSaysItsSplitUpFrontAndKeepsToItsBudget) {
  const Scratch scratch("model-run");
  const auto ws = scratch.dir / "workspace";
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult run =
      run_cli({"run", "--model", kTinyModel, "--device", "cpu", "--top", "2", "--budget", "45s",
               "--compile-modes", "none", "--workspace", ws.string()},
              300);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(run.ok()) << run.output;
  EXPECT_NE(run.output.find("budget 45s in all"), std::string::npos) << run.output;
  const auto split = run.output.find("optimize gets");
  ASSERT_NE(split, std::string::npos) << run.output;
  EXPECT_LT(split, run.output.find("==== optimize")) << run.output;  // said before it starts
  EXPECT_TRUE(std::filesystem::exists(ws / "verify.json"));
  // TinyLM's default 2 x 24 tokens is a prefill: the run says how to check the decode steps too.
  EXPECT_NE(run.output.find("--input-shape 2,1 --workspace " + ws.string() + "-decode"), std::string::npos)
      << run.output;
  // Within the budget, but for what was in flight when it ended: optimize starts no experiment
  // its measurements say would not fit, yet its first ones cannot be estimated, and one worker
  // holds two (one measuring, one queued); verify stops its timing at its end and its start-up
  // and untimed check take seconds. On a loaded 2-core machine an experiment took 25 s.
  EXPECT_LT(seconds, 45 + 2 * longest_experiment_seconds(ws / "results.tsv") + 25) << run.output;
}

struct BadModel {
  const char* name;
  std::vector<std::string> args;
  const char* message;
};

void PrintTo(const BadModel& b, std::ostream* os) {
  *os << b.name;
}

class ModelErrors : public ::testing::TestWithParam<BadModel> {};

TEST_P(ModelErrors, OneLineAndNonZeroExit) {
  const Scratch scratch("model-errors");
  const auto ws = scratch.dir / "workspace";
  std::vector<std::string> args = GetParam().args;
  args.insert(args.end(), {"--workspace", ws.string()});
  const ProcessResult run = run_cli(args, 120);
  EXPECT_NE(run.exit_code, 0) << run.output;
  const std::string last = run.tail(1);
  EXPECT_NE(last.find(GetParam().message), std::string::npos) << run.output;
  EXPECT_EQ(last.rfind("autokernel: ", 0), 0u) << run.output;
  EXPECT_FALSE(std::filesystem::exists(ws / "profile.json"));
}

const std::string kBroken = std::string(AK_TEST_MODELS) + "/broken.py";

INSTANTIATE_TEST_SUITE_P(
    BadModels, ModelErrors,
    ::testing::Values(
        BadModel{"missing_file", {"profile", "--model", "/nonexistent/model.py:Net"}, "model file not found"},
        BadModel{"missing_class", {"profile", "--model", kTinyModel + "Typo"}, "has no class TinyLMTypo"},
        BadModel{"not_a_module", {"profile", "--model", kBroken + ":NotAModule"}, "not a torch.nn.Module"},
        BadModel{
            "needs_arguments", {"profile", "--model", kBroken + ":NeedsArguments"}, "no arguments failed"},
        BadModel{
            "does_not_run", {"profile", "--model", kBroken + ":FailsInForward"}, "does not run on input"},
        BadModel{"wrong_input_shape",
                 {"profile", "--model", kTinyModel, "--input-shape", "2,24,3"},
                 "bad input shape"},
        BadModel{"unknown_model", {"profile", "--model", "resnet9000"}, "resnet9000"},
        BadModel{"verify_without_profile", {"verify"}, "run `autokernel profile"},
        BadModel{"extract_without_profile", {"extract"}, "run `autokernel profile"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(ModelErrorsNoTorch, MissingPyTorchIsOneLine) {
  const Scratch scratch("model-no-torch");
  const auto ws = scratch.dir / "workspace";
  const ProcessResult run = run_process({"env", "AUTOKERNEL_PYTHON=/bin/false", AK_CLI_PATH, "profile",
                                         "--model", "llama-tiny", "--workspace", ws.string()});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("no Python with PyTorch"), std::string::npos) << run.output;
  EXPECT_LE(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
}

}  // namespace
}  // namespace ak::test
