"""The matmul starter's stream-K form captured in a CUDA graph and replayed on new inputs, as
torch.compile's reduce-overhead mode and verify's replays run it: every replay reuses the captured
launch's flag token and workspace, so only the owners writing 0 back into the flags they waited
for (include/autokernel/cuda_gemm_stream_k.cuh) keeps a replay from taking a flag still raised by
the one before, with that replay's sums in the slots. Needs a Hopper GPU and nvcc (label gpu)."""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import unittest

import torch

from autokernel.runtime.abi import KernelModule

ROOT = pathlib.Path(__file__).resolve().parents[3]
HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9


def build_matmul(defines, directory):
    """The matmul starter with `defines` ({name: value}) written in as its defaults, for sm_90a."""
    source = (ROOT / "kernels/cuda/matmul.cu").read_text()
    for name, value in defines.items():
        source, count = re.subn(rf"^(\s*#\s*define\s+{name}\s+)\S+", rf"\g<1>{value}", source, count=1, flags=re.M)
        assert count == 1, f"the starter has no #define {name}"
    kernel, module = pathlib.Path(directory) / "matmul.cu", pathlib.Path(directory) / "matmul.so"
    kernel.write_text(source)
    nvcc = shutil.which("nvcc") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    subprocess.run([nvcc, "-std=c++17", "-O3", "-shared", "-Xcompiler", "-fPIC", f"-I{ROOT / 'include'}",
                    "-gencode=arch=compute_90a,code=sm_90a", str(kernel), "-o", str(module)], check=True)
    return KernelModule(str(module), "matmul")


def relative_error(expected, got):
    return ((got.float() - expected).norm() / expected.norm()).item()


@unittest.skipUnless(HOPPER, "needs a Hopper GPU")
class StreamKInACudaGraph(unittest.TestCase):
    def test_each_replay_computes_its_own_inputs_product(self):
        with tempfile.TemporaryDirectory() as directory:
            module = build_matmul({"SKINNY_STREAM_K": 64}, directory)
            torch.manual_seed(0)
            # 64 x 11008 x 4096: 172 tiles of 64 rows of W over 132 blocks, runs of 83-84 k-tiles,
            # so most tiles are cut between two blocks; 17 x 1024 x 4096 cuts each of its 16
            # tiles between about eight.
            for m, n, k in ((64, 11008, 4096), (17, 1024, 4096)):
                a = torch.randn(m, k, device="cuda", dtype=torch.float16)
                w = torch.randn(n, k, device="cuda", dtype=torch.float16) / k**0.5
                c = torch.empty(m, n, device="cuda", dtype=torch.float16)
                inputs = [a, w.t()]  # B as a Linear's [N, K] weight: the problem's b_nk=1
                self.assertEqual(module.launch(inputs, [c], []), 0)  # eager, before capture
                torch.cuda.synchronize()
                self.assertLess(relative_error(a.float() @ w.float().t(), c), 2e-3)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    self.assertEqual(module.launch(inputs, [c], []), 0)
                for replay in range(4):
                    a.copy_(torch.randn(m, k, device="cuda", dtype=torch.float16))
                    c.fill_(float("nan"))
                    graph.replay()
                    torch.cuda.synchronize()
                    self.assertLess(relative_error(a.float() @ w.float().t(), c), 2e-3, (m, n, k, replay))


if __name__ == "__main__":
    unittest.main()
