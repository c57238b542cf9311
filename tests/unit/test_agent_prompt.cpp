// The agent's prompt: the task, the rules, the standing, the report, the latest history, the
// playbook and the kernel's source, in Markdown that the kernel's own text cannot break.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "core/error.h"
#include "core/paths.h"
#include "search/agent.h"

namespace ak::test {
namespace {
namespace fs = std::filesystem;

struct PromptFixture {
  fs::path dir = scratch_dir("agent-prompt");
  AgentContext context;
  PromptFixture() {
    context.op = "softmax";
    context.problem = "4096x4096";
    context.dtype = "bf16";
    context.kernel = dir / "softmax.cu";
    context.playbook = "# Playbook\n\nUse exp2 with log2(e) folded in.\n```cpp\n#pragma unroll\n```";
    write_file_atomically(context.kernel, "// a ``` fence inside the source\n#define THREADS 256\n");
  }
  ~PromptFixture() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

bool has(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

TEST(AgentPrompt, NamesTheTaskTheRulesAndTheSource) {
  PromptFixture f;
  const std::string prompt = agent_prompt(f.context);
  EXPECT_TRUE(has(prompt, "**softmax**")) << prompt;
  EXPECT_TRUE(has(prompt, "**4096x4096**"));
  EXPECT_TRUE(has(prompt, "**bf16**"));
  EXPECT_TRUE(has(prompt, "Edit only `" + f.context.kernel.string() + "`"));
  EXPECT_TRUE(has(prompt, "call->stream"));
  EXPECT_TRUE(has(prompt, "fp32 in fp32"));
  EXPECT_TRUE(has(prompt, "ak_launch"));
  EXPECT_TRUE(has(prompt, "@tune"));
  EXPECT_TRUE(has(prompt, "## Playbook\n\n### Playbook\n\nUse exp2 with log2(e) folded in.\n")) << prompt;
  EXPECT_TRUE(has(prompt, "No passing measurement yet"));
  EXPECT_TRUE(has(prompt, "No experiments yet"));
  EXPECT_TRUE(has(prompt, "```cpp\n#pragma unroll\n```\n")) << "a # inside a fence is not a heading";
  // The source sits in a fence longer than the one it contains, so it cannot end the block early.
  EXPECT_TRUE(has(prompt, "````cuda\n// a ``` fence inside the source\n#define THREADS 256\n````\n"))
      << prompt;
}

TEST(AgentPrompt, ShowsTheBestTimeRooflineAndLastReport) {
  PromptFixture f;
  f.context.best_us = 123.456;
  f.context.roofline_fraction = 0.8123;
  f.context.last_report = "PASS smoke sweep stability determinism edge\nmedian 123.5 us noise 0.3%";
  const std::string prompt = agent_prompt(f.context);
  EXPECT_TRUE(has(prompt, "**123.5 µs**")) << prompt;
  EXPECT_TRUE(has(prompt, "81.2% of the roofline"));
  EXPECT_TRUE(
      has(prompt, "```text\nPASS smoke sweep stability determinism edge\nmedian 123.5 us noise 0.3%\n```"));
  EXPECT_FALSE(has(prompt, "No passing measurement yet"));
}

TEST(AgentPrompt, KeepsTheLatestHistoryAsATable) {
  PromptFixture f;
  for (int i = 1; i <= 25; ++i)
    f.context.history.push_back({i, i % 2 ? "PASS" : "FAIL", i % 2 ? "reverted" : "failed",
                                 i % 2 ? 10.0 + i : 0,
                                 "note " + std::to_string(i) + (i == 25 ? " a|b\nsecond line" : "")});
  const std::string prompt = agent_prompt(f.context);
  EXPECT_TRUE(has(prompt, "The latest 20 of 25 experiments")) << prompt;
  EXPECT_FALSE(has(prompt, "| 5 | FAIL"));
  EXPECT_FALSE(has(prompt, "note 5 |"));
  EXPECT_TRUE(has(prompt, "| 6 | FAIL | failed | – | note 6 |"));
  EXPECT_TRUE(has(prompt, "| 7 | PASS | reverted | 17.00 | note 7 |"));
  EXPECT_TRUE(has(prompt, "| 25 | PASS | reverted | 35.00 | note 25 a\\|b second line |"));
}

TEST(AgentPrompt, AnUnreadableKernelIsAnIoError) {
  PromptFixture f;
  f.context.kernel = f.dir / "absent.cu";
  try {
    agent_prompt(f.context);
    FAIL() << "expected Error(Io)";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
  }
}

}  // namespace
}  // namespace ak::test
