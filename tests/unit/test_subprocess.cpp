// Child processes: exit codes, signals, the time limit (which kills the whole group), the
// working directory, extra environment variables and stdin from a file.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli_runner.h"
#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"

namespace ak::test {
namespace {
namespace fs = std::filesystem;

ProcessResult shell(const std::string& script, ProcessOptions options = {}) {
  return run_process({"/bin/sh", "-c", script}, options);
}

TEST(Subprocess, ReportsExitCodeSignalAndOutput) {
  const ProcessResult exited = shell("echo one; echo two >&2; exit 7");
  EXPECT_EQ(exited.exit_code, 7);
  EXPECT_FALSE(exited.ok());
  EXPECT_EQ(exited.describe(), "exit 7");
  EXPECT_EQ(exited.tail(2), "one | two");
  // A carriage return or a terminal escape cannot rewrite what is shown around the reason.
  EXPECT_EQ(shell("printf 'shown\\r[ 2] kept\\033[2K\\n'").tail(1), "shown [ 2] kept [2K");

  const ProcessResult killed = shell("kill -TERM $$");
  EXPECT_EQ(killed.term_signal, SIGTERM);
  EXPECT_EQ(killed.describe(), "killed by SIGTERM");
}

TEST(Subprocess, TimesOutAndKillsTheWholeGroup) {
  ProcessOptions options;
  options.timeout = std::chrono::milliseconds(500);
  const ProcessResult run = shell("sleep 1000 & wait", options);
  EXPECT_TRUE(run.timed_out);
  EXPECT_LT(run.seconds, 3.0);  // the background sleep held the output pipe: it must be dead too
}

TEST(Subprocess, StdinIsEmptyByDefault) {
  const ProcessResult run = shell("wc -c");
  ASSERT_TRUE(run.ok()) << run.output;
  EXPECT_EQ(std::stoi(run.output), 0);
}

TEST(Subprocess, ReadsStdinFromAFileAndSetsEnvironmentAndDirectory) {
  const fs::path dir = scratch_dir("subprocess");
  write_file_atomically(dir / "input.txt", "line from the file\n");
  ::setenv("AK_TEST_INHERITED", "inherited", 1);
  ::setenv("AK_TEST_REPLACED", "old", 1);
  ProcessOptions options;
  options.cwd = dir;
  options.stdin_file = dir / "input.txt";
  options.env = {{"AK_TEST_REPLACED", "new"}, {"AK_TEST_ADDED", "a=b c"}};
  const ProcessResult run = shell(
      "cat; echo \"$AK_TEST_INHERITED $AK_TEST_REPLACED $AK_TEST_ADDED\"; env | grep -c AK_TEST_REPLACED; "
      "pwd",
      options);
  ::unsetenv("AK_TEST_INHERITED");
  ::unsetenv("AK_TEST_REPLACED");
  ASSERT_TRUE(run.ok()) << run.output;
  const std::string expected =
      "line from the file\ninherited new a=b c\n1\n" + fs::canonical(dir).string() + "\n";
  EXPECT_EQ(run.output, expected);
  fs::remove_all(dir);
}

TEST(Subprocess, AMissingStdinFileIsAnIoErrorNamingIt) {
  ProcessOptions options;
  options.stdin_file = "/nonexistent/autokernel-stdin";
  try {
    shell("true", options);
    FAIL() << "expected Error(Io)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/autokernel-stdin"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ak::test
