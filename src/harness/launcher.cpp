#include "harness/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/paths.h"
#include "core/subprocess.h"
#include "harness/sandbox.h"

namespace ak {
namespace {

// Where the launcher finds its ends: the channel, and on the host the arena's memfd.
constexpr int kChannelFd = 3;
constexpr int kArenaFd = 4;
// Starting a CUDA context and mapping the arena; a loaded machine can take a while.
constexpr std::chrono::seconds kStartLimit{120};

std::string status_text(int status) {
  ProcessResult r;
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r.describe();
}

// A copy of `fd` numbered above the launcher's fixed descriptors, so that placing one of them
// cannot overwrite another's source.
class HighDescriptor {
 public:
  explicit HighDescriptor(int fd) : fd_(fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 64)) {
    if (fd >= 0 && fd_ < 0)
      throw Error(ErrorKind::Io, std::string("fcntl(F_DUPFD): ") + std::strerror(errno));
  }
  ~HighDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  HighDescriptor(const HighDescriptor&) = delete;
  HighDescriptor& operator=(const HighDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

pid_t spawn_launcher(const std::vector<std::string>& argv, const EnvOverrides& env, int channel_fd,
                     int log_fd, int arena_source) {
  const HighDescriptor channel(channel_fd), log(log_fd), arena(arena_source);
  const int arena_fd = arena.get();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, log.get(), STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&actions, channel.get(), kChannelFd);
  if (arena_fd >= 0) posix_spawn_file_actions_adddup2(&actions, arena_fd, kArenaFd);
  // Nothing else of the judge's crosses over: not its result file, not its parent's pipes.
  posix_spawn_file_actions_addclosefrom_np(&actions, arena_fd >= 0 ? kArenaFd + 1 : kChannelFd + 1);
  std::vector<char*> args = pointers_to(argv);
  const std::vector<std::string> variables = environment_with(env);
  std::vector<char*> envp = pointers_to(variables);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(ErrorKind::Io, "cannot start the launcher: " + std::string(std::strerror(rc)));
  return pid;
}

nlohmann::json tensor_json(const CallLayout::Tensor& t) {
  return {t.offset, static_cast<int>(t.spec.dtype), t.spec.shape,
          t.spec.swapped_axis};  // the ABI's dtype code
}

}  // namespace

Launcher::Launcher(Backend backend, const SharedArena& arena, const std::filesystem::path& executable)
    : backend_(backend) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw Error(ErrorKind::Io, std::string("socketpair: ") + std::strerror(errno));
  channel_ = ends[0];
  log_ = ::memfd_create("autokernel-launcher-log", MFD_CLOEXEC);
  if (log_ < 0) {
    ::close(ends[0]);
    ::close(ends[1]);
    throw Error(ErrorKind::Io, std::string("memfd_create: ") + std::strerror(errno));
  }
  // An arena passed as a descriptor is named by its handle's prefix and the number it has there.
  const bool inherited = arena.inherited_fd() >= 0;
  // The launcher sees the judge's GPU alone (then as its device 0), never a second one to compute on.
  const int device = current_device(backend);
  const std::string sole = sole_device_visibility(backend, device);
  EnvOverrides env;
  if (!sole.empty()) env.emplace_back("CUDA_VISIBLE_DEVICES", sole);
  const std::vector<std::string> argv = {
      (executable.empty() ? self_executable() : executable).string(),
      "launcher",
      "--backend",
      std::string(to_string(backend)),
      "--device",
      std::to_string(sole.empty() ? device : 0),
      "--arena",
      inherited ? arena.handle() + std::to_string(kArenaFd) : arena.handle(),
      "--arena-bytes",
      std::to_string(arena.size())};
  try {
    pid_ = spawn_launcher(argv, env, ends[1], log_, arena.inherited_fd());
  } catch (...) {
    ::close(ends[1]);
    ::close(channel_);
    ::close(log_);
    throw;
  }
  ::close(ends[1]);
  const std::string reply = expect({"ready", "error"}, false, kStartLimit);
  if (reply != "ready") throw Error(ErrorKind::Io, "the launcher could not start: " + reply.substr(6));
}

Launcher::~Launcher() {
  if (channel_ >= 0) ::close(channel_);
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (log_ >= 0) ::close(log_);
}

void Launcher::send(const std::string& line) {
  if (!write_line(channel_, line)) ended();
}

// Reads one reply. The launcher's own replies come in the order of the judge's requests, so a
// line that is none of `replies` (or a reply at the wrong time) was written by someone else.
// Past the start, the limit is the experiment's own, enforced by whoever runs the judge: what the
// launcher does then is the kernel's work.
std::string Launcher::expect(std::initializer_list<std::string_view> replies, bool spin,
                             std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buffer[4096];
  while (true) {
    if (const size_t pos = pending_.find('\n'); pos != std::string::npos) {
      std::string line = pending_.substr(0, pos);
      pending_.erase(0, pos + 1);
      for (std::string_view r : replies)
        if (line == r || (line.size() > r.size() && line.starts_with(r) && line[r.size()] == ' '))
          return line;
      if (line.starts_with("fault "))
        throw Error(ErrorKind::Crash, "device fault in the kernel: " + line.erase(0, 6));
      if (line.starts_with("rc ")) {
        std::istringstream in(line.substr(3));
        int rc = 0;
        in >> rc;
        throw Error(ErrorKind::Launch, "ak_launch returned " + std::to_string(rc) +
                                           (rc == 1   ? " (unsupported)"
                                            : rc == 2 ? " (launch failed)"
                                                      : ""));
      }
      line.resize(std::min<size_t>(line.size(), 80));
      std::string reason = "the kernel's process wrote an unexpected message on the launch channel: '";
      reason.append(line).append("'");
      throw Error(ErrorKind::Validation, reason);
    }
    if (pending_.size() > 65536)
      throw Error(ErrorKind::Validation, "the kernel's process flooded the launch channel");
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(ErrorKind::Timeout,
                  "the launcher did not answer within " + std::to_string(limit.count()) + " s");
    pollfd pfd{channel_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, spin ? 0 : 1000);
    if (ready <= 0) continue;
    const ssize_t n = ::read(channel_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ended();
    pending_.append(buffer, static_cast<size_t>(n));
  }
}

// The launcher closed the channel: it died, or the kernel's code ended it. The sandbox's own
// report names a forbidden call.
void Launcher::ended() {
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  const bool reaped = got == pid_;
  const std::string how = reaped ? status_text(status) : "ended";
  if (reaped) pid_ = -1;
  const std::string log = log_tail(3);
  const bool stopped_by_sandbox = reaped && ((WIFEXITED(status) && WEXITSTATUS(status) == kSandboxExit) ||
                                             (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS));
  if (stopped_by_sandbox) {
    if (const size_t at = log.rfind("sandbox: "); at != std::string::npos)
      throw Error(ErrorKind::Crash, log.substr(at));
    // The report could not run: the call was made with signals blocked, which the C library
    // does around starting a thread or a process.
    std::string reason =
        "sandbox: the kernel's code made a forbidden system call with signals blocked, as starting a thread "
        "or a process does (";
    reason.append(how).append(")");
    throw Error(ErrorKind::Crash, reason);
  }
  throw Error(ErrorKind::Crash, "the kernel's process ended (" + how + ")" + (log.empty() ? "" : ": " + log));
}

void Launcher::load(const std::filesystem::path& module) {
  send("load " + module.string());
  const std::string reply = expect({"loaded", "error"});
  if (reply == "loaded") return;
  // "error io|validation <message>" from the launcher's own dlopen / dlsym.
  const std::string rest = reply.substr(6);
  const bool io = rest.starts_with("io ");
  throw Error(io ? ErrorKind::Io : ErrorKind::Validation, rest.substr(rest.find(' ') + 1));
}

int Launcher::define(const CallLayout& call) {
  nlohmann::json j = {
      {"inputs", nlohmann::json::array()}, {"outputs", nlohmann::json::array()}, {"scalars", call.scalars}};
  for (const auto& t : call.inputs) j["inputs"].push_back(tensor_json(t));
  for (const auto& t : call.outputs) j["outputs"].push_back(tensor_json(t));
  if (call.workspace) j["workspace"] = tensor_json(*call.workspace);
  const int id = next_id_++;
  send("define " + std::to_string(id) + " " + j.dump());
  return id;
}

void Launcher::start_run(const std::vector<int>& ids) {
  std::string line = "run";
  for (int id : ids) line.append(" ").append(std::to_string(id));
  send(line);
}

double Launcher::finish_run(bool spin) {
  const std::string reply = expect({"done"}, spin);
  if (reply.size() <= 5) return -1;
  // Our launcher writes a finite, non-negative number; anything else came from the kernel's code.
  try {
    size_t used = 0;
    const double device_us = std::stod(reply.substr(5), &used);
    if (used == reply.size() - 5 && std::isfinite(device_us) && device_us >= 0) return device_us;
  } catch (const std::exception&) {
  }
  throw Error(ErrorKind::Validation,
              "the kernel's process wrote an unexpected message on the launch channel: '" +
                  reply.substr(0, 80) + "'");
}

void Launcher::run(const std::vector<int>& ids) {
  start_run(ids);
  finish_run(false);
}

void Launcher::hold(int id) {
  send("hold " + std::to_string(id));
  expect({"enqueued"});
}

void Launcher::release() {
  send("release");
  expect({"done"});
}

std::string Launcher::log_tail(size_t lines) const {
  struct stat st {};
  if (log_ < 0 || ::fstat(log_, &st) != 0 || st.st_size <= 0) return "";
  const size_t size = static_cast<size_t>(st.st_size), want = std::min<size_t>(size, 4096);
  std::string text(want, '\0');
  const ssize_t n = ::pread(log_, text.data(), want, static_cast<off_t>(size - want));
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  ProcessResult r;
  r.output = text;
  return r.tail(lines);
}

}  // namespace ak
