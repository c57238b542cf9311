"""What the bridge's tests share: the CLI ($AK_CLI_PATH), the models written for the tests
(tests/models), host kernel modules built by the engine itself, and scratch directories that are
removed afterwards."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "models"
CLI = os.environ.get("AK_CLI_PATH")
if str(MODELS) not in sys.path:
    sys.path.insert(0, str(MODELS))


def engine(*args, check=True, env=None):
    """Runs the autokernel CLI; its JSON answer (check), or the completed process."""
    run = subprocess.run([CLI, *args], capture_output=True, text=True, env=env)
    if check and run.returncode != 0:
        raise AssertionError(f"autokernel {' '.join(args)} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    return json.loads(run.stdout[run.stdout.find("{"):]) if check else run


_modules = {}
# Small problems for building (and smoke-testing) the host starters: the ops' standard ones are
# GPU sizes.
SMALL = {"matmul": "16x16x16", "softmax": "4x32", "layernorm": "4x32", "rmsnorm": "4x32",
         "flash_attention": "1x2x8x16:causal=1", "fused_mlp": "4x16x24", "cross_entropy": "4x32",
         "rotary_embedding": "1x2x8x16", "reduce": "4x32"}


def host_module(op):
    """The host starter of an operator, built by the engine (`bench --quick`, through its cache)."""
    if op not in _modules:
        # The module is what is wanted: the tests check its results against eager themselves.
        with Scratch() as scratch:
            run = engine("bench", str(ROOT / "kernels" / "host" / f"{op}.cpp"), "--op", op, "--shape", SMALL[op],
                         "--dtype", "fp32", "--quick", "--json", "--max-time", "0.05", "--results",
                         str(scratch / "results.tsv"), check=False)
        answer = json.loads(run.stdout[run.stdout.find("{"):] or "{}")
        if not pathlib.Path(answer.get("module", "")).is_file():
            raise AssertionError(f"the engine did not build kernels/host/{op}.cpp:\n{run.stdout}\n{run.stderr}")
        _modules[op] = answer["module"]
    return _modules[op]


class Scratch:
    """A temporary directory, removed with everything in it."""

    def __enter__(self):
        self.path = pathlib.Path(tempfile.mkdtemp(prefix="autokernel-test-"))
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)


def build(model_class, dtype=torch.float32, seed=0, shape=(2, 16)):
    """A test model (seeded weights) and its inputs."""
    torch.manual_seed(seed)
    model = model_class().eval().to(dtype)
    inputs = model.make_inputs(shape, torch.device("cpu"), torch.Generator().manual_seed(seed))
    return model, tuple(inputs)


def relative_error(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / a.norm().clamp_min(1e-30))


def tensors(output):
    if isinstance(output, torch.Tensor):
        return [output]
    if hasattr(output, "to_tuple"):
        output = output.to_tuple()
    if isinstance(output, dict):
        output = list(output.values())
    return [t for item in output for t in tensors(item)] if isinstance(output, (tuple, list)) else []
