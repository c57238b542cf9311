"""Our kernels for bench/compare.py: tuned by the engine, then loaded into compare.py's own process
(ctypes, the kernel ABI) so that they are timed by the same method as eager, torch.compile and
Liger-Kernel, side by side, CUDA (.cu) and Triton (.py) alike.

    best, module, note = tuned_module(ak, "triton", "rmsnorm", "8192x8192", "fp16", budget)
    run = module_runner(module, "rmsnorm", args)      # args: compare.py's make_inputs
    timer.median_us(run, ())

The engine's tune gives the best configuration (and its own median, kept as a cross-check); the
kernel file with that configuration written in as its defaults is built and checked once more by
`autokernel bench --quick`, which names the module it built.
"""
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import torch

from problem_shape import is_causal

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
try:  # the bridge's ctypes mirror of the ABI (its place moved with the runtime package)
    from autokernel.runtime.abi import KernelModule
except ImportError:
    from autokernel.abi import KernelModule

EXTENSIONS = {"cuda": ".cu", "triton": ".py"}


def kernel_path(backend, op):
    return ROOT / "kernels" / backend / f"{op}{EXTENSIONS[backend]}"


def _json_of(run):
    try:
        return json.loads(run.stdout[run.stdout.index("{"):])
    except ValueError:
        return None


def with_defaults(source, config, backend):
    """The kernel source with `config` ("NAME=VALUE ...") written in as its defaults."""
    for item in config.split():
        name, value = item.split("=", 1)
        if backend == "triton":
            source = re.sub(rf"^{name}\s*=\s*\S+", f"{name} = {value}", source, count=1, flags=re.M)
        else:
            source = re.sub(rf"^(\s*#\s*define\s+{name}\s+)\S+", rf"\g<1>{value}", source, count=1, flags=re.M)
    return source


def tuned_module(ak, backend, op, shape, dtype, budget):
    """(the engine's recommended trial, the built module of its configuration, a note); module
    None on a failure, with the note saying why."""
    kernel = kernel_path(backend, op)
    if not kernel.exists():
        return None, None, f"no {backend} kernel"
    cmd = [ak, "tune", str(kernel), "--op", op, "--shape", shape, "--dtype", dtype, "--json"]
    if budget:
        cmd += ["--budget", budget]
    run = subprocess.run(cmd, capture_output=True, text=True)
    doc = _json_of(run)
    if doc is None:
        return None, None, (run.stdout + run.stderr).strip().splitlines()[-1][:200]
    best = doc.get("best")
    recommended = doc.get("recommended")
    if best and recommended and recommended != best.get("config"):
        # The winner did not hold up against the first configuration in tune's alternating
        # rounds: the first stands.
        best = next((t for t in doc.get("trials", []) if t.get("config") == recommended), best)
    if not best:
        first = doc["trials"][0] if doc.get("trials") else {}
        return None, None, f"{first.get('status')} at {first.get('stage')}: {first.get('reason', '')[:160]}"
    module, failure = checked_module(ak, backend, op, best["config"], shape, dtype)
    if module is None:
        return best, None, f"the tuned configuration did not rebuild: {failure}"
    return best, module, best["config"] or "(defaults)"


def checked_module(ak, backend, op, config, shape, dtype):
    """(module path, None) of the starter with `config` ("NAME=VALUE ...") written in as its
    defaults, built and passed by `autokernel bench --quick` on `shape`; (None, why) otherwise.
    A `file=PATH` item in the config takes that kernel file instead of the starter. A `home=DIR`
    item takes the starter and the headers of an earlier tree, DIR holding its include/ and
    kernels/ (a baseline for A/B columns in one process), e.g. made by
        mkdir -p .carry/rev-f183dc1 && git archive f183dc1 include kernels | tar -x -C .carry/rev-f183dc1
    The engine builds it with DIR as its home (AUTOKERNEL_HOME), so the kernel includes DIR's
    headers. A file with its headers pasted in would not do: the lint refuses what some of them
    hold (a std::thread in cuda_kernel.cuh's workspace map)."""
    kernel, env = kernel_path(backend, op), None
    where = ("file=", "home=")
    items = dict(item.split("=", 1) for item in config.split() if item.startswith(where))
    config = " ".join(item for item in config.split() if not item.startswith(where))
    if "home" in items:
        home = pathlib.Path(items["home"]).resolve()
        kernel, env = home / kernel.relative_to(ROOT), dict(os.environ, AUTOKERNEL_HOME=str(home))
        if not (home / "include" / "autokernel").is_dir():
            return None, f"home={items['home']}: no include/autokernel there"
    if "file" in items:
        kernel = pathlib.Path(items["file"])
    with tempfile.TemporaryDirectory() as tmp:
        configured = pathlib.Path(tmp) / kernel.name
        configured.write_text(with_defaults(kernel.read_text(), config, backend))
        run = subprocess.run([ak, "bench", str(configured), "--op", op, "--shape", shape, "--dtype", dtype, "--quick",
                              "--json"], capture_output=True, text=True, env=env)
    checked = _json_of(run)
    if not checked or checked.get("status") != "PASS" or not checked.get("module"):
        reason = (checked or {}).get("reason") or (run.stdout + run.stderr).strip()[-160:]
        return None, f"{(checked or {}).get('status', 'no result')}: {reason}"
    return checked["module"], None


def _outputs_and_scalars(op, args, shape):
    """The ABI call of `op` on compare.py's inputs: (inputs, outputs, scalars)."""
    first = args[0]
    if op == "rmsnorm":
        return list(args), [torch.empty_like(first)], [1e-6]
    if op == "layernorm":
        return list(args), [torch.empty_like(first)], [1e-5]
    if op == "softmax":
        return list(args), [torch.empty_like(first)], []
    if op == "reduce":
        return list(args), [torch.empty(first.shape[0], device=first.device, dtype=first.dtype)], []
    if op == "cross_entropy":
        m = first.shape[0]
        return list(args), [torch.empty(m, device=first.device), torch.empty(1, device=first.device)], []
    if op == "rotary_embedding":
        x, cos, sin = args  # compare.py's tables are full width (torch's formula); ours take half
        half = x.shape[-1] // 2
        return [x, cos[:, :half].contiguous(), sin[:, :half].contiguous()], [torch.empty_like(x)], []
    if op == "matmul":
        a, b = args
        return [a, b], [torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)], []
    if op == "flash_attention":
        q = first
        return list(args), [torch.empty_like(q)], [1 / math.sqrt(q.shape[-1]), float(is_causal(shape))]
    if op == "fused_mlp":
        x, _, _, wd = args
        return list(args), [torch.empty(x.shape[0], wd.shape[0], device=x.device, dtype=x.dtype)], []
    raise ValueError(op)


def module_runner(module_path, op, shape, args):
    """A no-argument function that launches the module on `args` on the current stream."""
    module = KernelModule(module_path, op)
    inputs, outputs, scalars = _outputs_and_scalars(op, args, shape)

    def run():
        code = module.launch(inputs, outputs, scalars)
        if code != 0:
            raise RuntimeError(f"ak_launch returned {code}")
    return run
