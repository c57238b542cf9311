// `report` over a synthetic run of two kernels: the table's numbers, the projected speedup from
// the shares, the progress plot, and one-line errors for a missing run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "cli_runner.h"
#include "core/problem.h"
#include "harness/results_log.h"
#include "loop/run_state.h"

namespace ak::test {
namespace {

namespace fs = std::filesystem;

struct Experiment {
  std::string name, op, shape, decision;
  Status status;
  double median_us;
};

KernelState kernel_state(std::string name, std::string op, std::string shape, double share, double baseline,
                         double best, int experiments, int kept, int failed, std::string done) {
  KernelState k;
  k.name = std::move(name);
  k.op = std::move(op);
  k.file = "kernels/" + k.name + "/" + k.op + ".cpp";
  k.shape = std::move(shape);
  k.dtype = "fp32";
  k.share = share;
  k.baseline_us = baseline;
  k.best_us = best;
  k.best_roofline = 0.5;
  k.experiments = experiments;
  k.kept = kept;
  k.failed = failed;
  k.done = std::move(done);
  return k;
}

void append(const fs::path& tsv, int number, const Experiment& e) {
  ExperimentRequest request;
  request.op = e.op;
  request.problem = parse_problem(e.shape);
  request.dtype = DType::F32;
  ExperimentResult result;
  result.status = e.status;
  result.timing.median_us = e.median_us;
  ResultRow row("optimize", "kernels/" + e.name + "/" + e.op + ".cpp", "", "Test GPU", &request, &result);
  row.experiment = number;
  row.name = e.name;
  row.decision = e.decision;
  row.elapsed_s = 600.0 * number;
  append_result(tsv, row);
}

// rmsnorm: 100 -> 50 us (2x) on 30% of the model; matmul: 1000 -> 800 us (1.25x) on 50%.
fs::path synthetic_workspace() {
  const fs::path dir = scratch_dir("report") / "workspace";
  fs::create_directories(dir);
  RunState state;
  state.name = "suite";
  state.branch = "autokernel/2026-11-22-suite";
  state.backend = "host";
  state.device = "Test GPU";
  state.started = "2026-11-22T06:00:00Z";
  state.elapsed_s = 7200;
  state.experiments = 10;
  state.kernels = {kernel_state("rmsnorm", "rmsnorm", "4096x4096", 0.3, 100, 50, 6, 2, 1, kDonePatience),
                   kernel_state("matmul_1024", "matmul", "1024x1024x1024", 0.5, 1000, 800, 4, 1, 1, "")};
  state.projected_speedup = projected_speedup(state.kernels);
  save_run_state(dir, state);
  const std::vector<Experiment> experiments = {
      {"rmsnorm", "rmsnorm", "4096x4096", "baseline", Status::Pass, 100},
      {"rmsnorm", "rmsnorm", "4096x4096", "kept", Status::Pass, 80},
      {"rmsnorm", "rmsnorm", "4096x4096", "reverted", Status::Pass, 90},
      {"rmsnorm", "rmsnorm", "4096x4096", "failed", Status::Fail, 0},
      {"rmsnorm", "rmsnorm", "4096x4096", "kept", Status::Pass, 50},
      {"rmsnorm", "rmsnorm", "4096x4096", "reverted", Status::Pass, 60},
      {"matmul_1024", "matmul", "1024x1024x1024", "baseline", Status::Pass, 1000},
      {"matmul_1024", "matmul", "1024x1024x1024", "reverted", Status::Pass, 1100},
      {"matmul_1024", "matmul", "1024x1024x1024", "failed", Status::CompileError, 0},
      {"matmul_1024", "matmul", "1024x1024x1024", "kept", Status::Pass, 800}};
  for (size_t i = 0; i < experiments.size(); ++i)
    append(dir / kResultsFile, static_cast<int>(i) + 1, experiments[i]);
  return dir;
}

std::string png_header(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  return magic;
}

size_t line_count(const std::string& text) {
  return std::count(text.begin(), text.end(), '\n');
}

TEST(Report, JsonHasEachKernelsNumbersAndTheProjectedSpeedup) {
  const fs::path ws = synthetic_workspace();
  const ProcessResult run = run_cli({"report", "--workspace", ws.string(), "--json", "--no-plot"}, 60);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto j = json_of(run);
  ASSERT_EQ(j["kernels"].size(), 2u) << run.output;
  const auto& rms = j["kernels"][0];
  EXPECT_EQ(rms["name"], "rmsnorm");
  EXPECT_DOUBLE_EQ(rms["baseline_us"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(rms["best_us"].get<double>(), 50);
  EXPECT_DOUBLE_EQ(rms["speedup"].get<double>(), 2.0);
  EXPECT_EQ(rms["experiments"], 6);
  EXPECT_EQ(rms["kept"], 2);
  EXPECT_EQ(rms["failed"], 1);
  EXPECT_EQ(rms["state"], "patience");
  const auto& mm = j["kernels"][1];
  EXPECT_DOUBLE_EQ(mm["speedup"].get<double>(), 1.25);
  EXPECT_EQ(mm["kept"], 1);
  EXPECT_EQ(mm["state"], "active");
  // Amdahl: 20% untouched + 30% halved + 50% at 0.8 = 0.75 of the time.
  EXPECT_NEAR(j["summary"]["projected_speedup"].get<double>(), 1.0 / (0.2 + 0.3 * 0.5 + 0.5 * 0.8), 1e-9);
  EXPECT_EQ(j["summary"]["experiments"], 10);
  EXPECT_NEAR(j["summary"]["experiments_per_hour"].get<double>(), 5.0, 1e-9);
  EXPECT_TRUE(j["plot"].is_null());
  EXPECT_FALSE(fs::exists(ws / "reports"));
}

TEST(Report, TableShowsSpeedupsAndStates) {
  const fs::path ws = synthetic_workspace();
  const ProcessResult run = run_cli({"report", "--workspace", ws.string(), "--no-plot"}, 60);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* expected : {"rmsnorm", "matmul_1024", "100.0 → 50.0", "2.00x", "1.25x", "patience",
                               "active", "10 experiments in 2h 00m (5.0/hour)", "speedup 1.33x"})
    EXPECT_NE(run.output.find(expected), std::string::npos) << expected << " not in:\n" << run.output;
}

TEST(Report, DrawsTheProgressPlot) {
  const fs::path ws = synthetic_workspace();
  const fs::path png = ws.parent_path() / "plots" / "progress.png";
  const ProcessResult run = run_cli({"report", "--workspace", ws.string(), "--plot", png.string()}, 180);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_TRUE(fs::exists(png)) << run.output;
  EXPECT_EQ(png_header(png), "\x89PNG\r\n\x1a\n");
  EXPECT_GT(fs::file_size(png), 5000u);
  EXPECT_NE(run.output.find("progress plot: " + png.string()), std::string::npos) << run.output;
}

TEST(Report, DrawsTheDefaultPlotInTheWorkspace) {
  const fs::path ws = synthetic_workspace();
  const ProcessResult run = run_cli({"report", "--workspace", ws.string(), "--json"}, 180);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const fs::path png = ws / "reports" / "progress.png";
  EXPECT_EQ(json_of(run)["plot"], png.string());
  ASSERT_TRUE(fs::exists(png)) << run.output;
  EXPECT_EQ(png_header(png), "\x89PNG\r\n\x1a\n");
}

// Points the child at a Python that does not exist, for one test.
class ReportWithoutPython : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("AUTOKERNEL_PYTHON", "/nonexistent/python3", 1); }
  void TearDown() override { ::unsetenv("AUTOKERNEL_PYTHON"); }
};

TEST_F(ReportWithoutPython, AskedForPlotFailsAfterTheTable) {
  const fs::path ws = synthetic_workspace();
  const fs::path png = ws / "plot.png";
  const ProcessResult run = run_cli({"report", "--workspace", ws.string(), "--plot", png.string()}, 60);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("rmsnorm"), std::string::npos) << run.output;
  const std::string last = run.output.substr(run.output.rfind('\n', run.output.size() - 2) + 1);
  EXPECT_EQ(last.rfind("autokernel: no Python with matplotlib", 0), 0u) << run.output;
  EXPECT_FALSE(fs::exists(png));
}

TEST_F(ReportWithoutPython, DefaultPlotIsSkippedWithANote) {
  const fs::path ws = synthetic_workspace();
  const ProcessResult run = run_cli({"report", "--workspace", ws.string()}, 60);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("autokernel: no Python with matplotlib"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(ws / "reports" / "progress.png"));
}

TEST(Report, MissingWorkspaceIsAOneLineUsageError) {
  const fs::path dir = scratch_dir("report-missing");
  const ProcessResult run = run_cli({"report", "--workspace", (dir / "nowhere").string()}, 60);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(line_count(run.output), 1u) << run.output;
  EXPECT_EQ(run.output.rfind("autokernel: workspace not found", 0), 0u) << run.output;
}

TEST(Report, WorkspaceWithoutARunIsAOneLineUsageError) {
  const fs::path dir = scratch_dir("report-empty");
  const ProcessResult run = run_cli({"report", "--workspace", dir.string(), "--json"}, 60);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(line_count(run.output), 1u) << run.output;
  EXPECT_NE(run.output.find("run.json"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace ak::test
