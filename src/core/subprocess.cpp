#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/text.h"

extern char** environ;

namespace ak {
namespace {

class Pipe {
 public:
  Pipe() {
    if (pipe2(fds_, O_CLOEXEC) != 0)
      throw Error(ErrorKind::Io, std::string("pipe2: ") + std::strerror(errno));
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_read() { close_fd(fds_[0]); }
  void close_write() { close_fd(fds_[1]); }

 private:
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  int fds_[2] = {-1, -1};
};

// Owns a running child: on destruction kills its process group and reaps it.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    ::kill(-pid_, SIGKILL);  // anything the child left behind in its group
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_;
};

// A file opened for reading, closed on destruction. Opened here rather than by the spawn's file
// actions, so a missing file is reported by name instead of as a failure to start the program.
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw Error(ErrorKind::Io, "cannot open " + path.string() + ": " + std::strerror(errno));
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

pid_t spawn(const std::vector<std::string>& argv, const ProcessOptions& options, int out_fd) {
  std::optional<InputFile> input;
  if (!options.stdin_file.empty()) input.emplace(options.stdin_file);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO);
  if (input)
    posix_spawn_file_actions_adddup2(&actions, input->fd(), STDIN_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> args = pointers_to(argv);
  std::vector<std::string> env_strings;
  if (!options.env.empty()) env_strings = environment_with(options.env);
  std::vector<char*> env = pointers_to(env_strings);
  pid_t pid = -1;
  const int rc =
      posix_spawnp(&pid, args[0], &actions, &attr, args.data(), options.env.empty() ? environ : env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error(ErrorKind::Io, "cannot start '" + argv[0] + "': " + std::strerror(rc));
  return pid;
}

void deliver_lines(std::string& pending, const ProcessOptions& options) {
  size_t pos;
  while ((pos = pending.find('\n')) != std::string::npos) {
    if (options.on_line) options.on_line(std::string_view(pending).substr(0, pos));
    pending.erase(0, pos + 1);
  }
}

// Reads the child's output (and its answer, when answer_fd >= 0) until both reach EOF or the
// deadline passes, then reaps the child, killing its group.
ProcessResult collect(Child& child, int output_fd, int answer_fd, const ProcessOptions& options,
                      std::chrono::steady_clock::time_point start) {
  ProcessResult result;
  std::string pending;
  const auto deadline = start + options.timeout;
  pollfd fds[2] = {{output_fd, POLLIN, 0}, {answer_fd, POLLIN, 0}};  // poll skips a negative fd
  char buffer[8192];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready <= 0) continue;  // EINTR or the periodic deadline check
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
      if (n <= 0) {
        p.fd = -1;  // EOF: the child (and anything holding the pipe) closed it
      } else if (&p == &fds[1]) {
        result.answer.append(buffer, static_cast<size_t>(n));
      } else {
        if (result.output.size() < options.max_output) result.output.append(buffer, static_cast<size_t>(n));
        pending.append(buffer, static_cast<size_t>(n));
        deliver_lines(pending, options);
      }
    }
  }
  if (result.timed_out) ::kill(-child.pid(), SIGKILL);
  const int status = child.wait();
  if (!pending.empty() && options.on_line) options.on_line(pending);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.timed_out) {
    if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

void write_fully(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// The forked child's side of run_forked; never returns.
[[noreturn]] void run_child(pid_t parent, int output_fd, int answer_fd,
                            const std::function<std::string()>& body, const std::filesystem::path& cwd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took hold
  const int null_fd = ::open("/dev/null", O_RDONLY);
  ::dup2(null_fd, STDIN_FILENO);
  ::dup2(output_fd, STDOUT_FILENO);
  ::dup2(output_fd, STDERR_FILENO);
  int rc = 0;
  try {
    if (!cwd.empty()) std::filesystem::current_path(cwd);
    write_fully(answer_fd, body());
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    rc = 1;
  } catch (...) {
    rc = 1;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(rc);  // no static destructors or atexit handlers: they belong to the parent's state
}

}  // namespace

std::vector<char*> pointers_to(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

std::vector<std::string> environment_with(const EnvOverrides& overrides) {
  std::vector<std::string> entries;
  for (char** entry = environ; entry && *entry; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    const bool replaced =
        std::any_of(overrides.begin(), overrides.end(), [&](const auto& o) { return o.first == name; });
    if (!replaced) entries.emplace_back(text);
  }
  for (const auto& [name, value] : overrides) entries.push_back(name + "=" + value);
  return entries;
}

std::string ProcessResult::describe() const {
  std::ostringstream out;
  if (timed_out) {
    out << "timed out after " << seconds << " s";
  } else if (term_signal) {
    const char* name = sigabbrev_np(term_signal);
    out << "killed by SIG" << (name ? name : std::to_string(term_signal).c_str());
  } else {
    out << "exit " << exit_code;
  }
  return out.str();
}

std::string ProcessResult::tail(size_t lines) const {
  std::vector<std::string> kept;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    kept.push_back(line);
    if (kept.size() > lines) kept.erase(kept.begin());
  }
  std::string joined;
  for (const auto& l : kept) joined += (joined.empty() ? "" : " | ") + l;
  return printable(std::move(joined));
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw Error(ErrorKind::Internal, "run_process: empty argv");
  Pipe pipe;
  const auto start = std::chrono::steady_clock::now();
  Child child(spawn(argv, options, pipe.write_end()));
  pipe.close_write();
  return collect(child, pipe.read_end(), -1, options, start);
}

ProcessResult run_forked(const std::function<std::string()>& body, const ProcessOptions& options) {
  Pipe output, answer;
  const pid_t parent = ::getpid();
  std::cout.flush();  // or the child would write this process's buffered output again
  std::fflush(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(ErrorKind::Io, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) run_child(parent, output.write_end(), answer.write_end(), body, options.cwd);
  ::setpgid(pid, pid);  // also here, so that a kill of the group cannot precede the child's own call
  Child child(pid);
  if (options.on_forked) options.on_forked();
  output.close_write();
  answer.close_write();
  return collect(child, output.read_end(), answer.read_end(), options, start);
}

}  // namespace ak
