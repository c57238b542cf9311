"""`autokernel profile`'s Python half: runs the model under torch.profiler and attributes every
GPU kernel (on a CPU-only machine, every op's own CPU time) exactly once: to the outermost of our
operators whose call launched it (a named scope opened around each intercepted call), else to
the outermost aten op above it, listed as unknown. An aten op and the kernels it launches are
never both counted: only each event's own kernels (or own CPU time) are summed.

Writes profile.json (the entries, the model, the device) and the Chrome trace beside it; the
C++ side ranks, classifies against the measured ceilings and prints the Amdahl plan.
"""
import collections
import json
import pathlib
import warnings

import torch
from torch.autograd.profiler import record_function

from . import loading, patterns
from .plug import intercepted
from .timing import device_name, median_us, synchronize

SCOPE = "ak::"


def _scope_name(call):
    return f"{SCOPE}{call.op}::{call.problem}::{call.dtype_name}"


def _is_cpu(event):
    return str(getattr(event, "device_type", "CPU")).endswith("CPU")


def _own_time_us(event, gpu):
    if gpu:
        return sum(kernel.duration for kernel in getattr(event, "kernels", []))
    return 0.0 if event.name.startswith(SCOPE) else event.self_cpu_time_total


def _owner(event):
    """The outermost scope of ours above (or at) the event, else its outermost aten op."""
    ours, aten = None, None
    node = event
    while node is not None:
        if node.name.startswith(SCOPE):
            ours = node
        elif node.name.startswith("aten::"):
            aten = node
        node = node.cpu_parent
    return ours or aten


def attribute(events, iterations, gpu):
    """Entries of per-iteration time, one per (operator, problem, dtype) or unknown aten op."""
    time_us, calls = collections.Counter(), collections.Counter()
    for event in events:
        if not _is_cpu(event):
            continue  # a kernel's own event: counted through the op that launched it
        if event.name.startswith(SCOPE) and not any(
            p.name.startswith(SCOPE) for p in _ancestors(event)
        ):
            calls[event.name] += 1
        own = _own_time_us(event, gpu)
        if own <= 0:
            continue
        owner = _owner(event)
        time_us[owner.name if owner is not None else "(outside any op)"] += own
    entries = []
    for name, us in time_us.most_common():
        entry = {"us": us / iterations, "calls": calls.get(name, 0) / iterations}
        if name.startswith(SCOPE):
            op, problem, dtype = name[len(SCOPE):].split("::")
            entry.update(op=op, problem=problem, dtype=dtype)
        else:
            entry.update(op=None, aten=name)
        entries.append(entry)
    return entries


def _ancestors(event):
    node = event.cpu_parent
    while node is not None:
        yield node
        node = node.cpu_parent


def profile(args, progress):
    loaded = loading.load(args.model, args.input_shape, args.dtype, args.device, args.seed)
    workspace = pathlib.Path(args.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    gpu = loaded.device.type == "cuda"
    progress(f"profiling {args.model} ({','.join(map(str, loaded.shape))}, {args.dtype}) on {loaded.device}")
    loading.run_model(loaded)  # a model that does not run fails here, with its reason
    sites = patterns.detect(loaded.model)
    found = collections.Counter(site.op for site in sites)
    progress("module patterns: " + (", ".join(f"{op} x{n}" for op, n in sorted(found.items())) or "none"))

    def scope(call, run_in_torch):
        with record_function(_scope_name(call)):
            return run_in_torch()

    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if gpu else [])
    with intercepted(sites, scope):
        for _ in range(args.warmup):
            loading.run_model(loaded)
        synchronize(loaded.device)
        with warnings.catch_warnings(), torch.profiler.profile(activities=activities) as prof:
            # torch 2.x warns that a profile keeps only its last cycle; there is one cycle here
            warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
            for _ in range(args.iterations):
                loading.run_model(loaded)
            synchronize(loaded.device)
    trace = workspace / "profile" / "trace.json"
    trace.parent.mkdir(exist_ok=True)
    prof.export_chrome_trace(str(trace))
    entries = attribute(prof.events(), args.iterations, gpu)
    document = {
        "model": {"spec": args.model, "input_shape": list(loaded.shape), "dtype": args.dtype, "seed": args.seed},
        "device": {"type": loaded.device.type, "name": device_name(loaded.device)},
        "torch": torch.__version__,
        "time_kind": "gpu kernel time" if gpu else "cpu op time",
        "iterations": args.iterations,
        "total_us": sum(e["us"] for e in entries),
        "wall_us": median_us(loaded.device, lambda: loading.run_model(loaded), 0, 10),
        "patterns": [{"module": s.name, "op": s.op} for s in sites],
        "trace": str(trace.relative_to(workspace)),
        "entries": entries,
    }
    (workspace / "profile.json").write_text(json.dumps(document, indent=1) + "\n")
    progress(f"wrote {workspace / 'profile.json'} ({len(entries)} entries) and {trace}")
    return 0


def add_arguments(parser):
    parser.add_argument("--model", required=True)
    parser.add_argument("--input-shape")
    parser.add_argument("--dtype", default="fp16")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--workspace", default="workspace")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=3)

