"""What keeps the solution process away from the judge, at the level of the operating system.

- The judge (and the C++ command above it) is non-dumpable: a process of the same user can neither
  ptrace it nor open its /proc/<pid>/mem, environ or fd.
- The solution process drops every capability and confines itself (autokernel_sandbox: Landlock)
  before the solution's code runs: run as root, as in a container, it keeps root's user id, so it
  still reads the files it needs, but without CAP_SYS_PTRACE the judge's non-dumpable memory is
  closed to it as to any other user's process, it can change no file outside its own directories
  (the judge's code, the engine, the caches the references use), and it can signal no process
  outside its own.
- The solution process sees the judge's GPU alone (`sole_gpu`): its CUDA_VISIBLE_DEVICES names it
  by UUID, and its confinement opens only that GPU's device file, so that nothing it starts finds
  another. A solution that computed on a second GPU would read as faster than the one GPU it is
  timed on, and the judge's checks of its own GPU (a gated call's hold) would not see that work.
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


def sole_gpu(device, proc_gpus="/proc/driver/nvidia/gpus"):
    """Where this process sees more than one CUDA GPU: (CUDA_VISIBLE_DEVICES naming `device` alone,
    by UUID, the minor number of its /dev/nvidia<N>, or None where the driver does not say); None
    where the solver's inherited environment shows one device already, or on the CPU.
    AUTOKERNEL_SOLE_GPU_BY_UUID=1 takes this path on one GPU too (a one-GPU machine tests it)."""
    import torch

    forced = os.environ.get("AUTOKERNEL_SOLE_GPU_BY_UUID") == "1"
    if device.type != "cuda" or (torch.cuda.device_count() < 2 and not forced):
        return None
    props = torch.cuda.get_device_properties(device)
    return f"GPU-{props.uuid}", _device_minor(props, proc_gpus)


def _device_minor(props, proc_gpus):
    """The device file number the driver gives the GPU at props' PCI address (its information file
    under /proc/driver/nvidia/gpus/<domain:bus:device.function>: "Device Minor: N")."""
    try:
        addresses = os.listdir(proc_gpus)
    except OSError:
        return None
    for address in addresses:
        try:
            domain, bus, rest = address.split(":")
            if (int(domain, 16), int(bus, 16), int(rest.split(".")[0], 16)) != \
                    (props.pci_domain_id, props.pci_bus_id, props.pci_device_id):
                continue
            with open(os.path.join(proc_gpus, address, "information")) as f:
                for line in f:
                    if line.startswith("Device Minor:"):
                        return int(line.split(":", 1)[1])
        except (OSError, ValueError):
            continue
    return None


def make_undumpable():
    if LINUX:
        _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def die_with_parent(parent_pid):
    if LINUX:
        _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the request took hold
            os._exit(1)
