"""The solution process: a fresh interpreter the judge spawns (never a fork of it), which imports one
model (a solution's ModelNew, or the reference Model for the baselines' timing), builds it as
KernelBench does, and runs it on the judge's shared buffers when told.

Nothing here is trusted: the solution's code runs in this process and can change any of it. So
this process only moves data: it reads commands on stdin, calls the model on the inputs the judge
put in place, copies each result into the judge's output buffer, and acknowledges on its channel
(a pipe to the judge) with exactly `ready <nonce>`, `done <nonce>` or `fail <nonce> <kind>`. The
judge reads the outputs itself, keeps the clock itself and treats anything else on the channel as
forged. A failure's one-line reason goes to stderr (a log the judge reads only to explain one).

After every correctness call, and a pause, the result is fingerprinted again; on a GPU a "gated"
call also holds the current stream with a sleep kernel while the model is called and fingerprints
the result twice on a stream of its own before the hold ends. The fingerprints go to a probe
buffer for the judge to compare: a result that changes while the stream is held, or is complete
before the stream ran, was computed elsewhere; one that changes after the call was still being
computed when the call returned.
"""
import os
import pickle
import sys
import time
import traceback

import torch

from ..loading import one_line
from . import buffers, guard, problems
from autokernel_sandbox import Unconfined, confine_unless_trusted, gpu_device_files

from .isolation import die_with_parent


class Failure(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class Solver:
    def __init__(self, plan):
        self.plan = plan
        self.device = torch.device(plan["device"])
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        def attach(handle):
            return buffers.attach(handle, self.device)

        self.slots = [([attach(h) if kind == "tensor" else h for kind, h in slot["inputs"]],
                       [attach(h) for h in slot["outputs"]]) for slot in plan["slots"]]
        self.probe = attach(plan["probe"])
        self.key = buffers.Key(self.device, seed=plan["probe_key_seed"])
        self.specs = [(tuple(shape), getattr(torch, dtype)) for shape, dtype in plan["output_specs"]]
        self._warm_up_probes()
        self.snapshot = None
        self.model = None

    def _warm_up_probes(self):
        # Kernels load at their first use; a first load behind the held stream would wait for it.
        for out in self.slots[0][1]:
            buffers.fingerprint(out, self.key)
        self.cycles_per_ms = 0.0
        if self.device.type == "cuda":
            self.side = torch.cuda.Stream(self.device)
            with torch.cuda.stream(self.side):
                for out in self.slots[0][1]:
                    buffers.fingerprint(out, self.key)
            torch.cuda._sleep(1000)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(10_000_000)
            end.record()
            end.synchronize()
            end.query()
            self.cycles_per_ms = 10_000_000 / max(start.elapsed_time(end), 1e-3)

    def load(self):
        plan = self.plan
        try:
            # The problem is the trusted reference: what its own imports change is in the snapshot,
            # which is taken before any of the solution's code runs.
            loaded = problems.load(plan["problem"], plan["shrink"])
        except BaseException as e:
            raise Failure("build", one_line(e)) from None
        self.snapshot = guard.Snapshot()
        try:
            module = problems.import_file(plan["module"], "kernelbench_solution")
        except BaseException as e:
            raise Failure("import", one_line(e)) from None
        cls = getattr(module, plan["class_name"], None)
        if not isinstance(cls, type):
            raise Failure("import", f"{os.path.basename(plan['module'])} defines no class {plan['class_name']}")
        try:
            model = problems.build(cls, loaded, plan["init_seed"], self.device, getattr(torch, plan["dtype"]))
            if plan["mode"] == "compile":
                model = torch.compile(model, **plan.get("compile_options", {}))
        except BaseException as e:
            raise Failure("build", one_line(e)) from None
        self.model = model
        self.check_patches()

    def check_patches(self):
        if not self.plan["guard"]:
            return
        replaced = self.snapshot.replaced()
        if replaced:
            raise Failure("patched", "the solution replaced " + ", ".join(replaced[:4]) +
                          (" ..." if len(replaced) > 4 else "") + " (only the judge's clock and checks count)")

    def _forward(self, slot):
        try:
            with torch.no_grad():
                result = self.model(*self.slots[slot][0])
        except BaseException as e:  # SystemExit and KeyboardInterrupt too: a failure, not the end
            raise Failure("forward", one_line(e)) from None
        return list(result) if isinstance(result, (tuple, list)) else [result]

    def _deliver(self, results, outputs):
        """Checks the results against the expected outputs and copies them into the judge's buffers."""
        if len(results) != len(outputs):
            raise Failure("output", f"returned {len(results)} outputs, expected {len(outputs)}")
        for index, (got, (shape, dtype)) in enumerate(zip(results, self.specs)):
            if not isinstance(got, torch.Tensor):
                raise Failure("output", f"output {index} is a {type(got).__name__}, not a tensor")
            if tuple(got.shape) != shape or got.dtype != dtype or got.device != self.device:
                raise Failure("output", f"output {index} is {list(got.shape)} {got.dtype} on {got.device}, "
                                        f"expected {list(shape)} {dtype} on {self.device}")
        for got, out in zip(results, outputs):
            out.copy_(got)

    def call(self, slot):
        results = self._forward(slot)
        self._deliver(results, self.slots[slot][1])
        return results

    def trial(self, slot, gated, hold_ms, late_ms):
        """One correctness call; a gated one also fills the probe (see the module's doc)."""
        if gated and self.device.type == "cuda":
            torch.cuda._sleep(int(hold_ms * self.cycles_per_ms))
            hold_end = torch.cuda.Event()
            hold_end.record()
            results = self._forward(slot)
            early = [self._fingerprint(r) if isinstance(r, torch.Tensor) else 0 for r in results]
            time.sleep(0.005)
            later = [self._fingerprint(r) if isinstance(r, torch.Tensor) else 0 for r in results]
            held = int(not hold_end.query())  # still held after both looks: they saw the stream before it ran
            for index, (first, second) in enumerate(zip(early[:len(self.probe)], later)):
                self.probe[index, 0], self.probe[index, 1], self.probe[index, 2] = held, first, second
            self._deliver(results, self.slots[slot][1])
        else:
            results = self.call(slot)
        self._synchronize()
        time.sleep(late_ms / 1000)
        for index, got in enumerate(results[:len(self.probe)]):
            self.probe[index, 3] = self._fingerprint(got)
        self.check_patches()

    def _fingerprint(self, tensor):
        if self.device.type != "cuda":
            return buffers.fingerprint(tensor, self.key)
        with torch.cuda.stream(self.side):
            return buffers.fingerprint(tensor, self.key)

    def batch(self, first, count):
        for slot in range(first, first + count):
            self.call(slot)
        self._synchronize()

    def _synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()


def main(argv):
    """python -m autokernel.kernelbench.solver CHANNEL_FD JUDGE_PID; the judge's pickled plan on stdin."""
    die_with_parent(int(argv[2]))
    channel = os.fdopen(int(argv[1]), "wb", buffering=0)
    commands = sys.stdin.buffer
    plan = pickle.loads(commands.read(int(commands.readline())))

    def answer(word, nonce, kind=""):
        channel.write(f"{word} {nonce}{' ' + kind if kind else ''}\n".encode())

    def fail(failure, nonce):
        print(f"autokernel-solver: {failure.kind}: {failure}", file=sys.stderr, flush=True)
        answer("fail", nonce, failure.kind)

    try:
        solver = Solver(plan)  # the judge's buffers opened (CUDA IPC) with whatever rights that takes,
        try:  # then every capability dropped and the process confined, before any of the solution's code runs
            confine_unless_trusted(plan["writable"],
                                   gpu_device_files(plan.get("gpu_minor")) if solver.device.type == "cuda" else (),
                                   torch_compile=True)
        except Unconfined as e:
            raise Failure("sandbox", f"refusing to run the solution unconfined: {e.strerror} "
                                     "(AUTOKERNEL_UNCONFINED=1 runs trusted code without it)") from None
        solver.load()
    except Failure as failure:
        fail(failure, plan["nonce"])
        return 0
    answer("ready", plan["nonce"])
    for line in commands:
        words = line.decode().split()
        if not words or words[0] == "quit":
            break
        command, nonce, arguments = words[0], words[1], words[2:]
        try:
            if command == "trial":
                solver.trial(int(arguments[0]), arguments[1] == "1", float(arguments[2]), float(arguments[3]))
            elif command == "batch":
                solver.batch(int(arguments[0]), int(arguments[1]))
            answer("done", nonce)
        except Failure as failure:
            fail(failure, nonce)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception:
        traceback.print_exc()  # the harness itself failed (or was broken by the solution): a crash
        sys.exit(3)
