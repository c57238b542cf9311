// The agent's prompt: one Markdown document with the task, the rules, where the kernel stands,
// its last report, the history, the playbook and the kernel's source.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/paths.h"
#include "search/agent.h"

namespace ak {
namespace fs = std::filesystem;
namespace {

// A code fence longer than any run of backticks inside `text`, so the text cannot close it.
std::string fence_for(std::string_view text) {
  size_t longest = 0, run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

std::string fenced(std::string_view text, std::string_view language) {
  const std::string fence = fence_for(text);
  std::string out = fence + std::string(language) + "\n" + std::string(text);
  if (!text.empty() && text.back() != '\n') out += '\n';
  return out + fence + "\n";
}

std::string language_of(const fs::path& kernel) {
  const std::string ext = kernel.extension().string();
  if (ext == ".cu" || ext == ".cuh") return "cuda";
  if (ext == ".py") return "python";
  if (ext == ".cpp" || ext == ".cc" || ext == ".h" || ext == ".hpp") return "cpp";
  return "";
}

std::string format_us(double us) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, us >= 100 ? "%.1f" : "%.2f", us);
  return buffer;
}

// A table cell: one line, and a `|` that does not end the cell.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out.empty() ? "–" : out;
}

// The playbook's headings two levels down, so they nest under the prompt's "## Playbook". Lines
// inside code fences are left alone: a `#` there is a preprocessor line or a comment.
std::string nested_markdown(std::string_view text) {
  std::string out;
  bool in_fence = false;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    if (line.starts_with("```") || line.starts_with("~~~")) in_fence = !in_fence;
    if (!in_fence && line.starts_with('#')) out += "##";
    out += line;
    out += '\n';
    start = end + 1;
  }
  return out;
}

void write_task(std::ostream& out, const AgentContext& c) {
  const std::string name = c.kernel.filename().string();
  out << "# Make this kernel faster\n\n"
      << "You are optimizing the GPU kernel `" << name << "` for the operator **" << c.op
      << "** at problem **" << c.problem << "**, dtype **" << c.dtype
      << "**. Make it faster without breaking correctness: "
      << "every dtype and shape the harness checks must still pass.\n\n";
}

void write_rules(std::ostream& out, const AgentContext& c) {
  out << "## Rules\n\n"
      << "- Edit only `" << c.kernel.string() << "`. Create, change or delete no other file.\n"
      << "- Keep `extern \"C\" int ak_launch(const ak_call* call)` and the ABI: the same inputs, outputs,"
         " scalars and dtypes, in the operator's order. Return `AK_ERR_UNSUPPORTED` for what the"
         " kernel cannot handle rather than computing it wrong.\n"
      << "- Enqueue all device work on `call->stream`: no other stream, no device-wide synchronization."
         " Where the operator gives a workspace (`call->workspace`, `call->workspace_bytes`), take scratch"
         " there; it holds garbage at every call.\n"
      << "- Write every output element on every call, leave the inputs unchanged, give bitwise identical"
         " results run after run, and keep fp32 in fp32 (no lower-precision shortcut for fp32 data).\n"
      << "- Compute the real answer for every input. Do not detect or special-case the harness, its shapes,"
         " its input values or its buffers; do not cache results between calls.\n"
      << "- Keep the `@tune` and `@require` lines valid: every listed value must compile and run.\n"
      << "- The engine, not you, compiles, checks and times the kernel after you finish; you need no GPU."
         " Do not write results files (results.tsv, run.json) or commit anything.\n"
      << "- Make one coherent change, then stop: a change that fails any stage is thrown away.\n\n";
}

void write_standing(std::ostream& out, const AgentContext& c) {
  out << "## Where it stands\n\n";
  if (c.best_us > 0) {
    out << "Current best: **" << format_us(c.best_us) << " µs**";
    if (c.roofline_fraction > 0) {
      char percent[32];
      std::snprintf(percent, sizeof percent, "%.1f%%", 100 * c.roofline_fraction);
      out << ", " << percent << " of the roofline at the device's measured ceilings";
    }
    out << ".\n\n";
  } else {
    out << "No passing measurement yet: first make the kernel pass every stage.\n\n";
  }
  out << "### Last harness report\n\n";
  if (c.last_report.empty())
    out << "None yet.\n\n";
  else
    out << fenced(c.last_report, "text") << "\n";
}

void write_history(std::ostream& out, const std::vector<AgentHistoryItem>& history) {
  out << "## History\n\n";
  if (history.empty()) {
    out << "No experiments yet.\n\n";
    return;
  }
  const size_t first = history.size() > kAgentPromptHistory ? history.size() - kAgentPromptHistory : 0;
  if (first > 0)
    out << "The latest " << kAgentPromptHistory << " of " << history.size()
        << " experiments, oldest first.\n\n";
  out << "| # | status | decision | median µs | note |\n|---|---|---|---|---|\n";
  for (size_t i = first; i < history.size(); ++i) {
    const AgentHistoryItem& item = history[i];
    out << "| " << item.experiment << " | " << cell(item.status) << " | " << cell(item.decision) << " | "
        << (item.median_us > 0 ? format_us(item.median_us) : "–") << " | " << cell(item.note) << " |\n";
  }
  out << "\n";
}

}  // namespace

std::string agent_prompt(const AgentContext& context) {
  const std::string source = read_text_file(context.kernel);
  std::ostringstream out;
  write_task(out, context);
  write_rules(out, context);
  write_standing(out, context);
  write_history(out, context.history);
  if (!context.playbook.empty()) out << "## Playbook\n\n" << nested_markdown(context.playbook) << "\n";
  out << "## The kernel: `" << context.kernel.string() << "`\n\n"
      << fenced(source, language_of(context.kernel));
  return out.str();
}

}  // namespace ak
