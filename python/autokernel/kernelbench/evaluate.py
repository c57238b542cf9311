"""One evaluation: a solution against a problem, by the judge, into one JSON record.

The solution's process is spawned first and must pass every correctness trial; then it is timed.
Only a solution that passed is compared with the baselines: the reference Model timed the same
way in processes of its own, as written (eager) and under torch.compile. Every failure is a status
with a one-line reason and the phase it happened in; the judge's temporary files and shared
buffers are removed whatever happens.
"""
import hashlib
import os
import pathlib
import secrets
import time
from dataclasses import dataclass, field

import torch

from . import buffers, checks, problems
from .judge import Judge
from .timing import Flusher, Settings, measure
from .verdict import Rejected

CHECKS = [
    "KernelBench: torch.allclose with its per-precision tolerance, on random inputs each trial",
    "relative L2 error against the reference (zeros never pass)",
    "every output element written (outputs poisoned before each call)",
    "inputs unchanged",
    "fresh inputs every call, through the same buffers (a remembered result fails)",
    "a gated call: no work outside the current stream, none left running after the call",
    "no replaced timer or torch function; nothing but acknowledgements on the channel",
    "timed calls: every output written, inputs unchanged, one call per round checked in full",
]


@dataclass
class Options:
    device: str = "auto"
    precision: str = "fp32"
    trials: int = 5
    baselines: tuple = ("eager", "compile")
    timing: bool = True
    settings: Settings = field(default_factory=Settings)
    build_timeout_s: float = 600.0
    late_ms: float = 50.0
    max_batch: int = 64
    memory_fraction: float = 0.25
    extensions_dir: str = ""
    shrink: int = 1
    guard: bool = True  # off only in tests: the judge's own verdict without the solver's detector
    criterion: str = "kernelbench"  # or "model": the relative error alone (judge.CRITERIA)
    solution_mode: str = "eager"  # or a torch.compile mode: the solution timed compiled in it
    compile_mode: str = ""  # the compile baseline's torch.compile mode ("": torch.compile's default)


class Rounds:
    """timing.measure's rounds on the judge's slots (see timing.py)."""

    def __init__(self, judge):
        self.judge = judge
        self.batch = judge.capacity

    def prepare(self, count):
        judge, check = self.judge, secrets.randbelow(count)
        state = {"check": check, "prints": []}
        for slot in range(count):
            inputs = judge.fresh_inputs()
            if slot == check:
                state["references"] = judge.reference(inputs)
            judge.load_slot(slot, inputs)
            state["prints"].append(self._prints(slot))
        judge.synchronize()
        return state

    def _prints(self, slot):
        return [buffers.fingerprint(t, self.judge.secret) for t in self.judge.slots[slot][0]
                if isinstance(t, torch.Tensor)]

    def verify(self, count, state, phase):
        judge = self.judge
        for slot in range(count):
            for index, out in enumerate(judge.slots[slot][1]):
                unwritten = checks.count_poisoned(out) if out.is_floating_point() else 0
                if unwritten:
                    raise Rejected("INCORRECT", f"timed call {slot + 1} of {count}: output {index}: {unwritten} "
                                                f"of {out.numel()} elements never written", phase)
            if self._prints(slot) != state["prints"][slot]:
                raise Rejected("INCORRECT", f"timed call {slot + 1} of {count} modified an input", phase)
        check = state["check"]
        for index, (out, ref) in enumerate(zip(judge.slots[check][1], state["references"])):
            result = checks.compare(out, ref, judge.precision, f"output {index}", judge.elementwise)
            if not result.ok:
                raise Rejected("INCORRECT", f"timed call {check + 1} of {count}: {result.reason}", phase)


def _cache_root():
    cache = os.environ.get("AUTOKERNEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "autokernel")
    return os.path.join(cache, "kernelbench")


def default_extensions_dir(solution):
    """load_inline's build directory, per solution source: an unchanged solution builds once, and two
    solutions never share (or clobber) a module of the same name."""
    digest = hashlib.sha256(pathlib.Path(solution).read_bytes()).hexdigest()[:24]
    return os.path.join(_cache_root(), "extensions", digest)


def reference_caches_dir():
    """Inductor's and Triton's caches for the references' processes, shared across problems (a
    compiled reference stays warm) and out of every solution's reach: a solution that could write
    them could slow the baseline it is compared with."""
    return os.path.join(_cache_root(), "reference-caches")


def evaluate(problem, solution, options, progress=lambda line: None):
    started = time.monotonic()
    solution = pathlib.Path(solution).resolve()
    if not solution.is_file():
        raise problems.ProblemError(f"solution file not found: {solution}")
    judge = Judge(problem, options.device, options.precision, options.max_batch, options.memory_fraction,
                  options.shrink, options.settings.batch_target_s, options.criterion)
    seconds = {"setup": time.monotonic() - started}
    record = _base_record(judge, solution, options)
    try:
        _judge_solution(judge, solution, options, record, seconds, progress)
        if record["status"] == "PASS" and options.timing:
            flush = Flusher(judge.device)
            phase_start = time.monotonic()
            for mode in options.baselines:
                progress(f"timing the reference ({mode})")
                record["timing"][mode] = _baseline(judge, mode, options, flush)
            seconds["baselines"] = time.monotonic() - phase_start
            _speedups(record)
    finally:
        judge.close()
    seconds["total"] = time.monotonic() - started
    seconds["without_build"] = seconds["total"] - seconds.get("build", 0.0)
    record["seconds"] = seconds
    return record


def _base_record(judge, solution, options):
    problem = judge.loaded.problem
    kb_tol, rel_tol = checks.tolerances(judge.precision)
    return {
        "problem": {"key": problem.key, "path": str(problem.path), "level": problem.level,
                    "number": problem.number, "name": problem.name},
        "solution": str(solution),
        "device": {"type": judge.device.type,
                   "name": torch.cuda.get_device_name(judge.device) if judge.device.type == "cuda" else "cpu"},
        "precision": options.precision, "torch": torch.__version__,
        "status": "PASS", "reason": "", "phase": "",
        "solution_mode": options.solution_mode, "compile_mode": options.compile_mode or "default",
        "correctness": {"trials": options.trials, "criterion": judge.criterion, "relative_tolerance": rel_tol,
                        **({"kernelbench_tolerance": kb_tol} if judge.elementwise else {}),
                        "checks": CHECKS if judge.elementwise else CHECKS[1:]},
        "timing": {"method": "judge's wall clock around rounds of calls on fresh inputs, last-level cache "
                             "flushed before each round; median per call, noise 1.4826 MAD / median"},
        "speedup": {},
    }


def _judge_solution(judge, solution, options, record, seconds, progress):
    solver = None
    phase_start = time.monotonic()
    try:
        progress(f"building {solution.name}")
        mode, compile_options = _mode(options.solution_mode)
        solver, seconds["build"] = judge.spawn(solution, "ModelNew", mode, options.guard, options.build_timeout_s,
                                               "solution", options.extensions_dir or default_extensions_dir(solution),
                                               compile_options=compile_options)
        phase_start = time.monotonic()
        progress(f"{options.trials} correctness trials")
        worst = judge.trials(solver, options.trials, options.build_timeout_s, options.settings.call_timeout_s,
                             options.late_ms)
        record["correctness"].update(passed=options.trials, max_abs_diff=worst["max_abs_diff"],
                                     relative_error=worst["relative_error"], notes=sorted(set(worst["notes"])))
        judge.release_first_inputs()
        seconds["correctness"] = time.monotonic() - phase_start
        if options.timing:
            progress("timing the solution")
            phase_start = time.monotonic()
            rounds = Rounds(judge)
            record["timing"]["solution"] = measure(solver, rounds, options.settings, Flusher(judge.device), "timing")
            seconds["timing"] = time.monotonic() - phase_start
        stray = solver.finish()
        solver = None
        if stray:
            raise Rejected("INCORRECT", f"forged message on the judge's channel: {stray!r}", "end")
    except Rejected as rejected:
        record.update(status=rejected.status, reason=rejected.reason, phase=rejected.phase)
    except torch.cuda.OutOfMemoryError:
        record.update(status="CRASH", phase="judge", reason="the judge could not allocate its checks: the "
                                                             "solution process holds the device's memory")
    finally:
        if solver is not None:
            solver.kill()
            solver.close()


def _baseline(judge, mode, options, flush):
    solver = None
    try:
        solver_mode, compile_options = _mode(mode if mode == "eager" else options.compile_mode or "default")
        solver, _ = judge.spawn(judge.loaded.problem.path, "Model", solver_mode, False, options.build_timeout_s,
                                f"reference-{mode}", caches=reference_caches_dir(), compile_options=compile_options)
        settings = options.settings
        judge.trials(solver, 1, options.build_timeout_s, settings.call_timeout_s, options.late_ms, gate=False)
        return measure(solver, Rounds(judge), settings, flush, f"timing the reference ({mode})")
    except Rejected as rejected:
        return {"error": f"{rejected.status} in {rejected.phase}: {rejected.reason}"}
    finally:
        if solver is not None:
            solver.finish()


def _mode(name):
    """The solver's mode and torch.compile's options for a mode's name (eager, or a compile mode)."""
    if name == "eager":
        return "eager", {}
    return "compile", ({} if name == "default" else {"mode": name})


def _speedups(record):
    timing = record["timing"]
    ours = timing.get("solution", {}).get("median_us")
    for mode in ("eager", "compile"):
        base = timing.get(mode, {}).get("median_us")
        if ours and base:
            record["speedup"][mode] = base / ours
