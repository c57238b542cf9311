"""`autokernel verify`'s Python half: the model of the workspace's profile, run on the same
weights and inputs as PyTorch eager (the reference), as torch.compile, and as eager with the
compiled kernels plugged in — compared output by output, and timed with one method. On a GPU,
eager and ours are also captured as CUDA graphs and replayed: the plugging runs Python around
every call, and a replay shows what the kernels themselves give without it (or without eager's
own launch cost), next to the same treatment of eager.

The C++ side builds the kernel modules, hands them over in modules.json, reads verify.json,
prints the table and picks the exit code.
"""
import json
import pathlib

import torch

from . import loading, patterns
from .loading import BridgeError
from .plug import intercepted
from .timing import device_name, median_us, synchronize
from .router import Router, plugged_in

# Largest relative L2 error of a model output, ||ours - eager|| / ||eager||, per dtype. A model
# compounds each op's rounding over its layers: looser than one op's tolerance, far tighter than
# what a wrong kernel gives (order 1).
TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


def flatten(output, name="output"):
    """(name, tensor) for every tensor in a model's output (a tensor, tuple, list or dict)."""
    if isinstance(output, torch.Tensor):
        return [(name, output)]
    if isinstance(output, dict):
        return [pair for key, value in output.items() for pair in flatten(value, f"{name}.{key}")]
    if isinstance(output, (tuple, list)):
        return [pair for i, value in enumerate(output) for pair in flatten(value, f"{name}[{i}]")]
    return []


def compare(reference, ours, dtype):
    rows = []
    for (name, ref), (_, got) in zip(flatten(reference), flatten(ours)):
        row = {"name": name, "shape": list(ref.shape), "tolerance": TOLERANCE[dtype]}
        if got.shape != ref.shape:
            row.update(ok=False, reason=f"shape {list(got.shape)}, expected {list(ref.shape)}")
        elif not bool(torch.isfinite(got).all()) and bool(torch.isfinite(ref).all()):
            row.update(ok=False, reason="non-finite values where eager has none")
        else:
            ref64, got64 = ref.double(), got.double()
            error = float((got64 - ref64).norm() / ref64.norm().clamp_min(1e-300))
            row.update(relative_error=error, ok=error <= TOLERANCE[dtype])
        rows.append(row)
    if len(flatten(reference)) != len(flatten(ours)):
        rows.append({"name": "(outputs)", "ok": False, "reason": "a different number of output tensors"})
    return rows


def _compiled(loaded, mode, progress):
    """torch.compile of the original model, or a note on why there is none."""
    if mode == "none":
        return None, "skipped (--compile-mode none)"
    if not hasattr(torch, "compile"):
        return None, f"torch {torch.__version__} has no torch.compile"
    progress(f"torch.compile (mode {mode}); the first run compiles...")
    compiled = torch.compile(loaded.model, mode=mode)
    try:
        with torch.no_grad():
            compiled(*loaded.inputs)
    except Exception as e:  # a compile failure is a note in the table, not the end of verify
        return None, f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return compiled, f"mode {mode}"


def _graphed(forward):
    """forward() captured as a CUDA graph (after warm-up on a side stream), and its outputs."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):
            forward()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph, capture_error_mode="relaxed"):
        output = forward()
    return graph, output


def _graph_timing(loaded, name, forward, reference, timing, args):
    """Times the replay of forward's graph; returns the comparison of its outputs (or None)."""
    try:
        graph, output = _graphed(forward)
    except Exception as e:  # a kernel that cannot be captured is a note, not the end of verify
        timing[f"{name}_graph_note"] = f"capture failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"
        return None
    graph.replay()
    synchronize(loaded.device)
    timing[f"{name}_graph_us"] = median_us(loaded.device, graph.replay, args.warmup, args.iterations)
    return compare(reference, output, loaded.dtype)


def time_all(loaded, eager, plugged, reference, args, progress):
    """Eager, ours and torch.compile, one method; on a GPU also eager's and ours' graph replays.
    Returns the timings and the comparison of the replayed outputs (None without a replay)."""
    timing = {"warmup": args.warmup, "iterations": args.iterations, "method": "median wall time per forward pass"}
    timing["eager_us"] = median_us(loaded.device, eager, args.warmup, args.iterations)
    timing["ours_us"] = median_us(loaded.device, plugged, args.warmup, args.iterations)
    graph_outputs = None
    if loaded.device.type == "cuda":
        progress("CUDA graphs of eager and ours")
        _graph_timing(loaded, "eager", lambda: loaded.model(*loaded.inputs), reference, timing, args)
        graph_outputs = _graph_timing(loaded, "ours", plugged, reference, timing, args)
    compiled, timing["compile_note"] = _compiled(loaded, args.compile_mode, progress)
    timing["compile_us"] = None
    if compiled is not None:
        timing["compile_us"] = median_us(loaded.device, lambda: compiled(*loaded.inputs), args.warmup,
                                         args.iterations)
    return timing, graph_outputs


def verify(args, progress):
    workspace = pathlib.Path(args.workspace)
    profile_path = workspace / "profile.json"
    if not profile_path.is_file():
        raise BridgeError(f"no {profile_path}: run `autokernel profile` first")
    model = json.loads(profile_path.read_text())["model"]
    kernels = json.loads(pathlib.Path(args.modules).read_text())
    loaded = loading.load(model["spec"], ",".join(map(str, model["input_shape"])), model["dtype"],
                          args.device, model.get("seed", 0))
    plugged_count = sum(1 for k in kernels if k.get("use", True))
    progress(f"verifying {model['spec']} with {plugged_count} of {len(kernels)} kernels plugged in, on {loaded.device}")
    reference = loading.run_model(loaded)
    router = Router(kernels)
    sites = patterns.detect(loaded.model)
    with plugged_in(router), intercepted(sites, router.handle, router.ops()):
        ours = loading.run_model(loaded)
    outputs = compare(reference, ours, loaded.dtype)
    passed = all(row["ok"] for row in outputs)
    progress("outputs " + ("match" if passed else "DIFFER") + "; timing eager, torch.compile and ours")

    def eager():
        return loading.run_model(loaded)

    def plugged():
        with plugged_in(router), intercepted(sites, router.handle, router.ops()):
            return loading.run_model(loaded)

    calls_in_check, fallbacks_in_check = dict(router.calls), dict(router.fallbacks)
    timing, graph_outputs = time_all(loaded, eager, plugged, reference, args, progress)
    if graph_outputs is not None:
        passed = passed and all(row["ok"] for row in graph_outputs)
    document = {
        "model": model,
        "device": {"type": loaded.device.type, "name": device_name(loaded.device)},
        "torch": torch.__version__,
        "passed": passed,
        "outputs": outputs,
        "graph_outputs": graph_outputs,
        "kernels": [
            {key: k.get(key) for key in ("name", "op", "shape", "dtype", "module", "use", "why")}
            | {"calls": calls_in_check.get(k["name"], 0)}
            for k in kernels
        ],
        "fallbacks": [{"op": op, "reason": reason, "calls": n} for (op, reason), n in fallbacks_in_check.items()],
        "timing": timing,
    }
    pathlib.Path(args.json_out).write_text(json.dumps(document, indent=1) + "\n")
    progress(f"wrote {args.json_out}")
    return 0


def add_arguments(parser):
    parser.add_argument("--workspace", default="workspace")
    parser.add_argument("--modules", required=True, help="modules.json: the compiled kernels, in rank order")
    parser.add_argument("--json-out", required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                        help="torch.compile mode, or none")
