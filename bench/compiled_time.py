"""Where a verified model's time goes, as users run it: for each mode (eager, torch.compile modes),
PyTorch alone and the model with our kernels applied (all candidates, then each alone), the wall
time per forward pass beside the GPU's kernel time per forward pass, by kind of kernel: GEMMs,
attention, Inductor's generated kernels, ours, the rest, and the time in which some kernel ran
(kernels that overlap, as programmatic dependent launch lets them, count once there: busy time
below the sum is overlap), and the GPU's idle time between kernels that are queued back to back
(bench/kernel_intervals.py). Wall time well above busy time is a host-bound mode (launches and
Python); a kernel of ours that takes the place of Inductor's shows as the GPU time it removes
from one kind and adds to "ours".

Reads the workspace `autokernel verify` wrote (profile.json: the model, shape, dtype and seed;
kernels.json: the candidates, built for this machine). Prints one table per mode and writes
OUT/compiled_time.json with every variant's kernels by name.

    python3 bench/compiled_time.py --workspace /tmp/bridge-llama --modes eager,default,reduce-overhead --out $OUT
"""
import argparse
import json
import pathlib
import re
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
try:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from autokernel import loading
    from autokernel.decide import Bench
    from autokernel.runtime import apply as applying
    from autokernel.runtime import custom_ops, manifest
    from autokernel.timing import COMPILE_MODES, synchronize, wall_times_us
    from autokernel.verify import Settings
    from kernel_intervals import timeline
except ImportError as e:
    sys.exit(f"compiled_time: cannot import what it needs: {e}")

# Kinds of kernel, by name, in order (the first that matches); "ours" by where it was launched.
KINDS = [("attention", re.compile(r"flash|fmha|sdpa|attention", re.I)),
         ("gemm", re.compile(r"gemm|nvjet|cutlass|xmma|cublas|_mm_|sm90_", re.I)),
         ("inductor", re.compile(r"^triton_")),
         ("copy", re.compile(r"memcpy|memset|copy|fill", re.I))]
COLUMNS = ["ours", "gemm", "attention", "inductor", "copy", "other"]


def kind_of(name, ours):
    if name in ours:
        return "ours"
    return next((kind for kind, pattern in KINDS if pattern.search(name)), "other")


def kernel_times(prof, calls):
    """{kernel name: µs per forward pass} of every GPU kernel in the profile, the names of those
    launched from one of our ops, and the timeline per forward pass (kernel_intervals.timeline)."""
    per_name, ours = {}, set()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            per_name[event.name] = per_name.get(event.name, 0.0) + event.time_range.elapsed_us() / calls
        elif event.name.startswith(f"{custom_ops.NAMESPACE}::"):
            ours.update(k.name for k in event.kernels)
    return per_name, ours, timeline(prof, calls)


def measure(bench, mode, kernels, ours_names):
    """Wall time per forward (median of the settings' iterations of synchronized calls) and the GPU
    kernels' time per forward (a profile of as many calls) of the model in `mode` with `kernels`
    applied (None: apply's rewritten graph without any kernel of ours, what applying alone costs),
    set up as verify sets up each of its measurements (Bench.forward)."""
    device, warmup, iterations = bench.loaded.device, bench.settings.warmup, bench.settings.iterations
    forward, compile_s, _ = bench.forward(mode, kernels or (), traced_only=kernels is None)
    try:
        wall = statistics.median(wall_times_us(device, forward, warmup, iterations))
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(iterations):
                forward()
            synchronize(device)
    finally:
        applying.restore(bench.loaded.model)
    per_name, ours, gpu = kernel_times(prof, iterations)
    ours_names |= ours
    return {"mode": mode, "kernels": kernels, "wall_us": wall, "compile_s": compile_s, "busy_us": gpu["busy_us"],
            "idle_us": gpu["idle_us"], "overlaps": gpu["overlaps"], "idle_before_us": gpu["idle_before"],
            "per_kernel_us": per_name}


def our_kernel_names(bench, kernels):
    """The names of the GPU kernels our ops launch, from one eager call with `kernels` applied:
    under CUDA graphs a replay makes no host call of our ops to attribute its kernels by."""
    forward, _, _ = bench.forward("eager", kernels)
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            forward()
            synchronize(bench.loaded.device)
    finally:
        applying.restore(bench.loaded.model)
    return kernel_times(prof, 1)[1]


def by_kind(per_name, ours_names):
    """{kind: µs} of a {kernel name: µs}."""
    kinds = dict.fromkeys(COLUMNS, 0.0)
    for name, us in per_name.items():
        kinds[kind_of(name, ours_names)] += us
    return kinds


def print_mode(rows, ours_names, ops):
    head = (f"{'variant':34s} {'wall us':>8s} {'GPU us':>8s} {'busy us':>8s} {'busy':>5s} {'idle us':>8s} "
            f"{'overlaps':>8s} " + " ".join(f"{c:>9s}" for c in COLUMNS))
    print(f"\n{rows[0]['mode']}: per forward pass, the kernels' time summed (GPU us), the time some kernel ran "
          f"(busy us: less than the sum where kernels overlap), the GPU's idle time between kernels queued back "
          f"to back (idle us) and how many kernels started before the last had ended (overlaps), by kind (us)\n{head}")
    for row in rows:
        kinds, gpu = by_kind(row["per_kernel_us"], ours_names), sum(row["per_kernel_us"].values())
        label = ("apply's graph, no kernel" if row["kernels"] is None else "PyTorch alone" if not row["kernels"]
                 else "+ " + ", ".join(ops[k] for k in row["kernels"]))
        busy = row["busy_us"]
        print(f"{label[:34]:34s} {row['wall_us']:8.0f} {gpu:8.0f} {busy:8.0f} {busy / row['wall_us']:5.0%} "
              f"{row['idle_us']:8.0f} {row['overlaps']:8.1f} " + " ".join(f"{kinds[c]:9.0f}" for c in COLUMNS))
        idle = by_kind(row["idle_before_us"], ours_names)
        if any(us >= 0.5 for us in idle.values()):
            print(f"{'  idle before, by kind':34s} " + " ".join(f"{c} {idle[c]:.0f}" for c in COLUMNS if idle[c] >= 0.5))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workspace", required=True, help="a workspace `autokernel verify` wrote")
    parser.add_argument("--modes", default="eager,default,reduce-overhead")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--each", action="store_true", help="also each candidate alone")
    parser.add_argument("--traced", action="store_true", help="also apply's rewritten graph without our kernels")
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    workspace = pathlib.Path(args.workspace)
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m != "eager" and m not in COMPILE_MODES]
    if unknown:
        sys.exit(f"compiled_time: unknown mode {unknown[0]} (eager, {', '.join(COMPILE_MODES)})")
    try:
        model = json.loads((workspace / "profile.json").read_text())["model"]
        registered, _, not_loaded = manifest.load(workspace / "kernels.json")
    except (OSError, ValueError, manifest.ManifestError) as e:
        sys.exit(f"compiled_time: {workspace} is not a verified workspace: {e}")
    if not registered:
        sys.exit(f"compiled_time: no kernel of {workspace} loads here ({not_loaded or 'none is a candidate'})")
    loaded = loading.load(model["spec"], ",".join(map(str, model["input_shape"])), model["dtype"], "auto",
                          model.get("seed", 0))
    custom_ops.define()
    bench = Bench(loaded, Settings(warmup=5, iterations=args.iterations, budget_s=0),
                  progress=lambda line: print(f"compiled_time: {line}", file=sys.stderr, flush=True))
    names = [k.name for k in registered]
    variants = [[], names] + ([[n] for n in names] if args.each and len(names) > 1 else []) + \
        ([None] if args.traced else [])
    ours_names, results = set(), []
    for mode in modes:
        rows = []
        for kernels in variants:
            print(f"compiled_time: {mode}, {kernels}", file=sys.stderr, flush=True)
            try:
                if kernels and mode != "eager":
                    ours_names |= our_kernel_names(bench, kernels)
                rows.append(measure(bench, mode, kernels, ours_names))
            except Exception as e:  # a mode that fails to compile is a line, the others go on
                print(f"compiled_time: {mode} with {kernels}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
        results += rows
    for mode in modes:
        rows = [r for r in results if r["mode"] == mode]
        if rows:
            print_mode(rows, ours_names, {k.name: k.op for k in registered})
    document = {"model": model, "device": torch.cuda.get_device_name() if loaded.device.type == "cuda" else "cpu",
                "torch": torch.__version__, "ours": sorted(ours_names),
                "rows": [dict(r, by_kind=by_kind(r["per_kernel_us"], ours_names)) for r in results]}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compiled_time.json").write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
