"""Whether a process confined by autokernel_sandbox can start CUDA itself (cuInit), as a worker that
torch.compile started from a confined process would have to, and if not, what it was refused
(tests/gpu/python/test_sandbox_gpu.py checks that torch.compile works confined without them).

Each configuration runs in a fresh child that confines itself and then calls cuInit and
cuDeviceGetCount through the driver; under strace (where the machine has it) the refused system
calls are listed. Run on a GPU machine:  python3 bench/confine_probe.py [--strace]
"""
import argparse
import ctypes
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
import autokernel_sandbox as sandbox  # noqa: E402


def configurations(scratch):
    devices = sandbox.gpu_device_files()
    return {
        "unconfined": None,
        "capabilities dropped only": "caps",
        "confined, gpu device files (as verify)": ([scratch], devices),
        "confined as verify, torch.cuda.is_available()": ([scratch], devices),
        "confined, all of /dev as devices": ([scratch], ["/dev"]),
        "confined as verify, /proc writable": ([scratch, "/proc"], devices),
        "confined, / writable, gpu device files": (["/"], devices),
        "confined, / writable, all of /dev as devices": (["/"], ["/dev"]),
    }


def child(name, scratch):
    config = configurations(scratch)[name]
    if config == "caps":
        sandbox.drop_capabilities()
    elif config is not None:
        writable, devices = config
        sandbox.confine(writable, devices)
    if "torch" in name:
        import torch
        print("torch.cuda.is_available():", torch.cuda.is_available())
        return 0 if torch.cuda.is_available() else 1
    cuda = ctypes.CDLL("libcuda.so.1")
    status = cuda.cuInit(0)
    count = ctypes.c_int(-1)
    if status == 0:
        status = cuda.cuDeviceGetCount(ctypes.byref(count))
    print(f"cuInit/cuDeviceGetCount: {status}, devices {count.value}")
    return 0 if status == 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strace", action="store_true", help="list the refused calls (EACCES, EPERM)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.scratch)
    print(f"kernel {os.uname().release}, Landlock ABI {sandbox.landlock_abi()}, uid {os.getuid()}")
    print("device files:", " ".join(sandbox.gpu_device_files()))
    subprocess.run(["sh", "-c", "ls -la /dev | grep -i -e nvidia -e dri; ls -la /dev/nvidia-caps 2>/dev/null"])
    strace = shutil.which("strace") if args.strace else None
    with tempfile.TemporaryDirectory() as scratch:
        for name in configurations(scratch):
            command = [sys.executable, __file__, "--child", name, "--scratch", scratch]
            trace = os.path.join(scratch, "trace")
            if strace:
                command = [strace, "-f", "-qq", "-e", "trace=%file,%desc,%process", "-o", trace] + command
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
            print(f"{name}: exit {done.returncode}: {(done.stdout + done.stderr).strip()[-400:]}")
            if strace and os.path.exists(trace):
                refused = [line.strip() for line in open(trace) if "EACCES" in line or "EPERM" in line]
                print("  refused:", *refused[:25], sep="\n    ")
                os.remove(trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
