"""Confinement of code we run but do not trust, applied by the process to itself before that code
runs, and kept by everything it starts (no way back):

- a Triton kernel file, which is Python and runs in the compiler (autokernel_triton.aot);
- a KernelBench solution, which runs in the solution process (autokernel.kernelbench.solver);
- an agent command (`optimize --agent-cmd`, `kernelbench --agent-cmd`), which the engine starts
  through `python3 -m autokernel_sandbox --write DIR ... --network -- COMMAND` with its kernel's
  (or solution's) directory writable and TCP open, for the agent to reach its model's API.

Either may be written by a language model rewarded for speed. What it must not do is change what
judges it or what a later judgement reads: the engine's binary and Python, the module cache, the
kept kernels, the loop's records, another build's files. So, with Linux's Landlock (unprivileged,
inherited across fork and exec, irreversible):

- files: read and execute everywhere; create, write, remove or rename only beneath the directories
  named (the build's own work directory, the solution's scratch) and write /dev/null; no symbolic
  links anywhere (a link planted in a work directory could redirect a later trusted write), no
  device nodes; the GPU's device files (/dev/nvidia*) opened for reading, writing and ioctls where
  the caller names them (a CUDA process opens some lazily: the stream-ordered allocator's pool at
  its first use). /proc stays read-only, and CUDA's driver (570 and later) names the threads
  cuInit starts by writing /proc/<pid>/task/<tid>/comm and fails (error 304) where it cannot: a
  process confined with the GPU starts CUDA before it confines itself, and the processes it
  starts cannot start CUDA at all. So torch.compile compiles in that process (Inductor's worker
  processes import every Triton kernel they compile, which needs the driver: "Could not find an
  active GPU backend"), one kernel at a time, rather than in a pool of workers;
- network: no TCP bind or connect (Landlock ABI 4+), unless the caller says the code needs it;
- other processes: no signals to a process outside the confined ones, no connection to an
  abstract UNIX socket outside them (ABI 6+); ptrace of an outside process is denied by every ABI;
- capabilities: all dropped first, with no_new_privs, so root in a container is no exception
  (CAP_SYS_MODULE, CAP_SYS_ADMIN, CAP_NET_RAW and the rest are gone).

Without Landlock (Linux < 5.13, or not among the kernel's LSMs) confine() raises Unconfined, and
the callers refuse to run the untrusted code, unless AUTOKERNEL_UNCONFINED=1 says the code is
trusted (the engine's own starters on an old kernel).
"""
import ctypes
import os
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # one number on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522

# Filesystem access rights (linux/landlock.h) and the ABI that introduced each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a rule on a file may grant
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ_ONLY = EXECUTE | READ_FILE | READ_DIR
WRITABLE = (READ_ONLY | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO |
            REFER | TRUNCATE)


class Unconfined(OSError):
    """Landlock is not available here, or refused the rules."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi():
    """The kernel's Landlock ABI version, 0 when there is none."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                              ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(0, int(version))


def drop_capabilities():
    """Every capability gone from this process and whatever it executes, for good (no_new_privs
    first). Raises OSError if that fails."""
    if not sys.platform.startswith("linux"):
        return
    libc = _libc()
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except OSError:
        last = 63
    for cap in range(last + 1):  # the bounding set first: that needs CAP_SETPCAP, dropped below
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset: could not drop this process's capabilities")


def _fail(what):
    error = ctypes.get_errno()
    raise Unconfined(error, f"Landlock {what}: {os.strerror(error)}")


def _add_path_rule(libc, ruleset, path, rights):
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneathAttr(rights, fd)
        if libc.syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            _fail(f"rule for {path}")
    finally:
        os.close(fd)


def gpu_device_files(only_minor=None, directory="/dev"):
    """The NVIDIA driver's device files of this machine (/dev/nvidia0, nvidiactl, nvidia-uvm, ...);
    with `only_minor`, of its GPUs only /dev/nvidia<only_minor>: a process confined to them (and
    whatever it starts, however it sets CUDA_VISIBLE_DEVICES) opens no other GPU."""
    names = sorted(name for name in os.listdir(directory) if name.startswith("nvidia"))
    if only_minor is not None:
        names = [n for n in names if not n[len("nvidia"):].isdigit() or int(n[len("nvidia"):]) == only_minor]
    return [os.path.join(directory, name) for name in names]


def confine(writable, devices=(), network=False, torch_compile=False):
    """Confines this process (and all it starts) as the module's doc says, with `writable` the only
    directories it may change and `devices` the device files (or directories of them) it may open
    to read, write and control; `network`: TCP stays open (an agent reaching its model's API).
    Inductor's compile workers started before are stopped; with devices, torch.compile compiles in
    this process from here on. `torch_compile`: the code compiles with torch.compile, and without
    devices /dev/shm is writable too, for the semaphores of Inductor's compile pool (a process
    pool; on a GPU there is none, and /dev/shm, where other processes' files are, stays read-only).
    Raises Unconfined when Landlock is unavailable or refuses."""
    if torch_compile and not devices and os.path.isdir("/dev/shm"):  # where sem_open's semaphores are
        writable = [*writable, "/dev/shm"]
    abi = landlock_abi()
    if abi < 1:
        raise Unconfined(0, "Landlock is not available (Linux 5.13 or later, with landlock among the "
                            "kernel's LSMs, is needed to confine untrusted code)")
    handled_fs = _FS_RIGHTS_BY_ABI[max(a for a in _FS_RIGHTS_BY_ABI if a <= abi)]
    attr = _RulesetAttr(handled_fs, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and not network else 0,
                        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    _stop_compile_workers()
    drop_capabilities()
    libc = _libc()
    ruleset = libc.syscall(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        _fail("ruleset")
    try:
        _add_path_rule(libc, ruleset, "/", READ_ONLY & handled_fs)
        for directory in writable:
            os.makedirs(directory, exist_ok=True)
            _add_path_rule(libc, ruleset, directory, WRITABLE & handled_fs)
        _add_path_rule(libc, ruleset, os.devnull, (READ_FILE | WRITE_FILE | TRUNCATE) & handled_fs & _FILE_RIGHTS)
        for device in devices:
            _add_path_rule(libc, ruleset, device, (READ_FILE | WRITE_FILE | IOCTL_DEV) & handled_fs & _FILE_RIGHTS)
        if libc.syscall(ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            _fail("restrict_self")
    finally:
        os.close(ruleset)
    if devices:
        compile_in_this_process()


def _stop_compile_workers():
    """Inductor's compile workers started before the confinement would stay outside it, running the
    jobs a confined process sends them: gone before it starts (a later pool starts inside)."""
    async_compile = sys.modules.get("torch._inductor.async_compile")
    if async_compile is not None and hasattr(async_compile, "shutdown_compile_workers"):
        async_compile.shutdown_compile_workers()


def compile_in_this_process():
    """torch.compile's kernels compiled by this process itself, not by worker processes that would
    need to start CUDA (the module's doc says why they cannot once confined): for this process's
    Inductor if it is loaded, and through the environment for one loaded later or started from here."""
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = 1


def confine_unless_trusted(writable, devices=(), network=False, torch_compile=False):
    """confine(writable, devices, network, torch_compile), or nothing when AUTOKERNEL_UNCONFINED=1
    vouches for the code; returns whether the process is confined."""
    if os.environ.get("AUTOKERNEL_UNCONFINED") == "1":
        return False
    confine(writable, devices, network, torch_compile)
    return True
