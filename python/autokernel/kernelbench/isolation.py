"""What keeps the solution process away from the judge, at the level of the operating system.

- The judge (and the C++ command above it) is non-dumpable: a process of the same user can neither
  ptrace it nor open its /proc/<pid>/mem, environ or fd.
- The solution process drops every capability and confines itself (autokernel_sandbox: Landlock)
  before the solution's code runs: run as root, as in a container, it keeps root's user id, so it
  still reads the files it needs, but without CAP_SYS_PTRACE the judge's non-dumpable memory is
  closed to it as to any other user's process, it can change no file outside its own directories
  (the judge's code, the engine, the caches the references use), and it can signal no process
  outside its own.
- Each dies with its parent, so a killed command leaves no judge, and a killed judge no solution.
"""
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
LINUX = sys.platform.startswith("linux")


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def make_undumpable():
    if LINUX:
        _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def die_with_parent(parent_pid):
    if LINUX:
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the request took hold
            os._exit(1)
