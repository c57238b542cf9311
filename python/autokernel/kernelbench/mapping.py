"""`map`: which KernelBench problems our operators compute, found by running each reference under
the profiler with the bridge's own detection (profile.scoped: the forward traced, our operators
matched in its graph by what they compute, each inside a profiler scope), never by the file's
name. A problem is mapped when the calls our operators take account for at least `--min-share` of
its profiled time (GPU kernel time on a GPU, op time on the CPU); the rest stays with PyTorch in
the ModelNew built from our kernels.

Each problem's profile is written as a workspace's profile.json, the file `autokernel extract`
reads, so the engine's own extract / optimize / build take it from there.
"""
import gc
import json
import pathlib
import time
import warnings

import torch

from . import problems
from .output import emit, progress
from .judge import INIT_SEED, pick_device


def add_arguments(parser):
    parser.add_argument("--workspace", default="kernelbench-workspace",
                        help="gets <level>/<problem>/profile.json for each problem, and map.json")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--min-share", type=float, default=0.5)
    parser.add_argument("--iterations", type=int, default=2)


def run(args):
    device = pick_device(args.device)
    dtype = problems.DTYPES[args.precision]
    directory = problems.default_directory(args.dir)
    found = problems.discover(directory, {args.level} if args.level else None, problems.numbers(args.problems))
    if not found:
        raise problems.ProblemError(f"no problems selected in {directory}")
    workspace = pathlib.Path(args.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    document = {"device": {"type": device.type, "name": _device_name(device)}, "precision": args.precision,
                "min_share": args.min_share, "complete": False, "problems": []}
    for index, problem in enumerate(found):
        progress(f"[{index + 1}/{len(found)}] {problem.key}")
        directory = workspace / f"level{problem.level}" / problem.path.stem
        row = {"key": problem.key, "level": problem.level, "number": problem.number, "name": problem.name,
               "path": str(problem.path), "workspace": str(directory)}
        try:
            row.update(profile_problem(problem, device, dtype, args.iterations, directory, args.precision,
                                       args.shrink))
            row["mapped"] = row["share"] >= args.min_share
        except problems.ProblemError as e:
            row.update(mapped=False, error=str(e))
        except Exception as e:  # the tracing or the profiler on this problem: the next one goes on
            row.update(mapped=False, error=f"{type(e).__name__}: {problems.first_line(e)}")
        document["problems"].append(row)
        # after every problem: a map stopped at its time limit keeps what it found
        (workspace / "map.json").write_text(json.dumps(document, indent=1) + "\n")
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    document["complete"] = True
    (workspace / "map.json").write_text(json.dumps(document, indent=1) + "\n")
    emit(document)
    return 0


def profile_problem(problem, device, dtype, iterations, directory, precision, shrink=1):
    """Our operators' calls in one problem's reference and their share of its time; writes the
    problem's profile.json into `directory`."""
    from ..profile import attribute, scoped  # the bridge: imported when used, so the judge runs without it
    from ..runtime.apply import restore

    loaded = problems.load(problem, shrink)
    try:
        model = problems.build(loaded.Model, loaded, INIT_SEED, device, dtype)
        inputs = problems.make_inputs(loaded, INIT_SEED, device, dtype)
        with torch.no_grad():
            model(*inputs)
    except Exception as e:
        raise problems.ProblemError(f"the reference does not run: {type(e).__name__}: {problems.first_line(e)}")
    gpu = device.type == "cuda"
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if gpu else [])
    with torch.no_grad():
        # the forward traced, our operators matched in its graph, each inside a profiler scope
        report = scoped(model, tuple(inputs), lambda line: None)
        try:
            model(*inputs)  # warm-up: the first call's one-time costs stay out of the profile
            _synchronize(device)
            with warnings.catch_warnings(), torch.profiler.profile(activities=activities) as prof:
                warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
                for _ in range(iterations):
                    model(*inputs)
                _synchronize(device)
        finally:
            restore(model)
        start = time.perf_counter()
        model(*inputs)
        _synchronize(device)
        wall_us = (time.perf_counter() - start) * 1e6
    entries = attribute(prof.events(), iterations, gpu)
    total = sum(e["us"] for e in entries)
    ours = [e for e in entries if e.get("op")]
    _write_profile(directory, problem, inputs, precision, device, iterations, total, wall_us, report, entries)
    return {"share": sum(e["us"] for e in ours) / total if total > 0 else 0.0, "total_us": total,
            "ops": [{"op": e["op"], "problem": e["problem"], "dtype": e["dtype"], "us": e["us"], "calls": e["calls"]}
                    for e in ours],
            "sites": [f"{s.op} {s.problem} {s.dtype} ({s.label})" for s in report.sites],
            "notes": list(report.notes)[:4],
            "unknown": [{"aten": e["aten"], "us": e["us"]} for e in entries if not e.get("op")][:8]}


def _write_profile(directory, problem, inputs, precision, device, iterations, total, wall_us, report, entries):
    first = next((x for x in inputs if isinstance(x, torch.Tensor)), None)
    document = {
        "model": {"spec": f"kb-level{problem.level}-{problem.path.stem}",
                  "input_shape": list(first.shape) if first is not None else [],
                  "dtype": precision, "seed": INIT_SEED, "kernelbench_problem": str(problem.path)},
        "device": {"type": device.type, "name": _device_name(device)},
        "torch": torch.__version__,
        "time_kind": "gpu kernel time" if device.type == "cuda" else "cpu op time",
        "iterations": iterations, "total_us": total, "wall_us": wall_us,
        "sites": [{k: v for k, v in vars(s).items() if k != "kernel"} for s in report.sites],
        "notes": report.notes,
        "entries": entries,
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "profile.json").write_text(json.dumps(document, indent=1) + "\n")


def _synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _device_name(device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
