#!/usr/bin/env python3
"""The judge's time per launch beside two independent measurements of the same compiled module,
in this process through the kernel ABI: (a) one launch per sample, the L2 flushed before it and
the stream kept busy while it is enqueued, events around the launch (the engine's method before
the judge); (b) the judge's shape of work: R launches back to back on R distinct buffer sets,
flushed before, events around the batch, divided by R. Where the judge's figure exceeds (b), the
difference is the judge's own cost that its calibration missed; where (b) exceeds (a), it is the
cost of cold buffers (rotation) that one reused buffer hides.

    python3 bench/timing_crosscheck.py --ak build-gpu/autokernel --ops rmsnorm,reduce [--slots R] [--json out.json]

"launcher ev/R" is the launcher's own CUDA events around a batch's launches, per launch: the
device time of the launches without the switches between the judge's and the launcher's work.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
try:
    from autokernel.runtime.abi import KernelModule
except ImportError:
    from autokernel.abi import KernelModule

TORCH = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "i64": torch.int64}


def run_json(args):
    out = subprocess.run(args, capture_output=True, text=True)
    start = out.stdout.find("{")
    if start < 0:
        raise RuntimeError(f"{' '.join(args)}: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout[start:])


def make_tensors(specs, generator):
    tensors = []
    for s in specs:
        dtype = TORCH[s["dtype"]]
        if dtype == torch.int64:
            # targets of cross_entropy: below the vocabulary (the previous tensor's last dim)
            high = tensors[0].shape[-1] if tensors else 2
            tensors.append(torch.randint(0, high, s["shape"], device="cuda", generator=generator))
        else:
            tensors.append(torch.randn(s["shape"], device="cuda", dtype=dtype, generator=generator))
    return tensors


class Flush:
    def __init__(self):
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.lines = torch.ones(2 * l2 // 4, device="cuda", dtype=torch.int32)

    def __call__(self):
        self.lines.sum()  # a read: no dirty lines to write back inside the timed work


def per_launch_us(module, sets, scalars, flush, batch, samples=30):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(samples + 2):
        flush()
        torch.cuda._sleep(2_000_000)  # keeps the stream busy while the launches are enqueued
        start.record()
        for inputs, outputs in sets[:batch]:
            module.launch(inputs, outputs, scalars)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000 / batch)
    return statistics.median(times[2:])


def crosscheck(ak, op, shape, dtype):
    kernel = ROOT / "kernels" / "cuda" / f"{op}.cu"
    bench = [ak, "bench", str(kernel), "--op", op, "--json"] + (["--shape", shape] if shape else [])
    judged = run_json(bench + (["--dtype", dtype] if dtype else []))
    if judged["status"] != "PASS":
        return {"op": op, "status": judged["status"], "reason": judged.get("reason", "")}
    signature = run_json([ak, "ops", "--signature", op, "--shape", judged["problem"], "--dtype", judged["dtype"],
                          "--json"])
    module = KernelModule(judged["module"], op)
    slots = judged["timing"]["slots"]
    generator = torch.Generator(device="cuda").manual_seed(0)
    sets = []
    for _ in range(slots):
        inputs = make_tensors(signature["inputs"], generator)
        outputs = [torch.empty(s["shape"], device="cuda", dtype=TORCH[s["dtype"]]) for s in signature["outputs"]]
        sets.append((inputs, outputs))
    scalars = signature.get("scalars", [])
    flush = Flush()
    one = per_launch_us(module, sets, scalars, flush, 1)
    rotating = per_launch_us(module, sets, scalars, flush, slots)
    return {"op": op, "problem": judged["problem"], "dtype": judged["dtype"], "status": "PASS", "slots": slots,
            "judge_us": judged["timing"]["median_us"], "judge_noise": judged["timing"]["noise"],
            "roofline": judged["roofline"], "samples": judged["timing"]["samples"],
            "timing_s": judged["timing"]["seconds"], "total_s": judged["total_seconds"],
            "batch_overhead_us": judged["timing"]["batch_overhead_us"],
            "batch_run_us": judged["timing"].get("batch_run_us", 0),
            "batch_confirm_us": judged["timing"].get("batch_confirm_us", 0),
            "confirm_reads": judged["timing"].get("confirm_reads", 0), "events_one_us": one,
            "launcher_batch_us": judged["timing"].get("launcher_batch_us", -1),
            "refill_us": judged["timing"].get("refill_us", 0), "refill_before_us": judged["timing"].get("refill_before_us", 0),
            "flush_us": judged["timing"].get("flush_us", 0), "flush_before_us": judged["timing"].get("flush_before_us", 0),
            "events_batch_us": rotating}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ak", required=True)
    parser.add_argument("--ops", default="rmsnorm,reduce")
    parser.add_argument("--shape", default="")
    parser.add_argument("--dtype", default="")
    parser.add_argument("--slots", type=int, default=0,
                        help="the judge's timed slots (AUTOKERNEL_TIMING_SLOTS) in place of its own rule")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.slots:
        os.environ["AUTOKERNEL_TIMING_SLOTS"] = str(args.slots)
    rows = []
    print(f"{'op':<17}{'problem':<24}{'judge us':>10}{'roof%':>7}{'noise%':>8}{'events 1':>10}{'events R':>10}{'R':>4}"
          f"{'empty us':>10}{'run us':>9}{'confirm':>9}{'reads':>6}{'launcher ev/R':>14}"
          f"{'refill us (before)':>20}{'flush us (before)':>19}")
    for op in args.ops.split(","):
        r = crosscheck(args.ak, op, args.shape, args.dtype)
        rows.append(r)
        if r["status"] != "PASS":
            print(f"{op:<17}{r['status']} {r['reason'][:120]}")
            continue
        print(f"{op:<17}{r['problem']:<24}{r['judge_us']:>10.1f}{100 * r['roofline']:>7.1f}{100 * r['judge_noise']:>8.1f}"
              f"{r['events_one_us']:>10.1f}{r['events_batch_us']:>10.1f}{r['slots']:>4}{r['batch_overhead_us']:>10.1f}"
              f"{r['batch_run_us']:>9.1f}{r['batch_confirm_us']:>9.1f}{r['confirm_reads']:>6}"
              f"{r['launcher_batch_us'] / r['slots']:>14.1f}"
              f"{r['refill_us']:>11.0f} ({r['refill_before_us']:>5.0f}){r['flush_us']:>10.0f} ({r['flush_before_us']:>5.0f})")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
