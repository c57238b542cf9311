"""Which kernels to plug in, decided by timing the whole model as the user runs it.

A custom op is opaque to torch.compile's Inductor and can break its fusions, so a kernel that is
faster alone can make the compiled model slower; and in eager mode a kernel that saves less than
its call costs makes the model slower. So each kernel is judged by the model's own time in the
user's mode: in eager, the model with every candidate, then without each one in turn, from the set
as it stands (backward elimination: most of ours win there, each saving launches); under
torch.compile, each candidate alone against Inductor alone (forward selection: most of ours lose
to Inductor's fusions there). A kernel is out with the two times as the reason; if the kept set
together is not faster than PyTorch alone, none is plugged in.
"""
import faulthandler
import os
import secrets
import signal
import statistics
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Optional

import torch

from .loading import one_line
from .outputs import clone_output, first_difference
from .runtime import apply as applying
from .runtime.kernel_table import TABLE
from .timing import compile_state, forward_in_mode, reset_compiled, timed_call_us, wall_times_us

# A variant must be this much faster to count: the medians of two runs of the same model differ
# by about 1% on a busy machine.
MARGIN = 0.01
# A forward pass of a launch-bound model is host-bound (eager, and torch.compile without CUDA
# graphs), and its time moves with the GPU's clocks and the host as they follow the load: on the
# H100 the same eager model read 8.6 to 12.7 ms in different minutes, and under torch.compile one
# reading of PyTorch alone read 4511 µs where another, on the same H200 type, read 3435. So every
# variant is timed call by call alternating with PyTorch alone, and judged by its time against
# PyTorch's in the same calls. Under torch.compile both stay compiled: the model switches between
# them without recompiling (apply.aside).
PAIRED_ROUNDS = 3
FRESH_INPUT_BYTES = 1 << 30  # the most memory one measurement's fresh input sets take


class BudgetSpent(BaseException):
    """Raised in the measurement in flight when verify's budget ends. A compile of the model with
    our kernels in can run minutes past its estimate (hf-llama on the H200: past 100 s, estimated
    at 18 s), and a compile cannot be asked to stop any other way. A BaseException, so that no
    `except Exception` on the way (PyTorch's or ours) takes it for a failed compile."""


@dataclass
class Measurement:
    mode: str
    kernels: tuple
    us: Optional[float] = None
    compile_s: float = 0.0
    output: object = None
    note: str = ""
    sites: list = field(default_factory=list)
    calls: dict = field(default_factory=dict)
    fallbacks: dict = field(default_factory=dict)
    paired_base_us: Optional[float] = None  # PyTorch alone, in the calls alternating with these
    readings: list = field(default_factory=list)  # the median of each round of paired calls
    paired_readings: list = field(default_factory=list)  # PyTorch alone's, round by round
    spread_us: Optional[tuple] = None  # the fastest and slowest call timed
    load: Optional[float] = None  # the host's 1-minute load average when the timing ended

    def record(self):
        """What verify.json's measurement log keeps of it: a single reading in a host-bound mode
        can be far off, and the spread of its calls and the host's load say whether it was."""
        spread = self.spread_us or (None, None)
        return {"mode": self.mode, "kernels": list(self.kernels), "us": self.us, "fastest_call_us": spread[0],
                "slowest_call_us": spread[1], "paired_torch_us": self.paired_base_us,
                "rounds_us": self.readings, "paired_torch_rounds_us": self.paired_readings,
                "compile_s": self.compile_s, "load_1min": self.load, "note": self.note}

    def torch_us(self, base):
        """PyTorch alone as this variant is compared with it: its paired rounds, else `base`, the
        mode's one measurement of PyTorch alone."""
        return self.paired_base_us or base.us

    def relative(self, base):
        """This variant's time over PyTorch's."""
        reference = self.torch_us(base)
        return self.us / reference if self.us is not None and reference else None


class Bench:
    """Measures variants of one loaded model: PyTorch alone, or with some kernels applied."""

    def __init__(self, loaded, settings, progress, started=None):
        """`started`: when the budget began, as time.time() (by default now): verify's is when
        `autokernel verify` started, so building the kernels and loading the model count too."""
        self.loaded, self.settings, self.progress = loaded, settings, progress
        self.started = time.time() if started is None else started
        self.spent = False  # a measurement was stopped when the budget ended
        self.compile_s = {}  # mode -> seconds its last compilation took
        self.compile_s_ever = []  # every compilation's seconds, of any mode
        self.checked = []  # measurements whose outputs verify compares with eager's
        self.traced = None  # the model traced and matched once, for every kernel set
        self.log = []  # every measurement's record(), in order
        # The next fresh input set's seed: random, so that no run of verify can know another's
        # (the model's own inputs come from --seed).
        self._next_seed = secrets.randbits(62)

    def elapsed(self):
        return time.time() - self.started

    def fresh_inputs(self):
        """Input sets like the model's own for one measurement, from seeds none drew before, one
        per timed pair (warmup and the paired calls; unpaired calls take them in turn); fewer where
        they would pass FRESH_INPUT_BYTES, none where the loaded model cannot draw more. Every timed
        call then computes on data no earlier call saw, as in the judge's timed runs: a kernel that
        keeps answers for inputs it recognizes (within a measurement, across measurements, or
        across runs) gains nothing in the model's time either. The outputs verify compares are
        still those of the model's own inputs."""
        draw, inputs = getattr(self.loaded, "draw", None), self.loaded.inputs
        if draw is None:
            return []
        size = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
        count = max(2, min(self.settings.warmup + PAIRED_ROUNDS * self.settings.iterations,
                           FRESH_INPUT_BYTES // max(size, 1)))
        first, self._next_seed = self._next_seed, self._next_seed + count
        return [draw(first + i) for i in range(count)]

    def estimate(self, mode, kernels=()):
        """Seconds one more measurement in `mode` will take: its compilations (two with `kernels`:
        the model with them, and PyTorch alone again for the paired calls; one for PyTorch alone)
        and its runs. A mode
        compiled before: as long as its last compilation (Inductor's caches make a recompile of the
        same graph quick). A mode not compiled yet: as the slowest compilation so far (30 s before
        any), and max-autotune ten times that: it benchmarks every GEMM's choices (on the H100,
        llama's first max-autotune compile ran past 95 s where default's first took 13 s and its
        recompiles 2 s)."""
        if mode == "eager":
            return 2.0
        if mode in self.compile_s:
            compile_s = self.compile_s[mode]
        else:
            compile_s = max(self.compile_s_ever, default=30.0) * (10 if "max-autotune" in mode else 1)
        return (2 if kernels else 1) * compile_s + 2.0

    def compiled(self, mode, seconds):
        self.compile_s[mode] = seconds
        self.compile_s_ever.append(seconds)

    def affordable(self, mode, kernels=()):
        budget = self.settings.budget_s
        return not self.spent and (budget <= 0 or self.elapsed() + self.estimate(mode, kernels) <= budget)

    def unaffordable(self, mode, kernels=()):
        """Why a measurement in `mode` is not started: its estimate against what is left."""
        left = max(0.0, self.settings.budget_s - self.elapsed())
        return (f"skipped: estimated at ~{self.estimate(mode, kernels):.0f} s with {left:.0f} s left of the "
                f"budget ({self.settings.budget_s:.0f} s)")

    def measure(self, mode, kernels=(), traced_only=False):
        """The model in `mode` with `kernels` applied (none: PyTorch alone; traced_only: PyTorch's
        ops run from the traced graphs, what applying costs or saves without any kernel)."""
        m = Measurement(mode, tuple(kernels))
        label = f"{mode}, " + (f"{len(kernels)} kernels" if kernels else
                               "PyTorch from the traced graph" if traced_only else "PyTorch alone")
        budget = f" of {self.settings.budget_s:.0f}" if self.settings.budget_s > 0 else ""
        self.progress(f"[{self.elapsed():.0f}{budget} s] timing {label}"
                      + (f" (compiling first, ~{self.estimate(mode, kernels):.0f} s)" if mode != "eager" else ""))
        # A measurement that overruns its estimate threefold prints every thread's stack (and goes
        # on): a stuck compile or kernel then says where it is, not just that time ran out.
        faulthandler.dump_traceback_later(max(60.0, 3 * self.estimate(mode, kernels)), file=sys.stderr)
        began = time.perf_counter()
        try:
            try:
                self._arm()
                self._run(m, mode, kernels, traced_only)
            finally:
                self._disarm()
        except BudgetSpent:
            m.us, m.output, self.spent = None, None, True
            m.note = (f"stopped: the budget ({self.settings.budget_s:.0f} s) ended "
                      f"{time.perf_counter() - began:.0f} s into this measurement")
            self.progress(f"{label}: {m.note}")
        except Exception as e:  # a compile failure or graph break is a note in the table
            m.note = one_line(e)
            self.progress(f"{label}: failed: {m.note}")
            traceback.print_exception(e, file=sys.stderr)  # the whole of it in verify's log
        finally:
            self._disarm()  # (again: the alarm may have gone off inside the first one)
            faulthandler.cancel_dump_traceback_later()
            applying.restore(self.loaded.model)
            m.load = os.getloadavg()[0]
            self.log.append(m.record())
        return m

    def forward(self, mode, kernels=(), traced_only=False):
        """The model's forward in `mode` with `kernels` applied (or the traced graph alone), compiled
        (unless eager), the seconds its compilation took and apply's report (None: nothing
        applied). The caller restores the model (applying.restore) when done with it."""
        model, inputs = self.loaded.model, self.loaded.inputs
        applying.restore(model)
        reset_compiled(compiling=mode != "eager")
        report = None

        def apply():
            nonlocal report
            if kernels or traced_only:
                report = self.apply(kernels, traced_only)

        # Applied once torch.compile has wrapped the model as PyTorch has it, so that the paired
        # calls enter the model alike in both states (see forward_in_mode).
        forward, compile_s, _ = forward_in_mode(model, inputs, mode, before_first_call=apply,
                                                fresh=self.fresh_inputs())
        if mode != "eager":
            self.compiled(mode, compile_s)
            self.progress(f"  compiled in {compile_s:.0f} s; {compile_state()}")
        return forward, compile_s, report

    def _run(self, m, mode, kernels, traced_only):
        """Applies `kernels` (or the traced graph alone), compiles (unless eager) and times the
        model, into `m`."""
        forward, m.compile_s, report = self.forward(mode, kernels, traced_only)
        m.sites = report.sites if report else []
        if kernels or traced_only:
            self._paired(m, forward)
        else:
            times = wall_times_us(self.loaded.device, forward, self.settings.warmup, self.settings.iterations)
            m.us, m.spread_us = statistics.median(times), (min(times), max(times))
        TABLE.reset_counts()
        m.output = clone_output(forward(self.loaded.inputs))
        m.calls, m.fallbacks = dict(TABLE.calls), dict(TABLE.fallbacks)

    def apply(self, kernels, traced_only=False):
        """The model with `kernels` applied (traced_only: its traced graph, PyTorch's ops), from the
        one tracing every kernel set shares; its apply report."""
        model = self.loaded.model
        self.traced = self.traced or applying.trace(model, self.loaded.inputs)
        applying.apply(model, kernels=kernels, traced=self.traced, keep_traced=traced_only)
        return applying.report(model)

    def _arm(self):
        """A timer that raises BudgetSpent in this thread when the budget ends. Only the main
        thread takes a signal's handler: elsewhere the budget is kept between measurements only."""
        budget = self.settings.budget_s
        if budget <= 0 or threading.current_thread() is not threading.main_thread():
            return

        def stop(signum, frame):
            if self._armed:
                self._armed = False
                raise BudgetSpent()

        self._armed = True
        self._previous_handler = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, max(0.01, budget - self.elapsed()))

    def _disarm(self):
        self._armed = False
        previous, self._previous_handler = getattr(self, "_previous_handler", None), None
        if previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def _paired(self, m, forward):
        """Times the applied model and PyTorch alone call by call, alternating (a call of one, then
        a call of the other on the same fresh inputs, PAIRED_ROUNDS x iterations times each), into
        `m`: each one's median per round of `iterations` pairs, and the medians of all their calls.
        The host's speed drifts over seconds on a shared machine (the same compiled model read 3.6 to 5.1 ms a
        forward pass in one minute on the H200), and so does the GPU's clock; calls side by side
        see the same. Under torch.compile the first call without our kernels compiles PyTorch
        alone (a warmup call; from Inductor's caches where it was compiled before), and from then
        on the model switches between its two compiled graphs. PyTorch alone must run none of our
        kernels: if it did, the switch did not happen and the comparison would be of ours against
        ours."""
        model, device, warmup, iterations = self.loaded.model, self.loaded.device, self.settings.warmup, \
            self.settings.iterations
        ours, alone = [], []
        with applying.aside(model) as switch:
            for _ in range(warmup):
                given = forward.next_inputs()  # a pair's two calls take the same set
                switch(applied=True)
                forward(given)
                switch(applied=False)
                forward(given)
            TABLE.reset_counts()
            for call in range(1, PAIRED_ROUNDS * iterations + 1):
                given, returned = forward.next_inputs(), []
                switch(applied=True)
                ours.append(timed_call_us(device, lambda: returned.append(forward(given))))
                ours_output = clone_output(returned.pop())  # (a CUDA graph's next replay overwrites it)
                counted = dict(TABLE.calls)
                switch(applied=False)
                alone.append(timed_call_us(device, lambda: returned.append(forward(given))))
                if TABLE.calls != counted:
                    ran = sorted(name for name, count in TABLE.calls.items() if count != counted.get(name, 0))
                    raise RuntimeError(f"PyTorch alone ran our kernels ({', '.join(ran)}): the model did not "
                                       f"switch back from the compiled graph with them")
                # Every timed call is checked, so no call can tell whether it counts: a kernel right
                # on the calls verify compares and wrong (or idle) on the others is caught here.
                why = first_difference(returned.pop(), ours_output, self.loaded.dtype)
                if why:
                    raise RuntimeError(f"timed call {call} with the kernels did not compute PyTorch alone's output "
                                       f"on the same inputs: {why}")
            if device.type == "cuda":
                _check_switched(device, forward, switch, m.kernels)
        m.readings = [statistics.median(ours[i:i + iterations]) for i in range(0, len(ours), iterations)]
        m.paired_readings = [statistics.median(alone[i:i + iterations]) for i in range(0, len(alone), iterations)]
        m.us, m.paired_base_us = statistics.median(ours), statistics.median(alone)
        m.spread_us = (min(ours), max(ours))


def _gpu_kernels_of_a_call(device, forward):
    """The names of the GPU kernels one call runs, in order (a CUDA graph's replayed ones too)."""
    torch.cuda.synchronize(device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        forward()
        torch.cuda.synchronize(device)
    return [e.name for e in sorted(prof.events(), key=lambda e: e.time_range.start)
            if e.device_type == torch.autograd.DeviceType.CUDA]


def _check_switched(device, forward, switch, kernels):
    """A CUDA graph's replay calls no op of ours on the host, so the kernel table cannot tell
    whether PyTorch alone ran our kernels: the GPU can. The applied model and PyTorch alone must
    run different kernels, else the switch between their compiled graphs did not take and the
    comparison was of one graph against itself. With no kernel applied (the traced graph alone)
    both sides rightly run PyTorch's kernels, the same ones in eager."""
    if not kernels:
        return
    switch(applied=True)
    ours = _gpu_kernels_of_a_call(device, forward)
    switch(applied=False)
    alone = _gpu_kernels_of_a_call(device, forward)
    if ours == alone:
        raise RuntimeError(f"the applied model and PyTorch alone ran the same {len(ours)} GPU kernels: the model "
                           f"did not switch between its compiled graphs")


def decide(bench, mode, candidates, base):
    """(kernels in, {kernel: (in?, why)}, the measurement with the kernels in) for one mode."""
    why = {}
    if not candidates:
        return [], why, base
    if not bench.affordable(mode, candidates):
        for name in candidates:
            why[name] = (False, f"not timed in {mode}: {bench.unaffordable(mode, candidates)}")
        return [], why, base
    every = bench.measure(mode, candidates)
    served = {site.kernel for site in every.sites}
    for name in candidates:
        if name not in served:
            why[name] = (False, "no call of the model has the problem it was checked for")
    candidates = [name for name in candidates if name in served]
    bench.checked.append(every)  # every candidate at work: its outputs are compared with eager's
    if not candidates:
        return [], why, base
    if not bench.settings.decide:
        for name in candidates:
            why[name] = (True, "plugged in without deciding (--plug all)")
        return candidates, why, every
    if every.us is None or base.us is None:
        for name in candidates:
            why[name] = (False, f"not timed in {mode}: {every.note or base.note}")
        return [], why, every
    search = _eliminate if mode == "eager" else _select
    kept, current = search(bench, mode, candidates, every, base, why)
    if kept and (current.us is None or current.relative(base) >= 1 - MARGIN):
        for name in kept:
            why[name] = (False, f"together {_against(current, base)}: not faster than PyTorch")
        return [], why, base
    for name in candidates:
        why.setdefault(name, (True, f"{_against(current, base)} with it alone"))
    return kept, why, current


def earlier_winners_first(candidates, log):
    """The candidates in the order a compiled mode times them alone: first those that made the model
    faster alone, by more than MARGIN against PyTorch beside it, in a compiled mode measured before
    (`log`: Bench.log, every measurement's record), then the rest, each group in its own order.
    Timing one alone costs a compile; when the budget ends before every candidate has been timed,
    the likeliest winners have (on the H100 the compact LLaMA's budget ended under reduce-overhead
    before cross entropy, default's winner with fused_mlp, was timed)."""
    won = {r["kernels"][0] for r in log
           if r["mode"] != "eager" and len(r["kernels"]) == 1 and r["us"] and r["paired_torch_us"]
           and r["us"] < (1 - MARGIN) * r["paired_torch_us"]}
    return [n for n in candidates if n in won] + [n for n in candidates if n not in won]


def _eliminate(bench, mode, candidates, every, base, why):
    """Backward elimination: each candidate in turn leaves the set still kept, and stays out when
    the model is not slower without it. Each comparison is with the set as it stands, so one slow
    reading (of every candidate at work, say) cannot push every kernel out at once, and the set
    that remains is the last one measured: no further compile."""
    kept, current = list(candidates), every
    if len(candidates) < 2:
        return kept, current
    for name in candidates:
        if not bench.affordable(mode, kept):
            why[name] = (True, "kept untested: the budget ran out")
            continue
        rest = [k for k in kept if k != name]
        without = bench.measure(mode, rest) if rest else base
        if without.us is None:
            why[name] = (True, f"kept: without it, {without.note}")
        elif without.relative(base) > current.relative(base) * (1 + MARGIN):
            why[name] = (True, f"the model takes {_against(current, base)} with it, {_against(without, base)} without")
        else:
            why[name] = (False, f"the model takes {_against(without, base)} without it, {_against(current, base)} with it")
            kept, current = rest, without
    return kept, current


def _select(bench, mode, candidates, every, base, why):
    """Forward selection, for the compiled modes: there Inductor's own fused kernels are what each
    of ours replaces, and most of ours do not beat them (on the H200 llama's eight read 3436 µs
    against Inductor's 3435 once elimination had run). Each candidate is timed alone against
    Inductor alone, and those that make the model faster by more than MARGIN are kept: together
    if the model with all of them is the fastest set measured, else the fastest one alone; each
    set measured by its time over PyTorch alone's in the same rounds."""
    winners = []
    for name in candidates:
        if not bench.affordable(mode, [name]):
            why[name] = (False, "not timed alone: the budget ran out")
            continue
        alone = every if len(candidates) == 1 else bench.measure(mode, [name])
        if alone.us is not None and alone.relative(base) < 1 - MARGIN:
            winners.append((alone, name))
            why[name] = (True, f"alone, the model takes {_against(alone, base)}")
        else:
            why[name] = (False, f"alone, the model takes {_against(alone, base) if alone.us else alone.note}: "
                                "not faster than PyTorch")
    if not winners:
        return [], base
    names = [name for _, name in winners]
    sets = [(m, [name]) for m, name in winners] + [(every, list(candidates))]
    if len(winners) > 1 and len(winners) < len(candidates) and bench.affordable(mode, names):
        sets.append((bench.measure(mode, names), names))
    # Each set against PyTorch alone in its own rounds: in a host-bound mode the model's time
    # drifts between measurements (on the H100, fused_mlp alone read 6861 µs against 7507 for
    # PyTorch beside it, every candidate 5929 against 6040 minutes later), so two sets' own times
    # do not compare.
    timed = [(m, kernels) for m, kernels in sets if m.us is not None]
    fastest, kept = min(timed, key=lambda pair: pair[0].relative(base))
    for name in candidates:
        if name in names and name not in kept:
            why[name] = (False, f"faster alone, but the model takes {_against(fastest, base)} with "
                                f"{' + '.join(kept)} instead")
        elif name in kept and len(kept) > 1:
            why[name] = (True, f"{why[name][1]}; with all {len(kept)} kept, {_against(fastest, base)}")
    return kept, fastest


def _against(m, base):
    """'9223 µs (PyTorch 12671 µs)': a variant's time and PyTorch's in the same rounds (eager) or
    its one measurement (compiled modes)."""
    if m.us is None:
        return "no time"
    return f"{m.us:.0f} µs (PyTorch {m.torch_us(base):.0f} µs)"
