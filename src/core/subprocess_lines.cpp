// LineReader, write_line and LineProcess (core/subprocess.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/subprocess.h"

extern char** environ;

namespace ak {
namespace {

std::string describe_status(int status) {
  ProcessResult r;
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r.describe();
}

pid_t spawn_with_socket(const std::vector<std::string>& argv, int child_end, const EnvOverrides& env) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, child_end, STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args = pointers_to(argv);
  std::vector<std::string> env_strings;
  std::vector<char*> env_pointers;
  if (!env.empty()) {
    env_strings = environment_with(env);
    env_pointers = pointers_to(env_strings);
  }
  pid_t pid = -1;
  const int rc =
      posix_spawnp(&pid, args[0], &actions, &attr, args.data(), env.empty() ? environ : env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error(ErrorKind::Io, "cannot start '" + argv[0] + "': " + std::strerror(rc));
  return pid;
}

}  // namespace

LineRead LineReader::next(std::string& line, Deadline deadline) {
  char buffer[8192];
  while (true) {
    if (const size_t pos = pending_.find('\n'); pos != std::string::npos) {
      line = pending_.substr(0, pos);
      pending_.erase(0, pos + 1);
      return LineRead::Line;
    }
    int wait_ms = -1;
    if (spin_) {
      wait_ms = 0;
      if (deadline != Deadline::max() && std::chrono::steady_clock::now() >= deadline)
        return LineRead::TimedOut;
    } else if (deadline != Deadline::max()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return LineRead::TimedOut;
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1000));
    }
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, wait_ms) <= 0) continue;  // EINTR, the periodic deadline check, or a spin
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return LineRead::Closed;
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

bool write_line(int fd, std::string_view line) {
  std::string bytes(line);
  bytes += '\n';
  std::string_view left = bytes;
  bool socket = true;
  while (!left.empty()) {
    ssize_t n =
        socket ? ::send(fd, left.data(), left.size(), MSG_NOSIGNAL) : ::write(fd, left.data(), left.size());
    if (n < 0 && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    left.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

LineProcess::LineProcess(const std::vector<std::string>& argv, const EnvOverrides& env) {
  if (argv.empty()) throw Error(ErrorKind::Internal, "LineProcess: empty argv");
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw Error(ErrorKind::Io, std::string("socketpair: ") + std::strerror(errno));
  try {
    pid_ = spawn_with_socket(argv, ends[1], env);
  } catch (...) {
    ::close(ends[0]);
    ::close(ends[1]);
    throw;
  }
  ::close(ends[1]);
  socket_ = ends[0];
  reader_ = LineReader(socket_);
}

LineProcess::~LineProcess() {
  stop();
}

std::string LineProcess::stop() {
  if (socket_ >= 0) ::close(socket_);
  socket_ = -1;
  reader_ = LineReader(-1);
  if (pid_ <= 0) return "not running";
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return describe_status(status);
}

}  // namespace ak
