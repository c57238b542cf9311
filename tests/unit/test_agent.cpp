// The agent proposer, run against real scripts (tests/agents/): an edit is taken, a failure or a
// hang leaves the kernel as it was, a hang leaves no process behind, and the agent gets the prompt.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "cli_runner.h"
#include "core/error.h"
#include "core/paths.h"
#include "search/agent.h"

namespace ak::test {
namespace {
namespace fs = std::filesystem;

constexpr const char* kKernelSource =
    "// @tune THREADS: 128, 256\n#define THREADS 256\nextern \"C\" int ak_launch(const void*) { return 0; "
    "}\n";
constexpr const char* kPlaybook = "# Playbook\n\nPrefer 16-byte loads when the row is aligned.\n";

std::string agent_script(const std::string& name) {
  return std::string(AK_SOURCE_DIR) + "/tests/agents/" + name;
}

// A kernel in a scratch directory of its own, the agent's working directory.
struct Workspace {
  fs::path dir;
  fs::path kernel;
  explicit Workspace(const std::string& name)
      : dir(scratch_dir("agent-" + name)), kernel(dir / "rmsnorm.cu") {
    write_file_atomically(kernel, kKernelSource);
  }
  ~Workspace() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  std::string read(const std::string& file) const { return read_text_file(dir / file); }

  AgentOutcome run(const std::string& command, int timeout_s = 30) const {
    AgentContext context{"rmsnorm", "8192x8192", "fp16", kernel, kPlaybook, "", 0, 0, {}};
    AgentTask task{command, kernel, agent_prompt(context), std::chrono::seconds(timeout_s), "rmsnorm"};
    return run_agent(task);
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Agent, TakesAnEditAndPassesThePromptOnStdinAndInAFile) {
  const Workspace ws("edits");
  const AgentOutcome outcome = ws.run(agent_script("edits.sh"));
  ASSERT_EQ(outcome.status, AgentStatus::Edited) << outcome.detail;
  EXPECT_NE(ws.read("rmsnorm.cu").find("#define THREADS 512"), std::string::npos);
  EXPECT_EQ(ws.read("rmsnorm.cu").find("#define THREADS 256"), std::string::npos);

  const std::string prompt = ws.read("received-prompt.md");
  EXPECT_EQ(ws.read("received-stdin.md"), prompt);
  EXPECT_NE(prompt.find(kKernelSource), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Prefer 16-byte loads when the row is aligned."), std::string::npos) << prompt;

  const auto env = lines_of(ws.read("received-env.txt"));
  ASSERT_EQ(env.size(), 4u);
  EXPECT_NE(fs::path(env[0]).parent_path(), ws.dir)
      << "the prompt file must live outside the kernel's directory";
  EXPECT_FALSE(fs::exists(env[0])) << "the prompt file is removed after the run";
  EXPECT_EQ(env[1], ws.kernel.string());
  EXPECT_EQ(env[2], "rmsnorm");
  EXPECT_EQ(fs::canonical(env[3]), fs::canonical(ws.dir));
}

TEST(Agent, RestoresTheKernelWhenTheAgentFails) {
  const Workspace ws("breaks");
  const AgentOutcome outcome = ws.run(agent_script("breaks.sh"));
  EXPECT_EQ(outcome.status, AgentStatus::Failed);
  EXPECT_NE(outcome.detail.find("exit 1"), std::string::npos) << outcome.detail;
  EXPECT_NE(outcome.detail.find("gave up halfway"), std::string::npos) << outcome.detail;
  EXPECT_EQ(ws.read("rmsnorm.cu"), kKernelSource);
}

// Whether `pid` is gone or a zombie waiting to be reaped (killed; no longer running).
bool finished(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

TEST(Agent, KillsAHangingAgentAndEverythingItStartedAndRestoresTheKernel) {
  const Workspace ws("hangs");
  const AgentOutcome outcome = ws.run(agent_script("hangs.sh"), 2);
  EXPECT_EQ(outcome.status, AgentStatus::Timeout) << outcome.detail;
  EXPECT_GE(outcome.seconds, 1.9);
  EXPECT_LT(outcome.seconds, 5.0);
  EXPECT_EQ(ws.read("rmsnorm.cu"), kKernelSource);

  const auto pid = lines_of(ws.read("sleep.pid"));
  ASSERT_EQ(pid.size(), 1u);
  bool gone = finished(pid[0]);
  for (int i = 0; i < 50 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gone = finished(pid[0]);
  }
  EXPECT_TRUE(gone) << "the agent's `sleep 1000` child (pid " << pid[0] << ") is still running";
  if (!gone) ::kill(std::stoi(pid[0]), SIGKILL);
}

TEST(Agent, TheAgentWritesItsKernelAndScratchButNothingThatJudgesIt) {
  const Workspace ws("escapes");
  const fs::path beside = ws.dir.parent_path() / "results.tsv";
  const bool existed = fs::exists(beside);
  ::setenv("AK_TEST_JUDGE_PID", std::to_string(::getpid()).c_str(), 1);
  const AgentOutcome outcome = ws.run(agent_script("escapes.sh"));
  ::unsetenv("AK_TEST_JUDGE_PID");
  ASSERT_EQ(outcome.status, AgentStatus::Edited) << outcome.detail;
  EXPECT_NE(ws.read("rmsnorm.cu").find("#define THREADS 512"), std::string::npos);
  const auto report = lines_of(ws.read("escape-report.txt"));
  EXPECT_EQ(report, (std::vector<std::string>{"tmpdir: allowed", "beside: denied", "signal: denied"}));
  if (!existed) {
    EXPECT_FALSE(fs::exists(beside)) << "the agent wrote beside its kernel's directory";
    std::error_code ignored;
    fs::remove(beside, ignored);
  }
}

TEST(Agent, ReportsUnchangedWhenNothingWasEdited) {
  const Workspace ws("nothing");
  const AgentOutcome outcome = ws.run(agent_script("does_nothing.sh"));
  EXPECT_EQ(outcome.status, AgentStatus::Unchanged) << outcome.detail;
  EXPECT_EQ(ws.read("rmsnorm.cu"), kKernelSource);
}

TEST(Agent, AnEditFollowedByAFailureIsUndone) {
  const Workspace ws("edit-then-fail");
  const AgentOutcome outcome = ws.run("echo 'broken' >> \"$AUTOKERNEL_KERNEL\"; exit 3");
  EXPECT_EQ(outcome.status, AgentStatus::Failed);
  EXPECT_NE(outcome.detail.find("exit 3"), std::string::npos) << outcome.detail;
  EXPECT_EQ(ws.read("rmsnorm.cu"), kKernelSource);
}

TEST(Agent, ADeletedKernelIsAFailureAndComesBack) {
  const Workspace ws("deletes");
  const AgentOutcome outcome = ws.run("rm \"$AUTOKERNEL_KERNEL\"");
  EXPECT_EQ(outcome.status, AgentStatus::Failed);
  EXPECT_NE(outcome.detail.find("deleted"), std::string::npos) << outcome.detail;
  EXPECT_EQ(ws.read("rmsnorm.cu"), kKernelSource);
}

TEST(Agent, AnAgentKilledByASignalFails) {
  const Workspace ws("signal");
  const AgentOutcome outcome = ws.run("echo x >> \"$AUTOKERNEL_KERNEL\"; kill -SEGV $$");
  EXPECT_EQ(outcome.status, AgentStatus::Failed);
  EXPECT_NE(outcome.detail.find("SIGSEGV"), std::string::npos) << outcome.detail;
  EXPECT_EQ(ws.read("rmsnorm.cu"), kKernelSource);
}

TEST(Agent, AMissingKernelIsAnIoError) {
  const Workspace ws("missing");
  AgentTask task{"true", ws.dir / "absent.cu", "prompt", std::chrono::seconds(5), "rmsnorm"};
  try {
    run_agent(task);
    FAIL() << "expected Error(Io)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
  }
}

TEST(Agent, StatusNames) {
  EXPECT_EQ(to_string(AgentStatus::Edited), "edited");
  EXPECT_EQ(to_string(AgentStatus::Unchanged), "unchanged");
  EXPECT_EQ(to_string(AgentStatus::Failed), "failed");
  EXPECT_EQ(to_string(AgentStatus::Timeout), "timeout");
}

}  // namespace
}  // namespace ak::test
