"""The wgmma attention's softmax runs under its P V in the SASS, not only in the source.

Each key tile's softmax is meant to run while the tensor cores do the previous tile's P V
(FlashAttention-3's order; include/autokernel/cuda_attention_sm90_consumer.cuh). The PTX had it so
for months while ptxas put the wait for P V (WARPGROUP.DEPBAR.LE gsb0, 0x0) above all but 0-12 of
the softmax's 64 MUFU.EX2s in every kernel: waiting earlier is always correct, so nothing in the
PTX keeps it down, and only the SASS shows where it went. This builds the starter for sm_90a with
nvcc and reads its SASS with cuobjdump (python/requirements.txt installs it where the CUDA
toolkit's are missing): in every D = 64 kernel, each wait for S (DEPBAR 0x1) must be followed by
all of a tile's 64 exponentials before the wait for P V.
"""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXPONENTIALS_PER_TILE = 64  # a thread's share of a 64 x 128 score tile


def find_tool(name):
    """The CUDA toolkit's tool, else the one of the nvidia-* wheel that ships it; None if neither."""
    found = shutil.which(name) or shutil.which(name, path="/usr/local/cuda/bin")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        for candidate in sorted(glob.glob(os.path.join(base, "*", "bin", name))):
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def functions_sass(sass):
    """{function name: its SASS lines} from `cuobjdump -sass`."""
    functions, name = {}, None
    for line in sass.splitlines():
        header = re.search(r"Function : (\S+)", line)
        if header:
            name = header.group(1)
            functions[name] = []
        elif name:
            functions[name].append(line)
    return functions


def exponentials_under_pv(lines):
    """For each wait for S (DEPBAR 0x1), the MUFU.EX2s issued before the next wait for P V."""
    runs, counting = [], None
    for line in lines:
        if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in line:
            counting = 0
        elif "WARPGROUP.DEPBAR.LE gsb0, 0x0" in line and counting is not None:
            runs.append(counting)
            counting = None
        elif "MUFU.EX2" in line and counting is not None:
            counting += 1
    return runs


class AttentionSass(unittest.TestCase):
    def test_every_d64_kernel_runs_its_softmax_under_p_v(self):
        nvcc = find_tool("nvcc")
        if nvcc is None:
            self.skipTest("no nvcc on this machine")
        cuobjdump = find_tool("cuobjdump")
        self.assertIsNotNone(cuobjdump, "no cuobjdump: scripts/install-deps.sh installs nvidia-cuda-cuobjdump")
        self.assertIsNotNone(find_tool("nvdisasm"), "no nvdisasm: scripts/install-deps.sh installs nvidia-cuda-nvdisasm")
        with tempfile.TemporaryDirectory(prefix="ak-sass-") as scratch:
            cubin = os.path.join(scratch, "flash_attention.cubin")
            build = subprocess.run(
                [nvcc, "-std=c++17", "-O3", "-cubin", "-gencode=arch=compute_90a,code=sm_90a",
                 "-I", os.path.join(ROOT, "include"), os.path.join(ROOT, "kernels", "cuda", "flash_attention.cu"),
                 "-o", cubin], capture_output=True, text=True, timeout=600)
            self.assertEqual(build.returncode, 0, build.stderr[-3000:])
            # cuobjdump disassembles through nvdisasm, which it looks for on PATH
            tools = os.pathsep.join(os.path.dirname(t) for t in (cuobjdump, find_tool("nvdisasm")) if t)
            env = dict(os.environ, PATH=tools + os.pathsep + os.environ.get("PATH", ""))
            sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, timeout=300, env=env)
            self.assertEqual(sass.returncode, 0, sass.stderr[-2000:])
        kernels = {name: lines for name, lines in functions_sass(sass.stdout).items()
                   if "attention_wgmma" in name and "Li64E" in name}
        # fp16 and bf16, causal spread or not, lazy rescaling or not
        self.assertEqual(len(kernels), 8, sorted(kernels))
        for name, lines in kernels.items():
            runs = exponentials_under_pv(lines)
            # the loop of unmasked tiles and the loop of masked ones
            self.assertGreaterEqual(len(runs), 2, name)
            self.assertGreaterEqual(min(runs), EXPONENTIALS_PER_TILE,
                                    f"{name}: exponentials between the wait for S and the wait for P V: {runs}")


if __name__ == "__main__":
    unittest.main()
