"""The bridge's own pieces: its op table and ABI mirror agree with the engine (asked through the
CLI, $AK_CLI_PATH), and the profile counts every op once: the regions found in the graph inside
scopes of their own, the rest as unknown aten ops.
"""
import ctypes
import json
import math
import os
import subprocess
import unittest

import torch
from torch import nn

from autokernel import profile
from autokernel.runtime import abi
from autokernel.runtime.apply import report as applying_report
from autokernel.runtime.ops import OPS

CLI = os.environ.get("AK_CLI_PATH")

# Problems per operator: its standard one, and ones that exercise its parameters.
PROBLEMS = {
    "matmul": ["4096x4096x4096", "48x144x48"],
    "softmax": ["8192x8192", "192x24"],
    "layernorm": ["8192x8192"],
    "rmsnorm": ["8192x8192", "7x33"],
    "flash_attention": ["4x32x4096x128:causal=1", "2x8x64x32:causal=0", "2x8x64x32:causal=1,kv_heads=2"],
    "fused_mlp": ["4096x4096x11008"],
    "cross_entropy": ["8192x32768"],
    "rotary_embedding": ["4x32x4096x128", "2x4x24x12"],
    "reduce": ["16384x4096"],
}


def engine(*args):
    return json.loads(subprocess.run([CLI, *args], check=True, capture_output=True, text=True).stdout)


@unittest.skipUnless(CLI, "AK_CLI_PATH names the autokernel binary")
class AgreesWithTheEngine(unittest.TestCase):
    def test_every_operator_is_in_the_table(self):
        self.assertEqual({op["name"] for op in engine("ops", "--json")["ops"]}, set(OPS))

    def test_signatures_problems_and_outputs_match(self):
        for op, problems in PROBLEMS.items():
            for problem in problems:
                for dtype in ("fp16", "fp32"):
                    with self.subTest(op=op, problem=problem, dtype=dtype):
                        s = engine("ops", "--signature", op, "--shape", problem, "--dtype", dtype, "--json")
                        spec = OPS[op]
                        self.assertEqual(tuple(t["name"] for t in s["inputs"]), spec.inputs)
                        self.assertEqual(tuple(t["name"] for t in s["outputs"]), spec.outputs)
                        self.assertEqual(len(s["scalars"]), len(spec.scalars))
                        shapes = [tuple(t["shape"]) for t in s["inputs"]]
                        self.assertEqual(spec.problem(shapes, s["scalars"]), s["problem"])
                        inputs = [torch.empty(t["shape"], dtype=torch.int64 if t["dtype"] == "i64"
                                              else abi.TORCH_DTYPES[t["dtype"]], device="meta")
                                  for t in s["inputs"]]
                        outputs = spec.allocate(inputs)
                        self.assertEqual([list(t.shape) for t in outputs], [t["shape"] for t in s["outputs"]])
                        self.assertEqual([abi.DTYPE_NAMES[t.dtype] for t in outputs],
                                         [t["dtype"] for t in s["outputs"]])
                        work = s["workspace"]
                        self.assertEqual(spec.workspace_bytes(inputs),
                                         0 if work is None else math.prod(work["shape"]) * inputs[0].element_size())
                        if work is not None:
                            self.assertEqual(work["dtype"], s["inputs"][0]["dtype"])

    def test_abi_layout(self):
        layout = engine("ops", "--json")["abi"]
        self.assertEqual(abi.ABI_VERSION, layout["version"])
        self.assertEqual(ctypes.sizeof(abi.AkCall), layout["sizeof_call"])
        self.assertEqual(ctypes.sizeof(abi.AkTensor), layout["sizeof_tensor"])


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 16, bias=False)

    def forward(self, x):
        return torch.softmax(self.proj(x), -1).sum() + torch.tanh(x).mean()


class Attribution(unittest.TestCase):
    def test_each_op_is_counted_once(self):
        model, x = Small(), torch.randn(64, 32)
        report = profile.scoped(model, (x,), lambda line: None)
        self.assertEqual({(s.op, s.problem) for s in report.sites}, {("matmul", "64x16x32:b_nk=1"), ("softmax", "64x16")})
        with torch.profiler.profile() as prof:
            model(x)
        events = prof.events()
        entries = profile.attribute(events, 1, gpu=False)
        own = sum(e.self_cpu_time_total for e in events if not e.name.startswith(profile.SCOPE))
        self.assertAlmostEqual(sum(e["us"] for e in entries), own, places=3)
        ours = {(e["op"], e["problem"], e["calls"]) for e in entries if e["op"]}
        self.assertEqual(ours, {("matmul", "64x16x32:b_nk=1", 1), ("softmax", "64x16", 1)})
        self.assertIn("aten::tanh", {e.get("aten") for e in entries})  # not ours: listed as unknown




class VerifyBudget(unittest.TestCase):
    """verify starts no measurement its budget cannot hold: a mode not compiled yet is estimated
    from the slowest compilation so far, max-autotune (which benchmarks every GEMM) from ten times
    that, a mode compiled before from its last compilation."""

    def test_estimates_follow_the_compilations_seen(self):
        from autokernel.decide import Bench
        from autokernel.verify import Settings

        bench = Bench(loaded=None, settings=Settings(warmup=1, iterations=1, budget_s=100), progress=print)
        # with kernels a measurement compiles twice (with them, and PyTorch alone for its rounds);
        # PyTorch alone's own measurement once
        kernels = ["rmsnorm_4096x768_fp16"]
        self.assertEqual(bench.estimate("default", kernels), 62.0)  # nothing compiled yet
        self.assertEqual(bench.estimate("default"), 32.0)
        self.assertEqual(bench.estimate("eager"), 2.0)
        bench.compiled("default", 13.0)  # the first compilation
        bench.compiled("default", 2.0)  # a recompilation, from Inductor's caches
        self.assertEqual(bench.estimate("default", kernels), 6.0)
        self.assertEqual(bench.estimate("reduce-overhead", kernels), 28.0)
        self.assertEqual(bench.estimate("max-autotune-no-cudagraphs", kernels), 262.0)
        self.assertEqual(bench.estimate("max-autotune-no-cudagraphs"), 132.0)
        self.assertTrue(bench.affordable("reduce-overhead", kernels))
        self.assertFalse(bench.affordable("max-autotune-no-cudagraphs", kernels))
        self.assertFalse(bench.affordable("max-autotune-no-cudagraphs"))
        # what a skipped mode's row says: the estimate and what was left
        self.assertIn("estimated at ~132 s with", bench.unaffordable("max-autotune-no-cudagraphs"))
        self.assertIn("of the budget (100 s)", bench.unaffordable("max-autotune-no-cudagraphs"))

    def test_the_budget_counts_from_when_verify_started(self):
        import time

        from autokernel.decide import Bench
        from autokernel.verify import Settings

        # the CLI spent 50 s of a 60 s budget building kernels before the bridge began
        bench = Bench(loaded=None, settings=Settings(warmup=1, iterations=1, budget_s=60), progress=print,
                      started=time.time() - 50)
        self.assertGreaterEqual(bench.elapsed(), 50)
        self.assertTrue(bench.affordable("eager"))
        self.assertFalse(bench.affordable("default"))  # 32 s estimated, 10 s left

    def test_a_measurement_running_when_the_budget_ends_is_stopped(self):
        """A compile can run minutes past its estimate; the measurement in flight at the budget's end
        stops there with a note, and nothing else starts."""
        import time
        from types import SimpleNamespace

        from autokernel.decide import Bench
        from autokernel.verify import Settings

        class Slow(nn.Module):
            def forward(self, x):
                time.sleep(0.4)
                return x + 1

        loaded = SimpleNamespace(model=Slow(), inputs=(torch.ones(2),), device=torch.device("cpu"), dtype=torch.float32)
        lines = []
        bench = Bench(loaded, Settings(warmup=2, iterations=50, budget_s=1.5), lines.append)
        began = time.perf_counter()
        m = bench.measure("eager")
        self.assertLess(time.perf_counter() - began, 3.0)  # 52 calls would take 21 s
        self.assertIsNone(m.us)
        self.assertIn("stopped: the budget (2 s) ended", m.note)
        self.assertTrue(bench.spent)
        self.assertFalse(bench.affordable("eager"))
        self.assertTrue(any("stopped" in line for line in lines))
        time.sleep(0.3)  # no alarm is left armed to go off later
        self.assertTrue(torch.equal(Slow()(torch.ones(2)), torch.full((2,), 2.0)))

    def test_a_failed_measurement_names_the_cause_a_wrapped_exception_carries(self):
        """Inductor's SubprocException begins "An exception occurred in a subprocess:" and ends with
        the error its compile worker raised: the note keeps both ends (on the H100, torch.compile in
        the confined verify read only the first), and verify's log gets the whole traceback."""
        import contextlib
        import tempfile
        from types import SimpleNamespace

        from autokernel.decide import Bench
        from autokernel.verify import Settings

        class Fails(nn.Module):
            def forward(self, x):
                raise RuntimeError("An exception occurred in a subprocess:\n\nTraceback (most recent call last):\n"
                                   "  File \"worker.py\", line 1\nPermissionError: [Errno 13] Permission denied: '/x'")

        loaded = SimpleNamespace(model=Fails(), inputs=(torch.ones(2),), device=torch.device("cpu"),
                                 dtype=torch.float32)
        bench = Bench(loaded, Settings(warmup=1, iterations=1, budget_s=0), progress=lambda line: None)
        with tempfile.TemporaryFile("w+") as log:  # (a file: faulthandler writes to its descriptor)
            with contextlib.redirect_stderr(log):
                m = bench.measure("eager")
            log.seek(0)
            self.assertIn("Traceback", log.read())
        self.assertIsNone(m.us)
        self.assertEqual(m.note, "RuntimeError: An exception occurred in a subprocess: ... "
                                 "PermissionError: [Errno 13] Permission denied: '/x'")

    def test_every_measurement_is_logged_with_its_spread_and_the_hosts_load(self):
        """A single reading under torch.compile without CUDA graphs can be twice the model's time
        (the compact LLaMA on the H200): the log says for each reading whether its calls were
        uniformly slow or a few were, and how loaded the host was."""
        from types import SimpleNamespace

        from autokernel.decide import Bench
        from autokernel.verify import Settings

        loaded = SimpleNamespace(model=nn.Linear(8, 8), inputs=(torch.ones(4, 8),), device=torch.device("cpu"),
                                 dtype=torch.float32)
        bench = Bench(loaded, Settings(warmup=1, iterations=9, budget_s=0), progress=lambda line: None)
        first, second = bench.measure("eager"), bench.measure("eager")
        self.assertEqual([r["us"] for r in bench.log], [first.us, second.us])
        for record in bench.log:
            self.assertEqual((record["mode"], record["kernels"]), ("eager", []))
            self.assertLessEqual(record["fastest_call_us"], record["us"])
            self.assertLessEqual(record["us"], record["slowest_call_us"])
            self.assertGreaterEqual(record["load_1min"], 0.0)


class Decide(unittest.TestCase):
    """Plugging by the whole model's time: backward elimination over the kernel set."""

    class ScriptedBench:
        """Model times per kernel set, as a compiled mode reads them (no paired rounds)."""

        def __init__(self, times):
            from autokernel.verify import Settings

            self.times, self.measured = times, []
            self.settings = Settings(warmup=1, iterations=1, budget_s=0)
            self.checked = []

        def affordable(self, mode, kernels=()):
            return True

        def measure(self, mode, kernels=()):
            from types import SimpleNamespace

            from autokernel.decide import Measurement

            self.measured.append(frozenset(kernels))
            us = self.times[frozenset(kernels)]  # or (ours, PyTorch alone beside it in the rounds)
            us, paired = us if isinstance(us, tuple) else (us, None)
            m = Measurement(mode, tuple(kernels), us=us, paired_base_us=paired)
            m.sites = [SimpleNamespace(kernel=k) for k in kernels]
            return m

    def test_plugged_without_deciding_every_kernel_stays_in_a_compiled_mode_that_reads_slower(self):
        """--plug all checks every candidate's outputs in every mode: a compiled reading slower than
        PyTorch's, which takes a decided set out again, leaves this one in."""
        import dataclasses

        from autokernel.decide import Measurement
        from autokernel.verify import _confirmed

        bench = self.ScriptedBench({frozenset("ab"): 5000.0})
        base, ours = Measurement("default", (), us=4000.0), Measurement("default", ("a", "b"), us=5000.0)
        bench.settings = dataclasses.replace(bench.settings, decide=False)
        self.assertEqual(_confirmed(bench, "default", ["a", "b"], base, ours, None), (["a", "b"], ours))
        bench.settings = dataclasses.replace(bench.settings, decide=True)  # deciding, the set goes out
        self.assertEqual(_confirmed(bench, "default", ["a", "b"], base, ours, None)[0], [])

    def test_one_slow_reading_of_the_whole_set_does_not_push_every_kernel_out(self):
        from autokernel.decide import Measurement, decide

        f = frozenset
        # every kernel at work read slow once (5729 µs); without a, 3414 µs; b and c each save time
        times = {f("abc"): 5729.0, f("bc"): 3414.0, f("c"): 3600.0, f("b"): 3650.0}
        bench = self.ScriptedBench(times)
        kept, why, final = decide(bench, "eager", ["a", "b", "c"], Measurement("eager", (), us=3669.0))
        self.assertEqual(kept, ["b", "c"])
        self.assertEqual(final.us, 3414.0)  # the set kept is the last one measured: no extra compile
        self.assertFalse(why["a"][0])
        self.assertIn("3414 µs (PyTorch 3669 µs) without it", why["a"][1])
        self.assertTrue(why["b"][0] and why["c"][0])
        self.assertEqual(bench.measured, [f("abc"), f("bc"), f("c"), f("b")])

    def test_a_set_not_faster_than_pytorch_is_dropped(self):
        from autokernel.decide import Measurement, decide

        f = frozenset
        times = {f("ab"): 3700.0, f("b"): 3750.0, f("a"): 3720.0}
        kept, why, final = decide(self.ScriptedBench(times), "eager", ["a", "b"], Measurement("eager", (), us=3669.0))
        self.assertEqual(kept, [])
        self.assertIn("not faster than PyTorch", why["a"][1])

    def test_under_compile_each_kernel_is_timed_alone_against_inductor(self):
        """Forward selection in a compiled mode: a and d lose alone (Inductor fuses better); b and
        c win alone and together, so the set is b + c, the last one measured."""
        from autokernel.decide import Measurement, decide

        f = frozenset
        times = {f("abcd"): 3700.0, f("a"): 3750.0, f("b"): 3500.0, f("c"): 3560.0, f("d"): 3669.0,
                 f("bc"): 3400.0}
        bench = self.ScriptedBench(times)
        kept, why, final = decide(bench, "default", ["a", "b", "c", "d"], Measurement("default", (), us=3669.0))
        self.assertEqual(kept, ["b", "c"])
        self.assertEqual(final.us, 3400.0)
        self.assertEqual(bench.measured, [f("abcd"), f("a"), f("b"), f("c"), f("d"), f("bc")])
        self.assertFalse(why["a"][0])
        self.assertIn("alone, the model takes 3750 µs (PyTorch 3669 µs): not faster", why["a"][1])
        self.assertFalse(why["d"][0])
        self.assertTrue(why["b"][0] and why["c"][0])
        self.assertIn("with all 2 kept, 3400 µs", why["b"][1])

    def test_under_compile_the_fastest_alone_wins_when_the_winners_clash(self):
        from autokernel.decide import Measurement, decide

        f = frozenset
        times = {f("abc"): 3700.0, f("a"): 3750.0, f("b"): 3500.0, f("c"): 3560.0, f("bc"): 3580.0}
        kept, why, final = decide(self.ScriptedBench(times), "default", ["a", "b", "c"],
                                  Measurement("default", (), us=3669.0))
        self.assertEqual(kept, ["b"])
        self.assertEqual(final.us, 3500.0)
        self.assertFalse(why["c"][0])
        self.assertIn("faster alone, but the model takes 3500 µs (PyTorch 3669 µs) with b instead", why["c"][1])


    def test_under_compile_sets_compare_by_their_time_over_pytorchs_in_their_own_rounds(self):
        """The H100's call of the twentieth session: fused_mlp alone 6861 µs against PyTorch's 7507
        beside it; every candidate 5929 against 6040, minutes later on a host-bound model. The
        lower reading is not the better set."""
        from autokernel.decide import Measurement, decide

        f = frozenset
        times = {f("abc"): (5929.0, 6040.0), f("a"): (6861.0, 7507.0), f("b"): (7777.0, 6938.0),
                 f("c"): (6978.0, 6950.0)}
        bench = self.ScriptedBench(times)
        kept, why, final = decide(bench, "default", ["a", "b", "c"], Measurement("default", (), us=4695.0))
        self.assertEqual(kept, ["a"])
        self.assertEqual((final.us, final.paired_base_us), (6861.0, 7507.0))
        self.assertIn("6861 µs (PyTorch 7507 µs)", why["a"][1])
        self.assertFalse(why["b"][0] or why["c"][0])


    def test_a_later_compiled_mode_times_the_earlier_ones_winners_first(self):
        """From the measurements, not from the reasons written beside them: a winner alone whose
        set later failed its confirming rounds still won alone."""
        from autokernel.decide import Measurement, earlier_winners_first

        def timed(mode, kernels, us, torch_us):
            return Measurement(mode, tuple(kernels), us=us, paired_base_us=torch_us).record()

        log = [timed("eager", "a", 3000.0, 4000.0), timed("default", "abcd", 3900.0, 4000.0),
               timed("default", "a", 7777.0, 6938.0), timed("default", "b", 3740.0, 4083.0),
               timed("default", "c", 3500.0, 3669.0), timed("default", "d", 4000.0, 4020.0),
               Measurement("default", ("e",), note="stopped: the budget ended").record()]
        self.assertEqual(earlier_winners_first(["a", "b", "c", "d", "e"], log), ["b", "c", "a", "d", "e"])
        self.assertEqual(earlier_winners_first(["a", "b"], []), ["a", "b"])


class CompiledRounds(unittest.TestCase):
    """Under torch.compile a variant is timed in rounds alternating with PyTorch alone (one reading
    of PyTorch alone under torch.compile read 4511 µs, another 3435, same GPU type), both compiled
    once; a kept set is timed once more, and one that its rounds do not show faster is not plugged."""

    @staticmethod
    def bench(measurements):
        from autokernel.decide import Bench
        from autokernel.verify import Settings

        class Scripted(Bench):
            def measure(self, mode, kernels=(), traced_only=False):
                self.order.append(tuple(kernels))
                return measurements.pop(0)

        bench = Scripted(None, Settings(warmup=1, iterations=1, budget_s=0), lambda line: None)
        bench.order = []
        return bench

    @staticmethod
    def paired(us, torch_us):
        from autokernel.decide import Measurement

        return Measurement("default", ("mm",), us=sorted(us)[1], paired_base_us=sorted(torch_us)[1], readings=us,
                           paired_readings=torch_us)

    def test_a_win_that_holds_is_kept_with_its_rounds(self):
        from autokernel.decide import Measurement
        from autokernel.verify import _confirmed, _row

        bench = self.bench([self.paired([3400.0, 3390.0, 3420.0], [3440.0, 3435.0, 3450.0])])
        why = {"mm": (True, "alone, the model takes 3248 µs (PyTorch 4511 µs)")}
        base = Measurement("default", (), us=4511.0)
        kept, final = _confirmed(bench, "default", ["mm"], base, self.paired([3248.0] * 3, [4511.0] * 3), why)
        self.assertEqual(kept, ["mm"])
        self.assertEqual(bench.order, [("mm",)])  # timed once more
        self.assertEqual((final.us, final.torch_us(base)), (3400.0, 3440.0))
        row = _row("default", base, final, kept)
        self.assertEqual((row["torch_us"], row["ours_us"]), (3440.0, 3400.0))
        self.assertEqual(row["torch_readings_us"], [3440.0, 3435.0, 3450.0])
        self.assertIn("medians of 3 alternating rounds: PyTorch 3440/3435/3450, ours 3400/3390/3420", row["note"])

    def test_a_win_read_once_against_a_slow_reading_is_not_plugged(self):
        from autokernel.decide import Measurement
        from autokernel.verify import _confirmed

        bench = self.bench([self.paired([3445.0, 3440.0, 3450.0], [3440.0, 3435.0, 3450.0])])
        why = {"mm": (True, "alone, the model takes 3248 µs (PyTorch 4511 µs)")}
        base = Measurement("default", (), us=4511.0)
        kept, final = _confirmed(bench, "default", ["mm"], base, self.paired([3248.0] * 3, [4511.0] * 3), why)
        self.assertEqual(kept, [])
        self.assertIs(final, base)
        self.assertFalse(why["mm"][0])
        self.assertIn("not in the medians of calls alternating with PyTorch alone: 3445 µs with them, 3440 µs without", why["mm"][1])
        self.assertIn("not plugged", base.note)

    def test_with_nothing_plugged_pytorch_alone_is_the_median_of_its_readings(self):
        """PyTorch alone's one unpaired reading (6115 µs on the H200, right after its compile) does
        not stand for the mode when its paired readings say 3.6 ms."""
        from autokernel.decide import Measurement
        from autokernel.verify import _row

        base = Measurement("default", (), us=6115.0)
        row = _row("default", base, base, [], [3608.0, 3784.0, 3601.0, 3642.0])
        self.assertEqual((row["torch_us"], row["ours_us"]), (3642.0, 3642.0))
        self.assertEqual(row["torch_readings_us"], [6115.0, 3608.0, 3784.0, 3601.0, 3642.0])
        self.assertIn("the median of its 5 readings", row["note"])
        self.assertEqual(_row("default", base, base, [])["torch_us"], 6115.0)  # no other reading

    def test_a_mode_not_decided_is_judged_by_its_own_rounds(self):
        from autokernel.decide import Measurement
        from autokernel.verify import _confirmed

        bench = self.bench([])
        base = Measurement("reduce-overhead", (), us=2500.0)
        kept, final = _confirmed(bench, "reduce-overhead", ["mm"], base,
                                 self.paired([2400.0, 2390.0, 2410.0], [2500.0, 2520.0, 2490.0]), None)
        self.assertEqual((kept, bench.order), (["mm"], []))  # no second measurement
        self.assertEqual(final.us, 2400.0)

    def test_the_rounds_switch_between_two_compiled_graphs_without_recompiling(self):
        """The model with the traced graphs in and PyTorch alone, under torch.compile, call by call:
        two compilations for all their calls, and the log has every round."""
        from types import SimpleNamespace

        from torch._dynamo.utils import counters

        from autokernel.decide import PAIRED_ROUNDS, Bench
        from autokernel.verify import Settings

        model = nn.Sequential(nn.Linear(16, 32), nn.SiLU(), nn.Linear(32, 16)).eval()
        loaded = SimpleNamespace(model=model, inputs=(torch.randn(8, 16),), device=torch.device("cpu"), dtype=torch.float32)
        bench = Bench(loaded, Settings(warmup=1, iterations=3, budget_s=0), progress=lambda line: None)
        before = counters["stats"]["unique_graphs"]
        m = bench.measure("default", traced_only=True)
        self.assertEqual(m.note, "")
        self.assertEqual(counters["stats"]["unique_graphs"] - before, 2)
        self.assertEqual((len(m.readings), len(m.paired_readings)), (PAIRED_ROUNDS, PAIRED_ROUNDS))
        # the medians of all calls, which lie within the range of the rounds' medians
        self.assertTrue(min(m.readings) <= m.us <= max(m.readings), (m.us, m.readings))
        self.assertTrue(min(m.paired_readings) <= m.paired_base_us <= max(m.paired_readings))
        self.assertEqual(bench.log[-1]["rounds_us"], m.readings)
        self.assertIsNone(applying_report(model))  # measure() leaves the model as it found it


if __name__ == "__main__":
    unittest.main()
