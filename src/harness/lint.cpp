#include "harness/lint.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>

namespace ak {
namespace {

using enum LintScope;

// Names match as whole words (\b...\b). A few match as prefixes on purpose, so the variants of a
// call are caught too: cudaStreamCreate\w* takes cudaStreamCreateWithFlags/-WithPriority,
// cudaEventRecord\w* takes cudaEventRecordWithFlags, cudaSetDevice\w* takes cudaSetDeviceFlags.
// Calls that share their name with common words (clock, system, signal) match only as calls.
constexpr LintRule kRules[] = {
    // Load-time code: runs when the harness dlopens the module, outside any launch or check.
    {R"(\b__attribute__\s*\(\([^;{}]{0,200}?\b(?:__)?(?:con|de)structor(?:__)?\b)",
     "__attribute__((constructor))", "runs code when the module is loaded or unloaded, inside the harness"},
    {R"(\[\[[^\]]{0,200}?\b(?:__)?(?:con|de)structor(?:__)?\b)", "[[gnu::constructor]]",
     "runs code when the module is loaded or unloaded, inside the harness"},
    {R"(^[ \t]*#[ \t]*pragma[ \t]+(?:init|fini)\b)", "#pragma init",
     "runs code when the module is loaded, inside the harness"},
    {R"(\.(?:preinit_array|init_array|fini_array|ctors|dtors)\b)", ".init_array",
     "a load-time section runs code when the module is loaded, inside the harness", CodeAndStrings},
    {R"(\b(?:__cxa_)?atexit\b|\bat_quick_exit\b)", "atexit",
     "registers code that runs when the harness exits"},
    // Dynamic loading and symbol lookup.
    {R"(\b(?:__libc_)?dlopen\w*)", "dlopen", "dynamic loading can reach into the harness"},
    {R"(\bdlv?sym\b)", "dlsym", "symbol lookup can reach into the harness"},
    {R"(\bdlmopen\b)", "dlmopen", "dynamic loading can reach into the harness"},
    {R"(\b(?:dladdr1?|dlinfo|dl_iterate_phdr)\b)", "dladdr", "inspects the objects loaded in the harness"},
    {R"(\bRTLD_\w+)", "RTLD_", "dynamic loading flags: dynamic loading can reach into the harness"},
    // Threads and processes: work that outlives the launch or escapes the timing.
    {R"(\bstd\s*::\s*thread\b)", "std::thread", "a thread can keep working outside the timed launch"},
    {R"(\bstd\s*::\s*jthread\b)", "std::jthread", "a thread can keep working outside the timed launch"},
    {R"(\bstd\s*::\s*async\b)", "std::async", "a task can keep working outside the timed launch"},
    {R"(\bpthread_create\b)", "pthread_create", "a thread can keep working outside the timed launch"},
    {R"(\bfork\b)", "fork", "a process can keep working outside the timed launch"},
    {R"(\bvfork\b)", "vfork", "a process can keep working outside the timed launch"},
    {R"(\b(?:exec(?:l|lp|le|v|vp|vpe|ve|veat)|fexecve)\b)", "exec", "replaces or starts a program"},
    {R"(\bsystem\s*\()", "system", "runs a shell command"},
    {R"(\bpopen\b)", "popen", "runs a shell command"},
    {R"(\bposix_spawnp?\b)", "posix_spawn", "starts a process"},
    {R"(\bsyscall\b)", "syscall", "raw system calls get around every other rule", CodeAndStrings},
    // Extra streams and host callbacks: work outside call->stream escapes the timing marks.
    {R"(\bcudaStreamCreate\w*)", "cudaStreamCreate", "work on another stream escapes the timing"},
    {R"(\bcuStreamCreate\w*)", "cuStreamCreate", "work on another stream escapes the timing"},
    {R"(\bcudaStream(?:PerThread|Legacy)\b)", "cudaStreamPerThread",
     "work on another stream escapes the timing"},
    {R"(\bcudaLaunchHostFunc\b)", "cudaLaunchHostFunc", "a host callback runs arbitrary code in the harness"},
    {R"(\bcu(?:da)?StreamAddCallback\b)", "cudaStreamAddCallback",
     "a host callback runs arbitrary code in the harness"},
    {R"(\bcuLaunchHostFunc\b)", "cuLaunchHostFunc", "a host callback runs arbitrary code in the harness"},
    // Timers and clocks: a kernel has no business reading or recording time.
    {R"(\bclock\s*\()", "clock", "reads a clock; timing is the harness's job"},
    {R"(\b(?:clock_gettime|timespec_get)\b)", "clock_gettime", "reads a clock; timing is the harness's job"},
    {R"(\bgettimeofday\b)", "gettimeofday", "reads a clock; timing is the harness's job"},
    {R"(\bstd\s*::\s*chrono\b)", "std::chrono", "reads a clock; timing is the harness's job"},
    {R"(\bcu(?:da)?EventElapsedTime\w*)", "cudaEventElapsedTime",
     "reads timing events; timing is the harness's job"},
    {R"(\bcu(?:da)?EventRecord\w*)", "cudaEventRecord", "records timing events; timing is the harness's job"},
    // %clock and %clock64 are SM cycle counters for in-kernel profiling and stay allowed.
    {R"(%globaltimer\w*)", "%globaltimer", "reads the global nanosecond timer", CodeAndStrings},
    {R"(\b(?:__)?rdtscp?\b)", "rdtsc", "reads the CPU's time-stamp counter", CodeAndStrings},
    // Device-wide synchronization or reset: waits on or destroys the harness's own work.
    {R"(\bcudaDeviceSynchronize\b|\bcuCtxSynchronize\b)", "cudaDeviceSynchronize",
     "waits for the whole device, not just call->stream"},
    {R"(\bcudaDeviceReset\b|\bcuDevicePrimaryCtxReset\w*)", "cudaDeviceReset",
     "destroys the harness's allocations and streams"},
    {R"(\bcudaSetDevice\w*|\bcuCtxSetCurrent\b)", "cudaSetDevice", "changes the harness's current device"},
    // Memory protection: a way to patch the harness's code (its timer calls, its checks).
    {R"(\b(?:pkey_)?mprotect\b)", "mprotect", "changes memory protection, e.g. to patch the harness's code"},
    {R"(/proc/self\b)", "/proc/self", "reads or writes the harness's own memory and files", CodeAndStrings},
    // Signals and non-local jumps: hijack the harness's crash handling and control flow.
    {R"(\bsignal\s*\()", "signal", "a signal handler takes over the harness's crash handling"},
    {R"(\bsigaction\b)", "sigaction", "a signal handler takes over the harness's crash handling"},
    {R"(\b(?:_|__builtin_|sig)?setjmp\b)", "setjmp", "a non-local jump bypasses the harness's control flow"},
    {R"(\b(?:_|__builtin_|sig)?longjmp\b)", "longjmp",
     "a non-local jump bypasses the harness's control flow"},
    // Headers whose only use here would be one of the above. Directives start a line, so a string
    // that mentions one does not count; a quoted include name does.
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*thread[ \t]*[>"])", "#include <thread>", "threads",
     CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*future[ \t]*[>"])", "#include <future>", "asynchronous tasks",
     CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*pthread\.h[ \t]*[>"])", "#include <pthread.h>", "threads",
     CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*dlfcn\.h[ \t]*[>"])", "#include <dlfcn.h>", "dynamic loading",
     CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*chrono[ \t]*[>"])", "#include <chrono>", "clocks",
     CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*signal\.h[ \t]*[>"])", "#include <signal.h>", "signal handlers",
     CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*csignal[ \t]*[>"])", "#include <csignal>", "signal handlers",
     CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*(?:setjmp\.h|csetjmp)[ \t]*[>"])", "#include <setjmp.h>",
     "non-local jumps", CodeAndStrings},
    {R"(^[ \t]*#[ \t]*include[ \t]*[<"][ \t]*spawn\.h[ \t]*[>"])", "#include <spawn.h>", "processes",
     CodeAndStrings},
};

const std::vector<std::regex>& compiled_rules() {
  static const std::vector<std::regex> compiled = [] {
    std::vector<std::regex> v;
    for (const auto& rule : kRules)
      v.emplace_back(std::string(rule.pattern), std::regex::ECMAScript | std::regex::multiline |
                                                    std::regex::optimize | std::regex::nosubs);
    return v;
  }();
  return compiled;
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// A quote inside a number (1'000'000, 0xFF'FF) separates digits; anywhere else it opens a
// character literal (including u8'a' and L'a').
bool is_digit_separator(std::string_view s, size_t i) {
  size_t start = i;
  while (start > 0 && (is_identifier_char(s[start - 1]) || s[start - 1] == '\'')) --start;
  return start < i && std::isdigit(static_cast<unsigned char>(s[start]));
}

// If the quote at `i` opens a raw string (R"delim( with an optional u8/u/U/L prefix), returns
// the offset of its '(' and sets `terminator` to )delim".
std::optional<size_t> raw_string_open(std::string_view s, size_t i, std::string& terminator) {
  size_t start = i;
  while (start > 0 && is_identifier_char(s[start - 1])) --start;
  const std::string_view prefix = s.substr(start, i - start);
  if (prefix != "R" && prefix != "u8R" && prefix != "uR" && prefix != "UR" && prefix != "LR")
    return std::nullopt;
  const size_t open = s.find('(', i + 1);
  if (open == std::string_view::npos || open - i - 1 > 16) return std::nullopt;
  const std::string_view delimiter = s.substr(i + 1, open - i - 1);
  if (delimiter.find_first_of(" )\\\t\n") != std::string_view::npos) return std::nullopt;
  terminator = ")" + std::string(delimiter) + "\"";
  return open;
}

std::string_view trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

}  // namespace

std::span<const LintRule> lint_rules() {
  return kRules;
}

std::string blank_comments(std::string_view source, bool keep_strings) {
  enum class State { Code, LineComment, BlockComment, Literal, RawLiteral } state = State::Code;
  std::string out(source);
  char quote = 0;
  std::string raw_terminator;
  const auto blank = [&](size_t i) {
    if (out[i] != '\n') out[i] = ' ';
  };
  const auto blank_literal = [&](size_t i) {
    if (!keep_strings) blank(i);
  };
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i], next = i + 1 < source.size() ? source[i + 1] : '\0';
    switch (state) {
      case State::Code:
        if (c == '/' && (next == '/' || next == '*')) {
          state = next == '/' ? State::LineComment : State::BlockComment;
          blank(i);
          blank(++i);
        } else if (c == '"' || (c == '\'' && !is_digit_separator(source, i))) {
          if (const auto open = c == '"' ? raw_string_open(source, i, raw_terminator) : std::nullopt) {
            while (i < *open) blank_literal(++i);
            state = State::RawLiteral;
          } else {
            state = State::Literal;
            quote = c;
          }
        }
        break;
      case State::LineComment:  // a backslash-newline continues it onto the next line
        if (c == '\n') state = State::Code;
        blank(i);
        if (c == '\\' && next == '\n') ++i;
        break;
      case State::BlockComment:
        blank(i);
        if (c == '*' && next == '/') {
          blank(++i);
          state = State::Code;
        }
        break;
      case State::Literal:
        if (c == quote || c == '\n') {  // a newline ends an unterminated literal, limiting the damage
          state = State::Code;
        } else {
          blank_literal(i);
          if (c == '\\' && i + 1 < source.size()) blank_literal(++i);
        }
        break;
      case State::RawLiteral:
        if (source.compare(i, raw_terminator.size(), raw_terminator) == 0) {
          for (size_t end = i + raw_terminator.size() - 1; i < end; ++i) blank_literal(i);
          state = State::Code;
        } else {
          blank_literal(i);
        }
        break;
    }
  }
  return out;
}

std::vector<LintFinding> lint_kernel_source(std::string_view source) {
  const std::string code = blank_comments(source, false);
  const std::string code_and_strings = blank_comments(source, true);
  std::vector<size_t> line_starts{0};
  for (size_t i = 0; i < source.size(); ++i)
    if (source[i] == '\n') line_starts.push_back(i + 1);

  std::vector<LintFinding> findings;
  std::set<std::pair<size_t, size_t>> seen;  // (line index, rule index)
  const auto& regexes = compiled_rules();
  for (size_t r = 0; r < std::size(kRules); ++r) {
    const std::string& view = kRules[r].scope == Code ? code : code_and_strings;
    for (std::sregex_iterator it(view.begin(), view.end(), regexes[r]), end; it != end; ++it) {
      const auto position = static_cast<size_t>(it->position());
      const size_t line =
          std::upper_bound(line_starts.begin(), line_starts.end(), position) - line_starts.begin() - 1;
      if (!seen.emplace(line, r).second) continue;
      const size_t line_end = std::min(source.find('\n', line_starts[line]), source.size());
      std::string text(trim(source.substr(line_starts[line], line_end - line_starts[line])));
      if (text.size() > 160) text = text.substr(0, 157) + "...";
      findings.push_back({static_cast<int>(line + 1), std::string(kRules[r].name), std::move(text)});
    }
  }
  // Collected rule by rule; a stable sort keeps the table's order within a line.
  std::stable_sort(findings.begin(), findings.end(),
                   [](const LintFinding& a, const LintFinding& b) { return a.line < b.line; });
  return findings;
}

std::string describe(const LintFinding& finding) {
  std::string_view why = "unknown rule";
  for (const auto& rule : kRules)
    if (rule.name == finding.rule) why = rule.why;
  return "line " + std::to_string(finding.line) + ": " + finding.rule + " (" + std::string(why) + "): `" +
         finding.text + "`";
}

}  // namespace ak
