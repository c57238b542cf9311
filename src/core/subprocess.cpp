#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.h"

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

pid_t spawn(const std::vector<std::string>& argv, const ProcessOptions& options, int out_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
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

}  // namespace

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
  return joined;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw Error(ErrorKind::Internal, "run_process: empty argv");
  Pipe pipe;
  const auto start = std::chrono::steady_clock::now();
  Child child(spawn(argv, options, pipe.write_end()));
  pipe.close_write();

  ProcessResult result;
  std::string pending;
  const auto deadline = start + options.timeout;
  char buffer[8192];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd pfd{pipe.read_end(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(pipe.read_end(), buffer, sizeof buffer);
    if (n <= 0) break;  // EOF: the child (and anything holding the pipe) closed it
    if (result.output.size() < options.max_output) result.output.append(buffer, static_cast<size_t>(n));
    pending.append(buffer, static_cast<size_t>(n));
    deliver_lines(pending, options);
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

}  // namespace ak
