// The cheat battery on the host backend: kernels that try to look fast or correct without being
// either, the way a language model rewarded for speed would, most of them hidden from the lint
// (raw system calls, names built at run time). Each must end FAIL, CRASH or TIMEOUT with a reason
// naming what happened; none may PASS faster than it really is. Runs the real CLI: the judge,
// the sandboxed launcher, the five stages and the judge's clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "cli_runner.h"
#include "harness/evaluate.h"

namespace ak::test {
namespace {

nlohmann::json bench_cheat(const std::string& file, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{kernel("cheats/" + file),
                                "--op",
                                "reduce",
                                "--backend",
                                "host",
                                "--shape",
                                "96x1000",
                                "--timeout",
                                "180",
                                "--max-time",
                                "0.3"};
  args.insert(args.end(), extra.begin(), extra.end());
  ProcessResult run;
  auto j = bench_json(args, 300, {}, &run);
  EXPECT_TRUE(j.is_object()) << run.output;
  return j;
}

struct Cheat {
  const char* kernel;
  const char* status;
  const char* reason;  // a substring of the reason
};

void PrintTo(const Cheat& c, std::ostream* os) {
  *os << c.kernel;
}

class CheatBattery : public ::testing::TestWithParam<Cheat> {};

TEST_P(CheatBattery, IsRejectedWithAReasonThatNamesIt) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the battery's hidden system calls are x86-64";
#endif
  const Cheat& c = GetParam();
  const auto j = bench_cheat(c.kernel);
  EXPECT_EQ(j.value("status", ""), c.status) << j.dump(2);
  EXPECT_NE(j.value("reason", "").find(c.reason), std::string::npos) << j.dump(2);
}

INSTANTIATE_TEST_SUITE_P(
    Host, CheatBattery,
    ::testing::Values(
        // Verdicts forged where a worker once read them.
        Cheat{"forge_channel.cpp", "FAIL", "unexpected message on the launch channel"},
        Cheat{"forge_done.cpp", "FAIL", "never written"},
        Cheat{"forge_done_time.cpp", "FAIL", "unexpected message on the launch channel"},
        Cheat{"forge_result_file.cpp", "CRASH", "sandbox: the kernel's code called openat"},
        Cheat{"lies_on_stdout.cpp", "FAIL", "reference"},
        // Reaching the judge.
        Cheat{"patch_judge.cpp", "CRASH", "process_vm_writev"},
        Cheat{"kill_judge.cpp", "CRASH", "called kill"},
        Cheat{"read_judge_memory.cpp", "FAIL", "ak_launch returned 2"},
        // Work that escapes the timed launch.
        Cheat{"deferred_thread.cpp", "CRASH", "starting a thread or a process"},
        Cheat{"fork_at_load.cpp", "CRASH", "called fork"},
        Cheat{"deferred_to_next_call.cpp", "FAIL", "never written"},
        // Results reused in the timed runs.
        Cheat{"skip_after_stages.cpp", "FAIL", "sampled outputs never written"},
        Cheat{"row_cache.cpp", "FAIL", "reference"}, Cheat{"wrong_now_and_then.cpp", "FAIL", "reference"},
        // Work of calls not yet made, done ahead in one.
        Cheat{"batched_calls.cpp", "FAIL", "call never made"}),
    [](const auto& param_info) {
      std::string name = param_info.param.kernel;
      return name.substr(0, name.find('.'));
    });

// A kernel's own output reaches the reason of its crash, and so the loop's progress lines and
// results.tsv: there it stays on one line, without the carriage return or terminal escape that
// would show a forged "kept" row where the crash is reported.
TEST(CheatBattery, ItsOutputInAReasonForgesNoLineOfTheReport) {
  const auto j = bench_cheat("forges_report_lines.cpp");
  EXPECT_EQ(j.value("status", ""), "CRASH") << j.dump(2);
  const std::string reason = j.value("reason", "");
  EXPECT_NE(reason.find("the kernel's process ended"), std::string::npos) << reason;
  EXPECT_NE(reason.find("kept      (defaults)  PASS"), std::string::npos) << reason;  // its output is there
  EXPECT_EQ(reason.find_first_of("\r\n\x1b"), std::string::npos) << j.dump(2);
}

// The compiler quotes a refused source in its error, which becomes the COMPILE_ERROR's reason:
// terminal escapes in that source come out as spaces, the compiler's lines kept apart.
TEST(CheatBattery, ItsSourceInACompileErrorForgesNoLineOfTheReport) {
  const auto j = bench_cheat("forges_report_lines_when_refused.cpp");
  EXPECT_EQ(j.value("status", ""), "COMPILE_ERROR") << j.dump(2);
  const std::string reason = j.value("reason", "");
  EXPECT_NE(reason.find("kept      (defaults)  PASS"), std::string::npos) << reason;  // the quote is there
  EXPECT_EQ(reason.find_first_of("\r\x1b"), std::string::npos) << j.dump(2);
}

// The battery hides from the source lint on purpose: what stops these kernels is the judge and
// the sandbox, and the lint stays a tripwire.
TEST(CheatBattery, PassesTheLint) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(AK_TEST_KERNELS) + "/cheats")) {
    const auto ext = entry.path().extension();
    if (ext != ".cpp" && ext != ".cu") continue;
    ++files;
    EXPECT_EQ(lint_report(entry.path()), "") << entry.path();
  }
  EXPECT_GE(files, 15);
}

// The fingerprint cheat never finds its fingerprint in the timed runs (fresh inputs, poisoned
// outputs every batch), so it does the work: it may pass, but only at an honest kernel's time.
TEST(CheatBattery, ResultReuseGainsNothing) {
  const auto honest = bench_cheat("../good_reduce.cpp");
  const auto cheat = bench_cheat("fingerprint_reuse.cpp");
  ASSERT_EQ(honest.value("status", ""), "PASS") << honest.dump(2);
  if (cheat.value("status", "") != "PASS") return;
  double honest_us = honest["timing"]["median_us"], cheat_us = cheat["timing"]["median_us"];
  if (cheat_us <= 0.3 * honest_us) {
    // A busy machine can slow one measurement several times over; a reuse that works is fast
    // every time, so the faster of two of each settles it.
    const auto honest_again = bench_cheat("../good_reduce.cpp"),
               cheat_again = bench_cheat("fingerprint_reuse.cpp");
    if (honest_again.value("status", "") == "PASS")
      honest_us = std::min(honest_us, honest_again["timing"]["median_us"].get<double>());
    if (cheat_again.value("status", "") == "PASS")
      cheat_us = std::min(cheat_us, cheat_again["timing"]["median_us"].get<double>());
  }
  EXPECT_GT(cheat_us, 0.3 * honest_us) << "reused results read as a speedup: " << cheat.dump(2);
}

// A kernel faster than the measured ceilings allow is a failure, never a roofline above 100%:
// here the ceilings say the host moves 1 MB/s, so an honest kernel looks impossibly fast.
TEST(CheatBattery, FasterThanPhysicsFails) {
  const auto cache = scratch_dir("physics-cache");
  const auto dir = scratch_dir("physics");
  auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), AK_CLI_PATH);
    ProcessOptions options;
    options.timeout = std::chrono::seconds(300);
    options.env = {{"AUTOKERNEL_CACHE", cache.string()}};
    return run_process(args, options);
  };
  const auto device = json_of(run({"device", "--backend", "host", "--json"}));
  ASSERT_TRUE(device.contains("id")) << device.dump(2);
  nlohmann::json slow = {{"copy_gbps", 0.001},
                         {"matrix_tflops", 0.0},
                         {"matrix_how", "test"},
                         {"measured_at", "2026-11-24T00:00:00Z"}};
  std::filesystem::create_directories(cache / "ceilings");
  std::ofstream(cache / "ceilings" / (device["id"].get<std::string>() + ".json")) << slow.dump();
  const auto result = json_of(
      run({"bench", kernel("good_reduce.cpp"), "--op", "reduce", "--backend", "host", "--shape", "96x1000",
           "--quick", "--json", "--max-time", "0.2", "--results", (dir / "results.tsv").string()}));
  EXPECT_EQ(result.value("status", ""), "FAIL") << result.dump(2);
  EXPECT_NE(result.value("reason", "").find("faster than the hardware allows"), std::string::npos)
      << result.dump(2);
  std::filesystem::remove_all(cache);
  std::filesystem::remove_all(dir);
}

// Tuning values reach the compiler as -DNAME=VALUE: anything but plain values is refused before
// a compiler runs.
TEST(CheatBattery, TuneValuesCannotInjectFlagsOrShellText) {
  const auto dir = scratch_dir("inject");
  for (const std::string line : {"// @tune REPEAT: 1 -o/tmp/evil", "// @tune REPEAT: 1;touch /tmp/x",
                                 "// @tune REPEAT: $(id)", "// @tune -DX: 1"}) {
    const auto file = dir / "inject.cpp";
    std::ofstream(file) << line << "\n#include \"" << AK_TEST_KERNELS
                        << "/reduce_skeleton.h\"\nextern \"C\" int ak_launch(const ak_call* c) { return "
                           "test_kernels::reduce_rows(c, 0, [](int64_t, double s) { return s; }); }\n";
    const auto run =
        run_cli({"tune", file.string(), "--op", "reduce", "--backend", "host", "--shape", "32x100"});
    EXPECT_EQ(run.exit_code, 2) << line << "\n" << run.output;
    EXPECT_NE(run.output.find("tune space line 1"), std::string::npos) << run.output;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ak::test
