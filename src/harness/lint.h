// A source lint for kernels. A kernel module is untrusted code that the harness loads into its
// own process, so before it is compiled the engine rejects constructs that could reach the
// harness or cheat the timing: load-time constructors, dynamic loading, threads and processes,
// extra streams and host callbacks, clocks, device-wide sync or reset, signal handlers and
// non-local jumps. It is a tripwire for the obvious routes, not a sandbox (token pasting or
// hand-written syscalls can get past any text check); each experiment still runs in a child
// process. For C, C++ and CUDA sources.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ak {

struct LintFinding {
  int line = 0;      // 1-based
  std::string rule;  // LintRule::name
  std::string text;  // the source line, trimmed
};

// Which view of the source a rule's pattern is matched against. Both have comments blanked.
// Most rules match code only, so a word in a string literal is harmless; rules whose target
// lives in a string by nature (inline assembly such as "mov.u64 %0, %%globaltimer;", section
// names, quoted #include names) match the view that keeps string contents.
enum class LintScope { Code, CodeAndStrings };

struct LintRule {
  std::string_view pattern;  // ECMAScript regex
  std::string_view name;     // unique
  std::string_view why;
  LintScope scope = LintScope::Code;
};

// Every rule, in the order findings on one line are reported.
std::span<const LintRule> lint_rules();

// Findings in line order; at most one per rule and line. Empty: the source passed.
std::vector<LintFinding> lint_kernel_source(std::string_view source);

// "line 12: dlopen (dynamic loading can reach into the harness): `void* h = dlopen(...)`"
std::string describe(const LintFinding& finding);

// The source with every comment (and, unless keep_strings, the contents of every string and
// character literal) replaced by spaces. Newlines stay, so offsets and line numbers still hold.
std::string blank_comments(std::string_view source, bool keep_strings);

}  // namespace ak
