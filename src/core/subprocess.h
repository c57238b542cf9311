// Child processes with a wall-clock limit. The child gets its own process group, so a timeout
// kills it and everything it started; the RAII handle never leaves a child behind. Also a
// long-lived child spoken to in lines (LineProcess), and lines read from a descriptor.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ak {

using EnvOverrides = std::vector<std::pair<std::string, std::string>>;

struct ProcessOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::filesystem::path cwd;                           // empty: inherit
  std::function<void(std::string_view line)> on_line;  // each output line as it arrives
  size_t max_output = 1 << 20;                         // bytes of output kept
  // Variables set for the child on top of this process's environment (a name given here
  // replaces the inherited one).
  EnvOverrides env;
  std::filesystem::path stdin_file;  // the child's stdin; empty: /dev/null
  std::function<void()> on_forked;   // run_forked: called in the parent once the child exists
};

struct ProcessResult {
  int exit_code = -1;      // valid when term_signal == 0 and !timed_out
  int term_signal = 0;     // the signal that ended it, if any
  bool timed_out = false;  // killed by us at the limit
  std::string output;      // stdout and stderr interleaved (truncated to max_output)
  std::string answer;      // run_forked: what the child's body returned ("" if it never did)
  double seconds = 0;

  bool ok() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit 1", "killed by SIGSEGV", "timed out after 5.0 s"
  // The last non-empty output lines, joined by " | ", every other control character (a carriage
  // return, a terminal's escape) made a space: what a process printed becomes one line of a
  // reason, which a kernel's own output must not turn into lines of the judge's report.
  std::string tail(size_t lines) const;
};

// Runs argv[0] (searched in PATH) with the given arguments. Throws Error(Io) only when the
// process cannot be started at all (a missing stdin_file is such a case).
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Runs `body` in a forked copy of this process and waits for it like run_process: stdout and
// stderr come back in output, the string body returns in answer (the child then _exits 0; 1 if
// body threw). The child has its own process group, stdin from /dev/null, and is killed if this
// process dies. Fork only from a single-threaded process that holds no device state: the
// child is a copy of it. Throws Error(Io) only when the fork fails.
ProcessResult run_forked(const std::function<std::string()>& body, const ProcessOptions& options);

using Deadline = std::chrono::steady_clock::time_point;
enum class LineRead { Line, Closed, TimedOut };

// Lines from a file descriptor (without their '\n'); the last unterminated piece is dropped.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  LineRead next(std::string& line, Deadline deadline = Deadline::max());
  // Polls without sleeping: a line is seen within microseconds of its arrival, at the price of a
  // busy core (the launcher's wait for the judge, whose clock includes that latency).
  void set_spin(bool spin) { spin_ = spin; }

 private:
  int fd_;
  bool spin_ = false;
  std::string pending_;
};

// Writes line + '\n' entirely; false when the reader has gone (never raises SIGPIPE on a socket).
bool write_line(int fd, std::string_view line);

// This process's environment with `overrides` applied (a name given there replaces the inherited
// one), as NAME=VALUE strings.
std::vector<std::string> environment_with(const EnvOverrides& overrides);
// `strings` as the null-terminated array exec and posix_spawn take (argv, envp); valid while
// `strings` is.
std::vector<char*> pointers_to(const std::vector<std::string>& strings);

// A long-lived child process spoken to in lines: its stdin and stdout are one socket to this
// process; stderr is inherited. It runs in its own process group, which the destructor kills
// before reaping the child: nothing is left behind.
class LineProcess {
 public:
  // `env`: variables set for the child on top of this process's environment. Throws Error(Io).
  explicit LineProcess(const std::vector<std::string>& argv, const EnvOverrides& env = {});
  ~LineProcess();
  LineProcess(const LineProcess&) = delete;
  LineProcess& operator=(const LineProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool send(std::string_view line) { return write_line(socket_, line); }
  LineRead read_line(std::string& line, Deadline deadline) { return reader_.next(line, deadline); }
  // Kills the process group, reaps the child and says how it ended ("exit 0", "killed by SIGKILL").
  std::string stop();

 private:
  int socket_ = -1;
  pid_t pid_ = -1;
  LineReader reader_{-1};
};

}  // namespace ak
