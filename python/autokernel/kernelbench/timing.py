"""Timing by the judge's own clock, one method for every model (the reference eager, under
torch.compile, and the solution), each in its own solution process.

A round: the judge puts fresh inputs in `count` slots and poisons their outputs, flushes the
last-level cache, starts its clock, tells the process to run the model on the slots one after
another, and stops the clock at the answer (sent after the process has synchronized its stream).
Then, outside the clock, it checks that every output of the round was written, that no input
changed, and compares one slot, picked after the answer, with the reference in full. So no call
can reuse a result, a call that left work unfinished shows as unwritten, and a round answered
early is wrong. A sample is the round's time divided by `count`. The batch is one size for every
model of a problem (the judge sizes it from its own run of the reference, so that a round lasts
~10 ms where memory allows), which keeps the channel's round trip small beside the work and the
same for every model. Rounds run until the robust noise (1.4826 MAD / median) is under
the target after the minimum, or the time or round cap is reached; the median is reported.
"""
import glob
import pathlib
import statistics
import time
from dataclasses import dataclass

import torch

from .verdict import from_answer


@dataclass
class Settings:
    max_time_s: float = 5.0
    min_rounds: int = 10
    max_rounds: int = 200
    noise_target: float = 0.01
    batch_target_s: float = 0.01
    call_timeout_s: float = 60.0


def last_level_cache_bytes():
    sizes = []
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        text = pathlib.Path(path).read_text().strip()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        sizes.append(int(text.rstrip("KM")) * scale)
    return max(sizes, default=32 << 20)


class Flusher:
    """Evicts the last-level cache by reading a buffer twice its size (a read, so no dirty lines
    are written back inside the next timed call)."""

    def __init__(self, device):
        self.device = device
        size = 2 * (torch.cuda.get_device_properties(device).L2_cache_size if device.type == "cuda"
                    else last_level_cache_bytes())
        self.buffer = torch.ones(size // 4, dtype=torch.float32, device=device)

    def __call__(self):
        float(self.buffer.sum())  # .item(): waits for it


def summary(samples):
    median = statistics.median(samples)
    spread = statistics.median(abs(s - median) for s in samples)
    return {"median_us": median * 1e6, "noise": 1.4826 * spread / median if median > 0 else 0.0,
            "min_us": min(samples) * 1e6, "samples": len(samples)}


def measure(solver, rounds, settings, flush, phase):
    """Per-call statistics of the model in `solver`; raises Rejected when a round fails its checks.
    `rounds` has the batch size and prepares a round (prepare(count) -> state) and checks it
    (verify(count, state, phase))."""

    def one_round(count):
        state = rounds.prepare(count)
        flush()
        timeout = settings.call_timeout_s * count
        start = time.perf_counter()
        answer = solver.command("batch", 0, count, timeout=timeout)
        elapsed = time.perf_counter() - start
        if answer.kind != "ok":
            raise from_answer(answer, solver, phase, timeout)
        rounds.verify(count, state, phase)
        return elapsed

    count = rounds.batch
    for _ in range(2):
        one_round(count)  # warm-up: caches, allocator, lazy loading
    samples, started = [], time.monotonic()
    while True:
        samples.append(one_round(count) / count)
        n, spent = len(samples), time.monotonic() - started
        if n >= settings.max_rounds or (n >= settings.min_rounds and (
                summary(samples)["noise"] <= settings.noise_target or spent >= settings.max_time_s)):
            break
    return dict(summary(samples), batch=count, rounds=n)
