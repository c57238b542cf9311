"""torch.compile in a process confined with the GPU (autokernel_sandbox), as verify's process that
loads the kernels and a KernelBench solution's process are: CUDA started before the confinement,
Inductor's Triton kernels compiled, run and correct. Before the sandbox kept the compiling in that
process, its workers, which cannot start CUDA once confined (cuInit 304: the driver names its
threads through /proc), failed with "Could not find an active GPU backend" (H100, 2026-12-07).
Needs a CUDA GPU and Landlock (label gpu)."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch

import autokernel_sandbox

COMPILE_CONFINED = textwrap.dedent("""
    import os, sys
    import torch
    import autokernel_sandbox
    scratch = sys.argv[1]
    os.environ["TMPDIR"] = scratch
    for variable in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH"):
        os.environ[variable] = os.path.join(scratch, variable.lower())
    x = torch.randn(1000, 1000, device="cuda")
    autokernel_sandbox.confine([scratch], autokernel_sandbox.gpu_device_files(), torch_compile=True)
    y = torch.compile(lambda t: torch.nn.functional.silu(t) * t + 1)(x)
    expected = torch.nn.functional.silu(x) * x + 1
    print("largest difference:", float((y - expected).abs().max()))
""")


@unittest.skipUnless(torch.cuda.is_available() and autokernel_sandbox.landlock_abi() >= 1,
                     "needs a CUDA GPU and Landlock")
class CompileConfinedWithTheGpu(unittest.TestCase):
    def test_inductors_triton_kernels_compile_and_run_in_the_confined_process(self):
        with tempfile.TemporaryDirectory() as scratch:
            # Landlock stays with the process: the confined one is a child, as verify's is.
            env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_COMPILE_THREADS"}
            run = subprocess.run([sys.executable, "-c", COMPILE_CONFINED, scratch], capture_output=True,
                                 text=True, timeout=300, env=env)
            self.assertEqual(run.returncode, 0, run.stderr[-3000:])
            difference = float(run.stdout.split("largest difference:")[1])
            self.assertLess(difference, 1e-4, run.stdout)


if __name__ == "__main__":
    unittest.main()
