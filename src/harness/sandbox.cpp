#include "harness/sandbox.h"

#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace ak {
namespace {

enum class Check { Always, Writes, NotSelf, FirstArgIs, NewLimit };

struct Rule {
  const char* call;
  Check check;
  long value;  // FirstArgIs: the value of the first argument
  const char* why;
};

constexpr const char* kProcess = "starts a process or a thread: work that would escape the timed launch";
constexpr const char* kSocket = "opens a socket: a way out of the sandbox";
constexpr const char* kReach = "reaches into another process";
constexpr const char* kSignal = "signals another process";
constexpr const char* kFiles = "writes or changes files";
constexpr const char* kLimits = "changes the sandbox's own limits";

// Phase Load. Calls absent on this architecture (fork on arm64) are skipped.
constexpr Rule kLoadRules[] = {
    {"clone", Check::Always, 0, kProcess},
    {"clone3", Check::Always, 0, kProcess},
    {"fork", Check::Always, 0, kProcess},
    {"vfork", Check::Always, 0, kProcess},
    {"execve", Check::Always, 0, kProcess},
    {"execveat", Check::Always, 0, kProcess},
    {"socket", Check::Always, 0, kSocket},
    {"socketpair", Check::Always, 0, kSocket},
    {"connect", Check::Always, 0, kSocket},
    {"bind", Check::Always, 0, kSocket},
    {"listen", Check::Always, 0, kSocket},
    {"accept", Check::Always, 0, kSocket},
    {"accept4", Check::Always, 0, kSocket},
    {"ptrace", Check::Always, 0, kReach},
    {"process_vm_readv", Check::Always, 0, kReach},
    {"process_vm_writev", Check::Always, 0, kReach},
    {"pidfd_open", Check::Always, 0, kReach},
    {"pidfd_getfd", Check::Always, 0, kReach},
    {"kcmp", Check::Always, 0, kReach},
    {"io_uring_setup", Check::Always, 0, "io_uring: files and sockets behind the filter's back"},
    {"userfaultfd", Check::Always, 0, kReach},
    {"perf_event_open", Check::Always, 0, kReach},
    {"bpf", Check::Always, 0, kReach},
    {"kill", Check::NotSelf, 0, kSignal},
    {"tgkill", Check::NotSelf, 0, kSignal},
    {"tkill", Check::Always, 0, kSignal},
    {"rt_sigqueueinfo", Check::NotSelf, 0, kSignal},
    {"rt_tgsigqueueinfo", Check::NotSelf, 0, kSignal},
    {"pidfd_send_signal", Check::Always, 0, kSignal},
    {"setsid", Check::Always, 0, "leaves the judge's process group"},
    {"setpgid", Check::Always, 0, "leaves the judge's process group"},
    {"prctl", Check::FirstArgIs, PR_SET_PDEATHSIG, "would outlive the judge"},
    {"prctl", Check::FirstArgIs, PR_SET_PTRACER, kReach},
    {"rt_sigaction", Check::FirstArgIs, SIGSYS, "replaces the sandbox's own reporter"},
    {"setrlimit", Check::Always, 0, kLimits},
    {"prlimit64", Check::NewLimit, 0, kLimits},
    {"open", Check::Writes, 0, kFiles},
    {"openat", Check::Writes, 0, kFiles},
    {"openat2", Check::Always, 0, kFiles},
    {"creat", Check::Always, 0, kFiles},
    {"name_to_handle_at", Check::Always, 0, kFiles},
    {"open_by_handle_at", Check::Always, 0, kFiles},
    {"truncate", Check::Always, 0, kFiles},
    {"unlink", Check::Always, 0, kFiles},
    {"unlinkat", Check::Always, 0, kFiles},
    {"rename", Check::Always, 0, kFiles},
    {"renameat", Check::Always, 0, kFiles},
    {"renameat2", Check::Always, 0, kFiles},
    {"mkdir", Check::Always, 0, kFiles},
    {"mkdirat", Check::Always, 0, kFiles},
    {"rmdir", Check::Always, 0, kFiles},
    {"link", Check::Always, 0, kFiles},
    {"linkat", Check::Always, 0, kFiles},
    {"symlink", Check::Always, 0, kFiles},
    {"symlinkat", Check::Always, 0, kFiles},
    {"chmod", Check::Always, 0, kFiles},
    {"fchmodat", Check::Always, 0, kFiles},
    {"chown", Check::Always, 0, kFiles},
    {"lchown", Check::Always, 0, kFiles},
    {"fchownat", Check::Always, 0, kFiles},
    {"mknod", Check::Always, 0, kFiles},
    {"mknodat", Check::Always, 0, kFiles},
    {"mount", Check::Always, 0, kFiles},
    {"umount2", Check::Always, 0, kFiles},
    {"chroot", Check::Always, 0, kFiles},
    {"pivot_root", Check::Always, 0, kFiles},
    {"unshare", Check::Always, 0, kReach},
    {"setns", Check::Always, 0, kReach},
};

constexpr const char* kOpen = "opens a file after the module was loaded";
constexpr Rule kRunRules[] = {
    {"open", Check::Always, 0, kOpen},
    {"openat", Check::Always, 0, kOpen},
};

// What the SIGSYS handler prints, prepared before the filter is loaded: a handler may only call
// async-signal-safe functions (write, _exit), so no lookup or formatting happens in it.
constexpr int kMaxSyscall = 1024;
std::array<const char*, kMaxSyscall> g_names{};
std::array<const char*, kMaxSyscall> g_reasons{};

void append(char*& out, const char* end, const char* text) {
  while (*text && out < end) *out++ = *text++;
}

void report_violation(int, siginfo_t* info, void*) {
  char line[512];
  char* out = line;
  const char* end = line + sizeof line - 1;
  const int nr = info->si_syscall;
  const bool known = nr >= 0 && nr < kMaxSyscall && g_names[static_cast<size_t>(nr)];
  append(out, end, "\nsandbox: the kernel's code called ");
  append(out, end, known ? g_names[static_cast<size_t>(nr)] : "a forbidden system call");
  append(out, end, ", which the sandbox forbids (it ");
  append(out, end, known ? g_reasons[static_cast<size_t>(nr)] : "is not allowed");
  append(out, end, ")\n");
  (void)!::write(STDERR_FILENO, line, static_cast<size_t>(out - line));
  ::_exit(kSandboxExit);
}

// What libseccomp's SCMP_A0... macros make, without their C compound literals (not C++): argument
// `index` compared by `op` with datum_a (the mask, for SCMP_CMP_MASKED_EQ) and datum_b.
scmp_arg_cmp argument(unsigned index, scmp_compare op, scmp_datum_t datum_a, scmp_datum_t datum_b = 0) {
  scmp_arg_cmp compare{};
  compare.arg = index;
  compare.op = op;
  compare.datum_a = datum_a;
  compare.datum_b = datum_b;
  return compare;
}

void add(scmp_filter_ctx ctx, const Rule& rule, int syscall) {
  const uint32_t trap = SCMP_ACT_TRAP;
  int rc = 0;
  switch (rule.check) {
    case Check::Always: rc = seccomp_rule_add(ctx, trap, syscall, 0); break;
    case Check::NotSelf:
      rc = seccomp_rule_add(ctx, trap, syscall, 1,
                            argument(0, SCMP_CMP_NE, static_cast<scmp_datum_t>(::getpid())));
      break;
    case Check::FirstArgIs:
      rc = seccomp_rule_add(ctx, trap, syscall, 1,
                            argument(0, SCMP_CMP_EQ, static_cast<scmp_datum_t>(rule.value)));
      break;
    case Check::NewLimit: rc = seccomp_rule_add(ctx, trap, syscall, 1, argument(2, SCMP_CMP_NE, 0)); break;
    case Check::Writes: {
      // open(path, flags) or openat(dir, path, flags): any flag that writes or creates.
      const bool at = std::strcmp(rule.call, "openat") == 0;
      for (const int flag : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND}) {
        const scmp_arg_cmp cmp = argument(at ? 2 : 1, SCMP_CMP_MASKED_EQ, static_cast<scmp_datum_t>(flag),
                                          static_cast<scmp_datum_t>(flag));
        if ((rc = seccomp_rule_add(ctx, trap, syscall, 1, cmp)) != 0) break;
      }
      break;
    }
  }
  if (rc != 0)
    throw Error(ErrorKind::Internal,
                std::string("sandbox rule for ") + rule.call + ": " + std::strerror(-rc));
}

template <size_t N>
void add_rules(scmp_filter_ctx ctx, const Rule (&rules)[N]) {
  for (const Rule& rule : rules) {
    const int syscall = seccomp_syscall_resolve_name(rule.call);
    if (syscall < 0) continue;  // not a call of this architecture
    if (syscall < kMaxSyscall) {
      g_names[static_cast<size_t>(syscall)] = rule.call;
      g_reasons[static_cast<size_t>(syscall)] = rule.why;
    }
    add(ctx, rule, syscall);
  }
}

class Filter {
 public:
  Filter() : ctx_(seccomp_init(SCMP_ACT_ALLOW)) {
    if (!ctx_) throw Error(ErrorKind::Unsupported, "seccomp_init failed");
  }
  ~Filter() { seccomp_release(ctx_); }
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;
  scmp_filter_ctx get() const { return ctx_; }

 private:
  scmp_filter_ctx ctx_;
};

}  // namespace

std::vector<SandboxRule> sandbox_rules(SandboxPhase phase) {
  std::vector<SandboxRule> rules;
  auto list = [&](const auto& table) {
    for (const Rule& r : table) rules.push_back({r.call, r.why});
  };
  if (phase == SandboxPhase::Load) list(kLoadRules);
  if (phase == SandboxPhase::Run) list(kRunRules);
  return rules;
}

void enter_sandbox(SandboxPhase phase) {
  // Set once, before the first filter: from then on the filter forbids replacing it.
  if (phase == SandboxPhase::Load) {
    struct sigaction action {};
    action.sa_sigaction = report_violation;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    if (::sigaction(SIGSYS, &action, nullptr) != 0)
      throw Error(ErrorKind::Internal, std::string("sigaction(SIGSYS): ") + std::strerror(errno));
  }

  Filter filter;
  // Every thread (the CUDA driver's, the OpenMP pool's) gets the filter, not only this one; a
  // system call of another architecture's ABI ends the process.
  seccomp_attr_set(filter.get(), SCMP_FLTATR_CTL_TSYNC, 1);
  seccomp_attr_set(filter.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (phase == SandboxPhase::Load) add_rules(filter.get(), kLoadRules);
  if (phase == SandboxPhase::Run) add_rules(filter.get(), kRunRules);
  if (const int rc = seccomp_load(filter.get()); rc != 0)
    throw Error(ErrorKind::Unsupported, std::string("seccomp_load: ") + std::strerror(-rc));
}

}  // namespace ak
