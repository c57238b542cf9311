"""What keeps the solution process away from the judge, at the level of the operating system.

- The judge (and the C++ command above it) is non-dumpable: a process of the same user can neither
  ptrace it nor open its /proc/<pid>/mem, environ or fd.
- The solution process drops every capability before the solution's code runs (and may gain none
  back through an executable): run as root, as in a container, it keeps root's user id, so it
  still reads the files it needs, but without CAP_SYS_PTRACE the judge's non-dumpable memory is
  closed to it as to any other user's process.
- Each dies with its parent, so a killed command leaves no judge, and a killed judge no solution.
"""
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 4, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
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


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities():
    """Every capability gone from this process, for good. Raises OSError if that fails."""
    if not LINUX:
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
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset: the solution process could not drop its capabilities")


def capabilities():
    """This process's effective capability mask (from /proc/self/status), 0 when it has none."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0
