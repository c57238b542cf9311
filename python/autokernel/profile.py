"""`autokernel profile`'s Python half: traces the model's forward pass, finds our operators in the
graph (runtime/rewrite.py: the same matching apply() uses, so what is profiled is what is plugged
in), and runs the graph with each found region inside a profiler scope named after its operator,
problem and dtype: the model's own ops, as it wrote them, only labelled.

Every GPU kernel (on a CPU-only machine, every op's own CPU time) is attributed exactly once: to
the outermost scope of ours above it, else to its outermost aten op, listed as unknown. Writes
profile.json (the entries, the sites found, the model, the device) and the Chrome trace beside it;
the C++ side ranks, classifies against the measured ceilings and prints the Amdahl plan.
"""
import collections
import json
import pathlib
import warnings

import torch

from . import loading
from .runtime import apply as applying
from .runtime import rewrite
from .runtime.capture import capture
from .runtime.rewrite import SCOPE
from .timing import device_name, median_us, synchronize


def _is_cpu(event):
    return str(getattr(event, "device_type", "CPU")).endswith("CPU")


def _own_time_us(event, gpu):
    if gpu:
        return sum(kernel.duration for kernel in getattr(event, "kernels", []))
    return 0.0 if event.name.startswith(SCOPE) else event.self_cpu_time_total


def _ancestors(event):
    node = event.cpu_parent
    while node is not None:
        yield node
        node = node.cpu_parent


def _owner(event):
    """The outermost scope of ours above (or at) the event, else its outermost aten op."""
    ours, aten = None, None
    for node in [event, *_ancestors(event)]:
        if node.name.startswith(SCOPE):
            ours = node
        elif node.name.startswith("aten::"):
            aten = node
    return ours or aten


def attribute(events, iterations, gpu):
    """Entries of per-iteration time, one per (operator, problem, dtype) or unknown aten op."""
    time_us, calls = collections.Counter(), collections.Counter()
    for event in events:
        if not _is_cpu(event):
            continue  # a kernel's own event: counted through the op that launched it
        if event.name.startswith(SCOPE) and not any(p.name.startswith(SCOPE) for p in _ancestors(event)):
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


def scoped(model, inputs, progress):
    """Installs, on the model, its traced graphs with every operator found inside a profiler
    scope; returns the sites found and notes on what did not trace or has no operator."""
    captures, notes = capture(model, inputs, {}, progress)
    report = applying.Report(notes=list(notes))
    for c in captures:
        found, graph_notes = rewrite.find_all(c.graph)
        report.notes.extend(graph_notes)
        chosen = rewrite.choose(found)
        report.sites.extend(applying.Site(c.path, m.op, m.problem, m.dtype_name, m.label, "") for m in chosen)
        rewrite.scope(c.graph, chosen)
    applying.install(model, captures, report)
    return report


def _record(loaded, iterations, gpu):
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if gpu else [])
    with warnings.catch_warnings(), torch.profiler.profile(activities=activities) as prof:
        # torch 2.x warns that a profile keeps only its last cycle; there is one cycle here
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        for _ in range(iterations):
            loading.run_model(loaded)
        synchronize(loaded.device)
    return prof


def profile(args, progress):
    loaded = loading.load(args.model, args.input_shape, args.dtype, args.device, args.seed)
    workspace = pathlib.Path(args.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    gpu = loaded.device.type == "cuda"
    progress(f"profiling {args.model} ({','.join(map(str, loaded.shape))}, {args.dtype}) on {loaded.device}")
    loading.run_model(loaded)  # a model that does not run fails here, with its reason
    wall_us = median_us(loaded.device, lambda: loading.run_model(loaded), 1, 10)
    progress("tracing the forward pass and matching our operators in its graph")
    with torch.no_grad():
        report = scoped(loaded.model, loaded.inputs, progress)
    found = collections.Counter(site.op for site in report.sites)
    progress("operators found: " + (", ".join(f"{op} x{n}" for op, n in sorted(found.items())) or "none"))
    for note in report.notes:
        progress(f"note: {note}")
    for _ in range(args.warmup):
        loading.run_model(loaded)
    synchronize(loaded.device)
    prof = _record(loaded, args.iterations, gpu)
    applying.restore(loaded.model)
    trace = workspace / "profile" / "trace.json"
    trace.parent.mkdir(exist_ok=True)
    prof.export_chrome_trace(str(trace))
    entries = attribute(prof.events(), args.iterations, gpu)
    total = sum(e["us"] for e in entries)
    document = {
        "model": {"spec": args.model, "input_shape": list(loaded.shape), "dtype": args.dtype, "seed": args.seed},
        "device": {"type": loaded.device.type, "name": device_name(loaded.device)},
        "torch": torch.__version__,
        "time_kind": "gpu kernel time" if gpu else "cpu op time",
        "iterations": args.iterations,
        "total_us": total,
        "wall_us": wall_us,
        "unknown_share": sum(e["us"] for e in entries if e["op"] is None) / total if total else 0.0,
        "sites": [{k: v for k, v in vars(s).items() if k != "kernel"} for s in report.sites],
        "notes": report.notes,
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
