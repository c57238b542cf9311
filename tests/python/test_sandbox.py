"""autokernel_sandbox, the confinement the Triton compiler and a KernelBench solution's process put
themselves under: in a child process, writes beneath the named directory go through and every way
out named in the module's doc is refused, for the process and for what it executes; without
Landlock the call refuses with a one-line reason rather than running the code unconfined.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

import autokernel_sandbox

# Run in a child, since confinement cannot be undone: prints one "name: allowed|denied" per attempt.
ATTEMPTS = textwrap.dedent("""
    import os, socket, subprocess, sys
    import autokernel_sandbox
    inside, outside = sys.argv[1], sys.argv[2]
    autokernel_sandbox.confine([inside])
    def attempt(name, action):
        try:
            action()
            print(name + ": allowed")
        except OSError:
            print(name + ": denied")
    attempt("write inside", lambda: open(os.path.join(inside, "kept"), "w").write("x"))
    attempt("write outside", lambda: open(os.path.join(outside, "escaped"), "w").write("x"))
    attempt("symlink inside", lambda: os.symlink(outside, os.path.join(inside, "link")))
    attempt("rename out", lambda: os.rename(os.path.join(inside, "kept"), os.path.join(outside, "moved")))
    attempt("tcp bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
    attempt("signal parent", lambda: os.kill(os.getppid(), 0))
    shell = subprocess.run(["sh", "-c", "echo x > '" + os.path.join(outside, "by_shell") + "'"],
                           stderr=subprocess.DEVNULL)
    print("shell write outside: " + ("allowed" if shell.returncode == 0 else "denied"))
""")


@unittest.skipUnless(autokernel_sandbox.landlock_abi() >= 1, "this kernel has no Landlock")
class Confined(unittest.TestCase):
    def test_writes_stay_beneath_the_named_directory_and_every_way_out_is_refused(self):
        with tempfile.TemporaryDirectory() as inside, tempfile.TemporaryDirectory() as outside:
            run = subprocess.run([sys.executable, "-c", ATTEMPTS, inside, outside], capture_output=True,
                                 text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stderr)
            seen = dict(line.split(": ") for line in run.stdout.splitlines())
            expected = {"write inside": "allowed", "write outside": "denied", "symlink inside": "denied",
                        "rename out": "denied", "shell write outside": "denied"}
            abi = autokernel_sandbox.landlock_abi()
            if abi >= 4:
                expected["tcp bind"] = "denied"
            if abi >= 6:
                expected["signal parent"] = "denied"
            for name, verdict in expected.items():
                self.assertEqual(seen.get(name), verdict, f"{name}: {run.stdout}")
            self.assertEqual(os.listdir(outside), [])


# A process confined with a device file, as verify's and a solution's are with the GPU's: prints
# what its torch.compile and a process it starts would do, and whether it may name a thread.
WITH_DEVICES = textwrap.dedent("""
    import os, subprocess, sys, tempfile, threading
    import torch._inductor.config as config
    from torch._inductor.async_compile import AsyncCompile
    import autokernel_sandbox
    config.compile_threads = 2
    AsyncCompile.warm_pool()  # workers started before the confinement, outside it
    sidecar = AsyncCompile.process_pool().process
    autokernel_sandbox.confine([sys.argv[1]], [os.devnull], torch_compile=True)
    print("compile threads:", config.compile_threads)
    print("earlier workers:", "running" if sidecar.poll() is None else "stopped")
    child = "import os; print(os.environ.get('TORCHINDUCTOR_COMPILE_THREADS'))"
    print("a child's compile threads:", subprocess.run([sys.executable, "-c", child], capture_output=True,
                                                       text=True).stdout.strip())
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as comm:
            comm.write("renamed")
        print("name a thread: allowed")
    except OSError:
        print("name a thread: denied")
    try:  # no compile pool here, so no semaphores: other processes' files stay out of reach
        os.rmdir(tempfile.mkdtemp(dir="/dev/shm"))
        print("write /dev/shm: allowed")
    except OSError:
        print("write /dev/shm: denied")
""")

# A process confined to the CPU that compiles with torch.compile: Inductor's compile pool, a
# process pool, keeps its semaphores in /dev/shm.
ON_THE_CPU = textwrap.dedent("""
    import os, sys, tempfile
    import autokernel_sandbox
    autokernel_sandbox.confine([sys.argv[1]], torch_compile=True)
    os.rmdir(tempfile.mkdtemp(dir="/dev/shm"))
    print("write /dev/shm: allowed")
""")


@unittest.skipUnless(autokernel_sandbox.landlock_abi() >= 1, "this kernel has no Landlock")
class ConfinedForTorchCompile(unittest.TestCase):
    def test_torch_compile_compiles_in_the_confined_process_and_no_earlier_worker_outlives_it(self):
        """CUDA's driver names its threads through /proc, read-only here, so a process started
        inside cannot start CUDA (cuInit 304): Inductor's workers, which import each Triton kernel
        they compile, would fail with "Could not find an active GPU backend" (the H100, 2026-12-07).
        Workers started before the confinement would run outside it, so they are stopped."""
        try:
            import torch._inductor.config  # noqa: F401
        except ImportError:
            self.skipTest("no PyTorch with Inductor here")
        with tempfile.TemporaryDirectory() as inside:
            run = subprocess.run([sys.executable, "-c", WITH_DEVICES, inside], capture_output=True,
                                 text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            seen = dict(line.split(": ") for line in run.stdout.splitlines())
            self.assertEqual(seen, {"compile threads": "1", "earlier workers": "stopped",
                                    "a child's compile threads": "1", "name a thread": "denied",
                                    "write /dev/shm": "denied"}, run.stdout)

    @unittest.skipUnless(os.path.isdir("/dev/shm"), "no /dev/shm here")
    def test_on_the_cpu_the_compile_pools_semaphores_have_dev_shm(self):
        with tempfile.TemporaryDirectory() as inside:
            run = subprocess.run([sys.executable, "-c", ON_THE_CPU, inside], capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual((run.returncode, run.stdout.strip()), (0, "write /dev/shm: allowed"), run.stderr)


class WithoutLandlock(unittest.TestCase):
    def test_it_refuses_with_one_line_unless_the_code_is_vouched_for(self):
        with mock.patch.object(autokernel_sandbox, "landlock_abi", return_value=0):
            with self.assertRaises(autokernel_sandbox.Unconfined) as refused:
                autokernel_sandbox.confine_unless_trusted(["/nonexistent"])
            self.assertIn("Landlock is not available", str(refused.exception.strerror))
            self.assertNotIn("\n", refused.exception.strerror)
            with mock.patch.dict(os.environ, {"AUTOKERNEL_UNCONFINED": "1"}):
                self.assertFalse(autokernel_sandbox.confine_unless_trusted(["/nonexistent"]))


class SoleGpu(unittest.TestCase):
    """A KernelBench solution process sees the judge's GPU alone: its device files and its minor."""

    def test_only_the_named_gpus_device_file_is_kept_beside_the_drivers_control_files(self):
        with tempfile.TemporaryDirectory() as dev:
            for name in ["nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia-caps", "null"]:
                open(os.path.join(dev, name), "w").close()
            names = lambda files: sorted(os.path.basename(f) for f in files)
            everything = ["nvidia-caps", "nvidia-uvm", "nvidia0", "nvidia1", "nvidia12", "nvidiactl"]
            self.assertEqual(names(autokernel_sandbox.gpu_device_files(directory=dev)), everything)
            self.assertEqual(names(autokernel_sandbox.gpu_device_files(1, directory=dev)),
                             ["nvidia-caps", "nvidia-uvm", "nvidia1", "nvidiactl"])
            self.assertEqual(names(autokernel_sandbox.gpu_device_files(12, directory=dev)),
                             ["nvidia-caps", "nvidia-uvm", "nvidia12", "nvidiactl"])

    def test_the_device_minor_is_read_from_the_drivers_file_for_the_gpus_pci_address(self):
        from autokernel.kernelbench import isolation

        with tempfile.TemporaryDirectory() as proc:
            for address, minor in [("0000:18:00.0", 0), ("0000:2a:00.0", 1), ("0001:2a:00.0", 7)]:
                os.makedirs(os.path.join(proc, address))
                with open(os.path.join(proc, address, "information"), "w") as f:
                    f.write(f"Model: \t\t NVIDIA H200\nIRQ:   88\nDevice Minor: \t {minor}\n"
                            f"Bus Location: \t {address}\n")
            props = mock.Mock(pci_domain_id=0, pci_bus_id=0x2a, pci_device_id=0)
            self.assertEqual(isolation._device_minor(props, proc), 1)
            props.pci_domain_id = 1
            self.assertEqual(isolation._device_minor(props, proc), 7)
            props.pci_bus_id = 0x3b
            self.assertIsNone(isolation._device_minor(props, proc))
        self.assertIsNone(isolation._device_minor(props, os.path.join(proc, "gone")))

    def test_a_cpu_judge_names_no_gpu(self):
        import torch
        from autokernel.kernelbench import isolation

        with mock.patch.dict(os.environ, {"AUTOKERNEL_SOLE_GPU_BY_UUID": "1"}):
            self.assertIsNone(isolation.sole_gpu(torch.device("cpu")))


if __name__ == "__main__":
    unittest.main()
