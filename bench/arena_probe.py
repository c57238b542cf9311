#!/usr/bin/env python3
"""Where does a kernel lose time in the judge's arena? The same compiled module, R launches back to
back over R call slots (L2 flushed before each batch, outputs poisoned like the judge's), timed by
CUDA events, with the slots laid out four ways:

    separate   R sets of tensors of their own (torch allocations), in this process
    arena      one allocation carved exactly like the judge's arena (4 KiB guards, 256-byte
               alignment, inputs then outputs, slot after slot), in this process
    arena ipc  the same allocation imported by a child process through CUDA IPC (the launcher's case)
    2M ipc     as arena ipc, every tensor starting on a 2 MiB boundary

    python3 bench/arena_probe.py --ak build-gpu/autokernel --ops rmsnorm,cross_entropy --slots 7

Per layout: the median per launch, and the slowest slot's median (events between launches).
"""
import argparse
import json
import pathlib
import statistics
import sys

import torch
import torch.multiprocessing as mp

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from autokernel.runtime.abi import KernelModule  # noqa: E402
from timing_crosscheck import TORCH, run_json  # noqa: E402  (bench/, this script's directory)

GUARD, ALIGN, TWO_MIB = 4096, 256, 2 << 20


def nbytes(spec):
    n = 1
    for d in spec["shape"]:
        n *= d
    return n * torch.empty((), dtype=TORCH[spec["dtype"]]).element_size()


def layout(signature, slots, align):
    """Offsets of every tensor of every slot: the judge's first-fit allocator on an empty arena."""
    offsets, at = [], 0
    for _ in range(slots):
        slot = []
        for spec in signature["inputs"] + signature["outputs"]:
            if align == TWO_MIB:
                start = (at + GUARD + TWO_MIB - 1) // TWO_MIB * TWO_MIB
                slot.append(start)
                at = start + nbytes(spec) + GUARD
            else:
                slot.append(at + GUARD)
                at += (nbytes(spec) + 2 * GUARD + ALIGN - 1) // ALIGN * ALIGN
        offsets.append(slot)
    return offsets, at + TWO_MIB


def carve(arena, signature, offsets):
    sets = []
    for slot in offsets:
        tensors = []
        for spec, off in zip(signature["inputs"] + signature["outputs"], slot):
            dtype = TORCH[spec["dtype"]]
            tensors.append(arena[off:off + nbytes(spec)].view(dtype).view(spec["shape"]))
        n = len(signature["inputs"])
        sets.append((tensors[:n], tensors[n:]))
    return sets


def fill(sets, generator):
    for inputs, _ in sets:
        for i, t in enumerate(inputs):
            if t.dtype == torch.int64:
                t.copy_(torch.randint(0, inputs[0].shape[-1], t.shape, device="cuda", generator=generator))
            else:
                t.copy_(torch.randn(t.shape, device="cuda", dtype=t.dtype, generator=generator))


def time_batches(module, sets, scalars, batches=20):
    lines = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, device="cuda",
                       dtype=torch.int32)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(len(sets) + 1)]
    per_launch, per_slot = [], [[] for _ in sets]
    for b in range(batches + 2):
        for _, outputs in sets:
            for t in outputs:
                t.view(torch.uint8).fill_(0xFF)
        lines.sum()
        torch.cuda._sleep(2_000_000)
        events[0].record()
        for i, (inputs, outputs) in enumerate(sets):
            module.launch(inputs, outputs, scalars)
            events[i + 1].record()
        events[-1].synchronize()
        if b < 2:
            continue
        per_launch.append(events[0].elapsed_time(events[-1]) * 1000 / len(sets))
        for i in range(len(sets)):
            per_slot[i].append(events[i].elapsed_time(events[i + 1]) * 1000)
    slot_medians = [statistics.median(s) for s in per_slot]
    return {"per_launch_us": statistics.median(per_launch), "slowest_slot_us": max(slot_medians),
            "fastest_slot_us": min(slot_medians), "slot_us": slot_medians}


def child(arena, signature, offsets, module_path, op, scalars, queue):
    torch.cuda.init()
    sets = carve(arena, signature, offsets)
    result = time_batches(KernelModule(module_path, op), sets, scalars)
    del sets, arena  # the parent's memory: let go of it before this process ends
    torch.cuda.synchronize()
    queue.put(result)


def in_child(arena, signature, offsets, module_path, op, scalars):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=child, args=(arena, signature, offsets, module_path, op, scalars, queue))
    p.start()
    result = queue.get()
    p.join()
    return result


def probe(ak, op, slots):
    kernel = ROOT / "kernels" / "cuda" / f"{op}.cu"
    judged = run_json([ak, "bench", str(kernel), "--op", op, "--json"])
    signature = run_json([ak, "ops", "--signature", op, "--shape", judged["problem"], "--dtype", judged["dtype"],
                          "--json"])
    slots = slots or judged["timing"]["slots"]
    scalars = signature.get("scalars", [])
    module = KernelModule(judged["module"], op)
    generator = torch.Generator(device="cuda").manual_seed(0)
    rows = {"op": op, "slots": slots, "judge_us": judged["timing"]["median_us"],
            "launcher_us": judged["timing"].get("launcher_batch_us", -1) / judged["timing"]["slots"]}
    separate = []
    for _ in range(slots):
        inputs = [torch.empty(s["shape"], device="cuda", dtype=TORCH[s["dtype"]]) for s in signature["inputs"]]
        outputs = [torch.empty(s["shape"], device="cuda", dtype=TORCH[s["dtype"]]) for s in signature["outputs"]]
        separate.append((inputs, outputs))
    fill(separate, generator)
    rows["separate"] = time_batches(module, separate, scalars)
    del separate
    for name, align in (("arena", ALIGN), ("2M", TWO_MIB)):
        offsets, size = layout(signature, slots, align)
        arena = torch.empty(size, device="cuda", dtype=torch.uint8)
        fill(carve(arena, signature, offsets), generator)
        torch.cuda.synchronize()
        if name == "arena":
            rows["arena"] = time_batches(module, carve(arena, signature, offsets), scalars)
        rows[f"{name} ipc"] = in_child(arena, signature, offsets, judged["module"], op, scalars)
        del arena
        torch.cuda.empty_cache()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ak", required=True)
    parser.add_argument("--ops", default="rmsnorm,cross_entropy")
    parser.add_argument("--slots", type=int, default=0, help="slots per batch (default: the judge's own)")
    parser.add_argument("--json")
    args = parser.parse_args()
    results = []
    names = ("separate", "arena", "arena ipc", "2M ipc")
    print(f"{'op':<17}{'R':>3}{'judge':>8}{'launcher':>9}" + "".join(f"{n:>11}{'worst':>7}" for n in names))
    for op in args.ops.split(","):
        r = probe(args.ak, op, args.slots)
        results.append(r)
        print(f"{op:<17}{r['slots']:>3}{r['judge_us']:>8.1f}{r['launcher_us']:>9.1f}" +
              "".join(f"{r[n]['per_launch_us']:>11.1f}{r[n]['slowest_slot_us']:>7.0f}" for n in names))
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
