"""The judge: the process whose word is the verdict. It holds the reference model and its outputs,
makes every input (from seeds nobody else knows), owns the shared buffers, keeps the clock and
checks the outputs itself. The solution runs in a process of its own (solver.py) that sees only
the shared buffers; this process is made non-dumpable, so another process of the same user
cannot read its memory (the references, the seeds, the key of the input check) or its files.

This file is the judge's state and its two procedures on a solution process: the correctness
trials (KernelBench's random-input trials with its tolerance, plus ours: fresh inputs through the
same buffers, poisoned outputs, unchanged inputs, relative error, a gated call for work outside
the current stream or left running) and the rounds that timing.measure runs.
"""
import math
import os
import secrets
import shutil
import tempfile
import time

import torch

from . import buffers, checks, problems
from .channel import SolverProcess
from .isolation import make_undumpable, sole_gpu
from .verdict import Probe, Rejected, from_answer, probe_reason

REHEARSAL_SHARE = 0.05  # of the free memory: above it, the judge keeps no second input set cached
INIT_SEED = 42  # KernelBench's seed for the weights: a solution must rebuild the same ones
# How an output is compared with its reference: KernelBench's allclose and our relative error, or
# (a whole model's outputs, for verify) the relative error alone (checks.compare).
CRITERIA = ("kernelbench", "model")
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pick_device(name):
    """The device, with its index (tensors report cuda:0, never a bare cuda)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise problems.ProblemError("--device cuda, but PyTorch sees no CUDA GPU")
    device = torch.device(name)
    return torch.device("cuda", torch.cuda.current_device()) if device.type == "cuda" and device.index is None \
        else device


class Judge:
    def __init__(self, problem, device="auto", precision="fp32", max_batch=64, memory_fraction=0.25, shrink=1,
                 batch_target_s=0.01, criterion="kernelbench"):
        make_undumpable()
        if criterion not in CRITERIA:
            raise problems.ProblemError(f"unknown criterion {criterion} ({' or '.join(CRITERIA)})")
        self.criterion, self.elementwise = criterion, criterion == "kernelbench"
        self.shrink = shrink
        self.loaded = problems.load(problem, shrink)
        self.device = pick_device(device)
        if precision not in problems.DTYPES:
            raise problems.ProblemError(f"unknown precision {precision} (fp32, fp16 or bf16)")
        self.precision_name, self.precision = precision, problems.DTYPES[precision]
        self.secret = buffers.Key(self.device)  # the input check's weights: never leave this process
        self.public_seed = secrets.randbits(62)
        self.public = buffers.Key(self.device, seed=self.public_seed)  # the solver's probes use these
        try:
            self.model = problems.build(self.loaded.Model, self.loaded, INIT_SEED, self.device, self.precision)
        except Exception as e:
            raise problems.ProblemError(f"{self.loaded.problem.key}: Model(*get_init_inputs()) failed: "
                                        f"{type(e).__name__}: {problems.first_line(e)}") from None
        self.first_inputs = self.fresh_inputs()
        self.first_references = self.reference(self.first_inputs)
        self.reference_seconds = self._time_reference()
        self.workdir = tempfile.mkdtemp(prefix="autokernel-kb-")  # logs, the solvers' directories, spills
        try:
            wanted = math.ceil(batch_target_s / max(self.reference_seconds, 1e-7))
            self._allocate(max(1, min(max_batch, wanted)), memory_fraction)
            if self.slot_bytes < REHEARSAL_SHARE * self.free_bytes:
                self._rehearse()
        except BaseException:
            self.close()
            raise

    # --- inputs, references and the shared slots ---------------------------------------------

    def fresh_inputs(self):
        return problems.make_inputs(self.loaded, secrets.randbits(63), self.device, self.precision)

    def reference(self, inputs):
        try:
            with torch.no_grad():
                result = self.model(*inputs)
        except Exception as e:
            raise problems.ProblemError(f"{self.loaded.problem.key}: the reference raises "
                                        f"{type(e).__name__}: {problems.first_line(e)}") from None
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        if not results or not all(isinstance(r, torch.Tensor) for r in results):
            raise problems.ProblemError(f"{self.loaded.problem.key}: Model returns no tensor(s)")
        return [r.detach().contiguous() for r in results]

    def _time_reference(self):
        """The reference's time per call, measured here (the fastest of up to three runs, within a
        second): it sizes the timing rounds of every model, so that a round lasts about
        `batch_target_s` where memory allows."""
        times, spent = [], 0.0
        while len(times) < 3 and spent < 1.0:
            self.synchronize()
            start = time.perf_counter()
            self.reference(self.first_inputs)
            self.synchronize()
            times.append(time.perf_counter() - start)
            spent += times[-1]
        return min(times)

    def _rehearse(self):
        """Everything the judge allocates while a solution runs, done once before one starts: the
        blocks stay in this process's allocator, so a solution that takes all the free device memory
        cannot starve the judge of its checks. (Not for a problem whose inputs are a large share of
        the device: keeping a second set cached would leave the solution too little.)"""
        inputs = self.fresh_inputs()
        references = self.reference(inputs)
        self.load_slot(0, inputs)
        for out, ref in zip(self.slots[0][1], references):
            checks.compare(ref, ref, self.precision, elementwise=self.elementwise)
            checks.count_poisoned(out)
            buffers.fingerprint(out, self.public)
        for x in self.slots[0][0]:
            if isinstance(x, torch.Tensor):
                buffers.fingerprint(x, self.secret)
        self.synchronize()

    def _allocate(self, max_batch, memory_fraction):
        tensors = [x for x in self.first_inputs if isinstance(x, torch.Tensor)]
        per_slot = sum(t.numel() * t.element_size() for t in tensors) + \
            sum(r.numel() * r.element_size() for r in self.first_references)
        if self.device.type == "cuda":
            free = torch.cuda.mem_get_info(self.device)[0]
        else:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        self.slot_bytes, self.free_bytes = per_slot, free
        self.output_specs = [(tuple(r.shape), str(r.dtype).replace("torch.", "")) for r in self.first_references]
        # a slot's inputs, its outputs, and the judge's own copy of the inputs while it fills the slot
        self.capacity = max(1, min(max_batch, int(memory_fraction * free / max(2 * per_slot, 1))))
        self.arena = buffers.Arena(self.device, self.workdir)
        self.slots, self.slot_handles = [], []
        for _ in range(self.capacity):
            inputs, input_handles = [], []
            for x in self.first_inputs:
                if isinstance(x, torch.Tensor):
                    tensor, handle = self.arena.tensor(x.shape, x.dtype)
                    inputs.append(tensor)
                    input_handles.append(("tensor", handle))
                else:
                    inputs.append(x)
                    input_handles.append(("value", x))
            outputs, output_handles = zip(*(self.arena.tensor(r.shape, r.dtype) for r in self.first_references))
            self.slots.append((inputs, list(outputs)))
            self.slot_handles.append({"inputs": input_handles, "outputs": list(output_handles)})
        # the probe's few numbers are written by the solver's host code, so it lives in host memory
        self.host_arena = buffers.Arena(torch.device("cpu"), self.workdir)
        self.probe, self.probe_handle = self.host_arena.tensor((len(self.first_references), 4), torch.int64)
        self.synchronize()

    def load_slot(self, slot, inputs):
        """Puts one input set in a slot and poisons the slot's outputs."""
        targets, outputs = self.slots[slot]
        for index, (target, x) in enumerate(zip(targets, inputs)):
            if isinstance(target, torch.Tensor):
                if not isinstance(x, torch.Tensor) or x.shape != target.shape or x.dtype != target.dtype:
                    raise problems.ProblemError(f"{self.loaded.problem.key}: get_inputs() input {index} "
                                                f"changes shape or dtype between calls")
                target.copy_(x)
            elif x != target:
                raise problems.ProblemError(f"{self.loaded.problem.key}: get_inputs() input {index} is a "
                                            f"value that changes between calls")
        for out in outputs:
            buffers.poison(out)

    def synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # --- a solution process ----------------------------------------------------------------

    def spawn(self, module, class_name, mode, guard, build_timeout, log_name, extensions_dir=None, caches=None,
              compile_options=None):
        """A solution process for `module`, confined (autokernel_sandbox) to change nothing but its own
        directory under the judge's, `extensions_dir` (load_inline's builds) and `caches` (the compilers'
        caches; default: its own directory), before any of the module's code runs. `mode` "compile"
        wraps the model in torch.compile(model, **compile_options)."""
        plan = {"nonce": secrets.token_hex(8), "device": str(self.device), "dtype": self.precision_name
                .replace("fp32", "float32").replace("fp16", "float16").replace("bf16", "bfloat16"),
                "module": str(module), "class_name": class_name, "problem": str(self.loaded.problem.path),
                "init_seed": INIT_SEED, "shrink": self.shrink, "mode": mode, "guard": guard, "slots": self.slot_handles,
                "probe": self.probe_handle, "probe_key_seed": self.public_seed,
                "output_specs": self.output_specs, "compile_options": dict(compile_options or {})}
        cwd = os.path.join(self.workdir, log_name)
        caches = str(caches or cwd)
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONUNBUFFERED="1", CUDA_MODULE_LOADING="LAZY", TMPDIR=os.path.join(cwd, "tmp"),
                   TRITON_CACHE_DIR=os.path.join(caches, "triton"),
                   TORCHINDUCTOR_CACHE_DIR=os.path.join(caches, "inductor"),
                   CUDA_CACHE_PATH=os.path.join(caches, "nv"))
        plan["writable"] = [cwd, caches]
        sole = sole_gpu(self.device)
        if sole:  # the solution sees this GPU alone, as its cuda:0
            env["CUDA_VISIBLE_DEVICES"], plan["gpu_minor"] = sole
            plan["device"] = "cuda:0"
        if extensions_dir:
            env["TORCH_EXTENSIONS_DIR"] = str(extensions_dir)
            plan["writable"].append(str(extensions_dir))
        for directory in plan["writable"] + [env["TMPDIR"]]:
            os.makedirs(directory, exist_ok=True)
        solver = SolverProcess(plan, os.path.join(self.workdir, log_name + ".log"), env, cwd)
        started = time.monotonic()
        answer = solver.expect(plan["nonce"], build_timeout)
        if answer.kind != "ok":
            solver.kill()
            solver.close()
            raise from_answer(answer, solver, "build", build_timeout)
        return solver, time.monotonic() - started

    def trials(self, solver, count, first_timeout, call_timeout, late_ms, gate=True):
        """KernelBench's correctness trials through slot 0, with every check of ours (the third, or
        the last, gated when `gate`); returns the worst differences seen. Raises Rejected at the
        first failure."""
        gated_trial = min(2, count - 1) if gate else -1
        worst = {"max_abs_diff": 0.0, "relative_error": 0.0, "notes": []}
        last_ms, previous = 0.0, None
        for trial in range(count):
            phase = f"trial {trial + 1} of {count}"
            first = trial == 0 and self.first_inputs is not None
            inputs = self.first_inputs if first else self.fresh_inputs()
            references = self.first_references if first else self.reference(inputs)
            self.load_slot(0, inputs)
            gated = trial == gated_trial
            self.probe.zero_()
            self.synchronize()
            timeout = first_timeout if trial == 0 else call_timeout
            start = time.perf_counter()
            answer = solver.command("trial", 0, int(gated), f"{50 + 5 * last_ms:.1f}", late_ms, timeout=timeout)
            last_ms = (time.perf_counter() - start) * 1e3
            if answer.kind != "ok":
                raise from_answer(answer, solver, phase, timeout)
            self._check_inputs(inputs, phase)
            outputs = self.slots[0][1]
            self._check_probe(inputs, outputs, phase, worst["notes"], gated)
            fingerprints = [buffers.fingerprint(out, self.public) for out in outputs]
            for index, (out, ref) in enumerate(zip(outputs, references)):
                result = checks.compare(out, ref, self.precision, f"output {index}", self.elementwise)
                if not result.ok:
                    if previous is not None and fingerprints == previous and out.numel() > 1:
                        raise Rejected("INCORRECT", "the same result as the previous call, for new inputs: "
                                                    "a remembered result (" + result.reason + ")", phase)
                    raise Rejected("INCORRECT", result.reason, phase)
                worst["max_abs_diff"] = max(worst["max_abs_diff"], result.max_abs_diff)
                worst["relative_error"] = max(worst["relative_error"], result.relative_error)
            previous = fingerprints
        return worst

    def release_first_inputs(self):
        """The first input set and its references, no longer needed once the solution's trials ran
        (the baselines' trials draw their own): a large problem's memory goes back to the solutions."""
        self.first_inputs = self.first_references = None

    def _check_inputs(self, inputs, phase):
        for index, (target, x) in enumerate(zip(self.slots[0][0], inputs)):
            if isinstance(target, torch.Tensor) and not checks.same_bytes(target, x):
                raise Rejected("INCORRECT", f"input {index} was modified by the call", phase)

    def _check_probe(self, inputs, outputs, phase, notes, gated):
        input_prints = {buffers.fingerprint(x, self.public) for x in inputs if isinstance(x, torch.Tensor)}
        gpu = gated and self.device.type == "cuda"
        for index, out in enumerate(outputs):
            row = [int(v) for v in self.probe[index].tolist()]
            probe = Probe(bool(row[0]), row[1], row[2], row[3])
            reason = probe_reason(probe, buffers.fingerprint(out, self.public), input_prints, out.numel(), gpu)
            if reason:
                raise Rejected("INCORRECT", f"output {index}: {reason}", phase)
            if gpu and not probe.held:
                notes.append("the off-stream check was inconclusive: the call outlasted the held stream "
                             "(it synchronized)")

    def close(self):
        for arena in ("arena", "host_arena"):
            if hasattr(self, arena):
                getattr(self, arena).close()
        shutil.rmtree(self.workdir, ignore_errors=True)
