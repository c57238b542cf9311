"""`autokernel verify`'s Python half: the model of the workspace's profile, on the same weights and
inputs, timed as a user runs it — eager, and under torch.compile in each mode — by itself and
with our kernels applied (autokernel.apply, as a user would), each kernel plugged in only where
it makes the whole model faster in the mode (decide.py). Every output with our kernels is
compared with eager's. On a GPU, eager and ours are also captured as CUDA graphs and replayed.

The C++ side builds the kernel modules and lists them in kernels.json (those that passed the
harness are the candidates), reads verify.json, prints the table and picks the exit code.
"""
import json
import os
import pathlib
import statistics
import tempfile
from dataclasses import dataclass

import torch

from . import loading
from .decide import MARGIN, Bench, decide, earlier_winners_first
from .loading import BridgeError
from .outputs import clone_output, compare
from .replay import replay_timing
from .runtime import apply as applying
from .runtime import custom_ops, manifest
from .runtime.kernel_table import TABLE
from .timing import COMPILE_MODES, device_name


@dataclass
class Settings:
    warmup: int
    iterations: int
    budget_s: float
    decide: bool = True  # False: every candidate plugged in, no timing decision


def _modes(args, gpu):
    modes = [m for m in args.compile_modes.split(",") if m and m != "none"]
    unknown = [m for m in modes if m not in COMPILE_MODES]
    if unknown:
        raise BridgeError(f"unknown --compile-modes {','.join(unknown)} (of {', '.join(COMPILE_MODES)}, or none)")
    if not gpu and "reduce-overhead" in modes:
        modes.remove("reduce-overhead")  # CUDA graphs: nothing to reduce on a CPU
    decide_modes = [m for m in args.mode.split(",") if m] if args.mode != "auto" else \
        ["default" if gpu and "default" in modes else "eager"]
    for mode in decide_modes:
        if mode != "eager" and mode not in modes:
            raise BridgeError(f"--mode {mode} is not among the measured modes ({','.join(modes) or 'eager'})")
    decided = [m for m in decide_modes if m != "eager"]
    return decided + [m for m in modes if m not in decided], decide_modes


def _row(mode, base, ours, kept, alone_us=()):
    """A mode's row. `alone_us`: PyTorch alone's medians in this mode's paired measurements: with
    nothing plugged the row shows their median with the mode's own reading of PyTorch alone, which
    is a single one and can be far off (the compact LLaMA's under default, first after its
    compile, read 6115 µs against 3573–3784 in every paired comparison after it)."""
    row = {"mode": mode, "torch_us": ours.torch_us(base) if kept else base.us, "ours_us": ours.us if kept else base.us,
           "kernels": list(kept), "compile_s": base.compile_s, "note": base.note or ours.note}
    if kept and len(ours.readings) > 1:
        row["torch_readings_us"], row["ours_readings_us"] = ours.paired_readings, ours.readings
        row["note"] = row["note"] or (f"medians of {len(ours.readings)} alternating rounds: PyTorch "
                                      + "/".join(f"{us:.0f}" for us in ours.paired_readings) + ", ours "
                                      + "/".join(f"{us:.0f}" for us in ours.readings) + " µs")
    if not kept and alone_us and base.us is not None:
        readings = [base.us, *alone_us]
        row["torch_us"] = row["ours_us"] = statistics.median(readings)
        row["torch_readings_us"] = readings
        row["note"] = row["note"] or f"PyTorch alone: the median of its {len(readings)} readings in this mode"
    return row


def _measure_all(bench, candidates, modes, decide_modes, reference, loaded):
    """Each mode's row: PyTorch alone, then with the kernels plugged in; in eager and in each
    decide mode each kernel is decided (decide.py), the other modes take the first decide mode's
    set."""
    decide_mode = decide_modes[0]
    rows, outputs, decisions, final = [], [], {}, {}
    plugged = []
    for mode in ["eager"] + modes:
        if mode != "eager" and not bench.affordable(mode):
            rows.append({"mode": mode, "torch_us": None, "ours_us": None, "kernels": [],
                         "note": bench.unaffordable(mode)})
            continue
        base = bench.measure(mode)
        if mode == "eager" or mode in decide_modes:
            kept, decisions[mode], ours = decide(bench, mode, earlier_winners_first(candidates, bench.log), base)
            if mode == decide_mode:
                plugged = kept
        else:
            kept = plugged
            ours = bench.measure(mode, kept) if kept and bench.affordable(mode, kept) else base
        if mode != "eager" and kept and ours is not base and ours.us is not None and base.us is not None:
            kept, ours = _confirmed(bench, mode, kept, base, ours, decisions.get(mode))
            if mode == decide_mode:
                plugged = kept
        final[mode] = ours
        alone_us = [r["paired_torch_us"] for r in bench.log if r["mode"] == mode and r["paired_torch_us"]]
        rows.append(_row(mode, base, ours, kept if ours is not base else [], alone_us))
        if mode == "eager" and candidates:
            # how much of eager's row is the tracing itself (no module calls), not the kernels
            traced = bench.measure("eager", traced_only=True)
            rows[-1]["traced_us"], rows[-1]["traced_torch_us"] = traced.us, traced.paired_base_us
        if ours.kernels and ours.output is not None and ours not in bench.checked:
            bench.checked.append(ours)
    for m in bench.checked:
        if m.output is not None:
            label = f"ours, {m.mode}, {len(m.kernels)} kernel{'s' if len(m.kernels) != 1 else ''}"
            outputs.extend(compare(reference, m.output, loaded.dtype, label))
    if candidates and not outputs:
        outputs = _untimed_check(bench, candidates, reference, loaded)
    return rows, outputs, decisions, final


def _untimed_check(bench, candidates, reference, loaded):
    """The outputs with every candidate in, from one eager forward pass outside the budget: the
    budget bounds the timing, never whether the kernels were checked (a run whose optimize stage
    overran left verify 8 s, and its one measurement with the kernels was stopped)."""
    model = loaded.model
    applying.restore(model)
    bench.apply(candidates)
    try:
        with torch.no_grad():
            output = clone_output(model(*loaded.inputs))
    finally:
        applying.restore(model)
    bench.progress(f"checked the outputs with the {len(candidates)} candidates untimed: the budget ran out first")
    return compare(reference, output, loaded.dtype, f"ours, eager, {len(candidates)} kernels, untimed")


def _confirmed(bench, mode, kept, base, ours, why):
    """The kept set in a compiled mode, judged by its calls alternating with PyTorch alone: out
    again, with them as the reason, when they do not show it faster. Where the mode was decided
    (`why`, its decisions; else None), the set won as the fastest of several readings, which
    flatters it, so it is timed once more in fresh calls first, as far as the budget allows.
    Without deciding (--plug all) the set stays in whatever it reads: it is there to be checked."""
    if not bench.settings.decide:
        return kept, ours
    if why is not None and bench.affordable(mode, kept):
        again = bench.measure(mode, kept)
        if again.us is not None:
            ours = again
    if ours.relative(base) < 1 - MARGIN:
        return kept, ours
    readings = (f"medians of calls alternating with PyTorch alone: {ours.us:.0f} µs with them, "
                f"{ours.torch_us(base):.0f} µs without")
    for name in kept if why is not None else []:
        why[name] = (False, f"faster once ({why[name][1]}), not in the {readings}")
    base.note = f"not plugged: {readings}"
    return [], base


def kept_in(decisions, mode):
    return [name for name, (kept, _) in decisions.get(mode, {}).items() if kept]


def verify(args, progress):
    workspace = pathlib.Path(args.workspace)
    profile_path = workspace / "profile.json"
    if not profile_path.is_file():
        raise BridgeError(f"no {profile_path}: run `autokernel profile` first")
    model = json.loads(profile_path.read_text())["model"]
    if args.confine:
        if not (args.scratch and args.caches):
            raise BridgeError("--confine needs --scratch and --caches")
        _private_directories(args)
    loaded = loading.load(model["spec"], ",".join(map(str, model["input_shape"])), model["dtype"], args.device,
                          model.get("seed", 0))
    custom_ops.define()  # (its native code built, or loaded, before any kernel is in reach)
    if args.confine:
        _confine(args, loaded.device)
    try:
        registered, entries, not_loaded = manifest.load(args.kernels)
    except manifest.ManifestError as e:
        raise BridgeError(str(e)) from None
    candidates = [k.name for k in registered]
    gpu = loaded.device.type == "cuda"
    modes, decide_modes = _modes(args, gpu)
    decide_mode = decide_modes[0]
    implementation = "C++" if TABLE.native is not None else "Python (no native kernels)"
    progress(f"verifying {model['spec']} with {len(candidates)} candidate kernels on {loaded.device}; "
             f"plugging decided in mode {', '.join(decide_modes)}; modes: eager{''.join(', ' + m for m in modes)}; "
             f"custom ops in {implementation}")
    reference = loading.run_model(loaded)
    bench = Bench(loaded, Settings(args.warmup, args.iterations, args.budget, not args.no_decide), progress,
                  started=args.started)
    rows, outputs, decisions, final = _measure_all(bench, candidates, modes, decide_modes, reference, loaded)
    kept = kept_in(decisions, "eager")
    replay, graph_outputs = {}, []
    if gpu and bench.affordable("eager"):
        replay, graph_outputs = replay_timing(bench, reference, kept or candidates)
    elif gpu:
        replay = {"note": f"skipped: the budget ({bench.settings.budget_s:.0f} s) ran out"}
    if gpu and candidates and not kept:  # what the kernels give without launch costs, not a plugged set
        replay.setdefault("ours_note", "every candidate: none is kept in eager")
    eager_final = final["eager"]
    document = {
        "model": model,
        "device": {"type": loaded.device.type, "name": device_name(loaded.device)},
        "torch": torch.__version__,
        "passed": all(row["ok"] for row in outputs + graph_outputs),
        "decide_mode": decide_mode,  # the first: what export plugs
        "decide_modes": decide_modes,
        "custom_ops": "native" if TABLE.native is not None else "python",
        "outputs": outputs + graph_outputs,
        "sites": [vars(s) for s in eager_final.sites],
        "kernels": [_kernel_row(e, registered, decisions, final, not_loaded) for e in entries],
        "fallbacks": [{"op": op, "reason": reason, "calls": n} for (op, reason), n in eager_final.fallbacks.items()],
        "timing": {"method": "median wall time per forward pass, calls in a loop, each synchronized",
                   "warmup": args.warmup, "iterations": args.iterations, "rows": rows, "replay": replay},
        "measurements": bench.log,  # every timing of the model, in the order taken
        "elapsed_s": bench.elapsed(),
        "budget_s": args.budget,
        "stopped_at_budget_end": bench.spent,
    }
    pathlib.Path(args.json_out).write_text(json.dumps(document, indent=1, default=str) + "\n")
    progress(f"wrote {args.json_out} after {bench.elapsed():.0f} s")
    return 0


# Where the compilers keep what they build, beneath --caches: the only caches this process writes
CACHE_VARIABLES = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton", "CUDA_CACHE_PATH": "nv",
                   "PYTORCH_KERNEL_CACHE_PATH": "torch-kernels"}


def _private_directories(args):
    """The temporary files and the compilers' caches in the directories the confinement leaves
    writable (set before the model loads: CUDA reads its cache's path when it starts)."""
    os.environ["TMPDIR"] = args.scratch
    tempfile.tempdir = None
    for variable, name in CACHE_VARIABLES.items():
        os.environ[variable] = os.path.join(args.caches, name)


def _confine(args, device):
    """This process loads the kernels, so from here on it changes nothing but the workspace (its
    report), its scratch directory and its compilers' caches: not the engine, its Python, the
    module cache or the judge's files, which decide what verify reports after it (the judge's
    verdict). Its report is the kernels' word all the same (docs/architecture.md)."""
    from autokernel_sandbox import Unconfined, confine_unless_trusted, gpu_device_files

    writable = [str(pathlib.Path(args.json_out).resolve().parent), args.scratch, args.caches]
    try:
        confine_unless_trusted(writable, gpu_device_files() if device.type == "cuda" else (), torch_compile=True)
    except Unconfined as e:
        raise BridgeError(f"refusing to load the kernels unconfined: {e.strerror} "
                          "(AUTOKERNEL_UNCONFINED=1 runs trusted kernels without it)", usage=False) from None


def _kernel_row(entry, registered, decisions, final, not_loaded):
    name = entry["name"]
    row = {key: entry.get(key) for key in ("name", "op", "problem", "dtype", "why")}
    row["candidate"] = any(k.name == name for k in registered)
    if not row["candidate"] and not_loaded:
        row["why"] = f"not loaded: {not_loaded}"
    row["decisions"] = {mode: {"in": kept, "why": why} for mode, d in decisions.items()
                        for k, (kept, why) in d.items() if k == name}
    row["calls"] = {mode: m.calls.get(name, 0) for mode, m in final.items()}
    return row


def add_arguments(parser):
    parser.add_argument("--workspace", default="workspace")
    parser.add_argument("--kernels", required=True, help="kernels.json: the compiled kernels and their candidacy")
    parser.add_argument("--json-out", required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--compile-modes", default=",".join(COMPILE_MODES),
                        help="torch.compile modes to time, comma-separated, or none")
    parser.add_argument("--mode", default="auto",
                        help="the mode plugging is decided in: eager or a compile mode, or several comma-separated "
                             "(each decided on its own; the first is what export plugs; auto: default on a GPU)")
    parser.add_argument("--no-decide", action="store_true",
                        help="plug every candidate in, without timing decisions (to check outputs)")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="seconds: no measurement starts that its estimate says would end past this, and "
                             "one still running then is stopped (0: no limit)")
    parser.add_argument("--confine", action="store_true",
                        help="once the model is loaded, change nothing but the report's directory, --scratch "
                             "and --caches (Landlock): the kernels this process loads cannot reach what judges them")
    parser.add_argument("--scratch", help="with --confine: the temporary directory (TMPDIR)")
    parser.add_argument("--caches", help="with --confine: where the compilers' caches go")
    parser.add_argument("--started", type=float, default=None,
                        help="when the budget began, in seconds since the epoch (default: now); the CLI's "
                             "verify passes its own start, so building the kernels counts")
