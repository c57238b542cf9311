"""The KernelBench judge on the CPU: an honest solution passes; every known way of cheating is
rejected with its own reason; bad solutions (raise, hang, exit, wrong shape, no import) get a
status and a one-line reason and leave the next evaluation unaffected; the judge's clock counts
work a patched timer hides; the judge's /proc files stay closed to the solution; nothing is left
behind in /tmp or /dev/shm.

The solutions are files in tests/kernelbench/solutions, each saying how it cheats; the problem is a
softmax whose outputs are all below KernelBench's absolute tolerance (all zeros pass its allclose:
test_kernelbench_cli's agent submits them and sees them rejected by the relative error).
"""
import functools
import glob
import os
import pathlib
import tempfile
import time
import unittest

import torch

from autokernel.kernelbench import guard
from autokernel.kernelbench.evaluate import Options, evaluate
from autokernel.kernelbench.timing import Settings

HERE = pathlib.Path(__file__).resolve().parents[1] / "kernelbench"
PROBLEM = HERE / "problems" / "level1" / "1_Softmax_wide.py"

# solution -> (status, phase it is caught in or a tuple of the phases it may be caught in, words of
# the reason or a tuple of the reasons it may be caught for)
EXPECTED = {
    "cached_result": ("INCORRECT", "trial 2 of 5", "a remembered result"),
    "modifies_input": ("INCORRECT", "trial 1 of 5", "input 0 was modified"),
    # Its thread writes 10 ms after the call: seen by the look 50 ms later, or, on a machine loaded
    # enough that the thread has not run by then, an output never written (ctest -j2 on 2 cores).
    # On a loaded machine the solution process itself may also pause past 10 ms between the call's
    # return and its copy of the result: that trial then reads a complete result (the thread's work
    # was done before the judge's clock could stop) and a later trial catches it (CI: trial 2).
    "deferred_thread": ("INCORRECT", tuple(f"trial {n} of 5" for n in range(1, 6)),
                        ("changed after the call returned", "relative error")),
    "partial_output": ("INCORRECT", "trial 1 of 5", "relative error 0.7"),
    "patched_timer": ("INCORRECT", "build", "replaced time.time, time.perf_counter"),
    "patched_torch": ("INCORRECT", "build", "replaced torch.allclose, torch.equal"),
    "forged_channel": ("INCORRECT", "build", "forged message on the judge's channel"),
    "raises": ("CRASH", "trial 1 of 5", "RuntimeError: this kernel is not written yet"),
    "hangs_later": ("TIMEOUT", "trial 3 of 5", "no answer within 3 s"),
    "wrong_shape": ("INCORRECT", "trial 1 of 5", "output 0 is [32768, 16]"),
    "exits": ("CRASH", "trial 1 of 5", "the solution process exited with code 3"),
    "import_error": ("COMPILE_ERROR", "build", "No module named 'a_module_that_does_not_exist'"),
}


def judge(solution, **overrides):
    settings = Settings(call_timeout_s=3, max_time_s=0.2, min_rounds=3, batch_target_s=0)
    options = Options(device="cpu", timing=False, baselines=(), settings=settings, build_timeout_s=60)
    for name, value in overrides.items():
        setattr(options, name, value)
    return evaluate(PROBLEM, HERE / "solutions" / f"{solution}.py", options)


def setUpModule():
    # The judge's work directories go to a temporary directory of this process's own, and its
    # shared tensors in /dev/shm carry this process's pid: the leftovers counted are this test's,
    # not those of a judge another test runs at the same time (verify's, in test_export under
    # ctest -j, once failed this test with its files).
    global _scratch
    _scratch = tempfile.TemporaryDirectory(prefix="ak-judge-test-")
    tempfile.tempdir = _scratch.name


def tearDownModule():
    tempfile.tempdir = None
    _scratch.cleanup()


def leftovers():
    return (set(glob.glob(f"{tempfile.gettempdir()}/autokernel-kb-*"))
            | set(glob.glob(f"/dev/shm/autokernel-kb-{os.getpid()}-*")))


class Exploits(unittest.TestCase):
    def setUp(self):
        self.before = leftovers()

    def tearDown(self):
        self.assertEqual(leftovers() - self.before, set(), "the judge left files behind")

    def test_each_cheat_and_bad_solution_is_rejected_with_its_reason(self):
        for solution, (status, phase, words) in EXPECTED.items():
            with self.subTest(solution):
                record = judge(solution)
                phases = phase if isinstance(phase, tuple) else (phase,)
                self.assertEqual(record["status"], status, record["reason"])
                self.assertIn(record["phase"], phases, record["reason"])
                reasons = words if isinstance(words, tuple) else (words,)
                self.assertTrue(any(w in record["reason"] for w in reasons), (reasons, record["reason"]))
                self.assertNotIn("\n", record["reason"])

    def test_the_judge_is_out_of_the_solutions_reach(self):
        # The solution tries to open the judge's /proc files (memory, environment, descriptors) and
        # fails its forward if any opens: run as root, as here in CI, only the capabilities its
        # process dropped keep them closed.
        record = judge("reads_judge", trials=1)
        self.assertEqual(record["status"], "PASS", record["reason"])

    def test_the_solution_changes_nothing_outside_its_own_directories(self):
        # The solution tries to open the judge's code for writing, to plant a file in the caches the
        # references compile into, to signal the judge and to run a shell that writes; its forward
        # fails if any of it worked. Unconfined (a trusted solution's opt-out) it gets out: the test
        # can tell.
        import os
        from autokernel.kernelbench.evaluate import reference_caches_dir
        planted = os.path.join(reference_caches_dir(), "planted-by-a-solution")
        record = judge("changes_the_judge", trials=1)
        self.assertEqual(record["status"], "PASS", record["reason"])
        self.assertFalse(os.path.exists(planted))
        os.environ["AUTOKERNEL_UNCONFINED"] = "1"
        try:
            record = judge("changes_the_judge", trials=1)
        finally:
            del os.environ["AUTOKERNEL_UNCONFINED"]
            for leftover in (planted, planted + ".sh"):
                if os.path.exists(leftover):
                    os.remove(leftover)
        self.assertEqual(record["status"], "CRASH", record["reason"])
        self.assertIn("escaped: opened the judge's code for writing, planted a file in the references' caches, "
                      "signalled the judge", record["reason"])


class Clock(unittest.TestCase):
    def test_an_honest_solution_passes_and_is_timed_by_one_method_for_every_model(self):
        record = judge("honest_softmax", timing=True, baselines=("eager",))
        self.assertEqual(record["status"], "PASS", record["reason"])
        self.assertEqual(record["correctness"]["passed"], 5)
        self.assertLess(record["correctness"]["relative_error"], 1e-6)
        solution, eager = record["timing"]["solution"], record["timing"]["eager"]
        self.assertEqual(solution["batch"], eager["batch"])
        self.assertGreaterEqual(solution["rounds"], 3)
        self.assertAlmostEqual(record["speedup"]["eager"], eager["median_us"] / solution["median_us"])

    def test_a_patched_timer_does_not_move_the_judges_clock(self):
        # With the solver's detector off, the patched process runs to the end: its 50 ms sleep per
        # call is in the judge's time all the same.
        record = judge("patched_timer", timing=True, trials=1, guard=False)
        self.assertEqual(record["status"], "PASS", record["reason"])
        self.assertGreater(record["timing"]["solution"]["median_us"], 50_000)


class ModelCriterion(unittest.TestCase):
    def test_a_whole_models_output_is_judged_by_its_relative_error_alone(self):
        # verify's criterion: one element past KernelBench's absolute tolerance, the whole within
        # fp16's relative bound (2e-2), passes; a half-zero output fails either way.
        from autokernel.kernelbench import checks

        reference = torch.ones(1000, dtype=torch.float16)
        close = reference.clone()
        close[0] = 1.5  # relative error 0.5 / sqrt(1000) = 0.016
        kernelbench = checks.compare(close, reference, torch.float16)
        self.assertFalse(kernelbench.ok)
        self.assertIn("outside KernelBench's tolerance", kernelbench.reason)
        self.assertTrue(checks.compare(close, reference, torch.float16, elementwise=False).ok)
        half = reference.clone()
        half[500:] = 0
        model = checks.compare(half, reference, torch.float16, elementwise=False)
        self.assertFalse(model.ok)
        self.assertIn("relative error 0.707", model.reason)


def model_files(directory, spec, kernels_json=None, kernels=()):
    """verify's problem and solution files for the model `spec` (cli/verify_judged.cpp writes these)."""
    import json

    directory = pathlib.Path(directory)
    (directory / "model.json").write_text(json.dumps({"spec": spec, "input_shape": [2, 16], "dtype": "fp32",
                                                      "seed": 0, "device": "cpu"}))
    if kernels_json is None:
        kernels_json = directory / "kernels.json"
        kernels_json.write_text(json.dumps({"format": "autokernel-kernels/1", "kernels": []}))
    module = "from autokernel.kernelbench.model_problem import"
    (directory / "problem.py").write_text(
        f"{module} problem\nModel, get_inputs, get_init_inputs = problem({str(directory / 'model.json')!r})\n")
    (directory / "solution.py").write_text(
        f"{module} solution\nModelNew = solution({str(directory / 'model.json')!r}, {str(kernels_json)!r}, "
        f"{list(kernels)!r})\n")
    return directory / "problem.py", directory / "solution.py"


class ModelProblem(unittest.TestCase):
    def test_the_model_compiled_is_judged_against_pytorch_compiled_alike(self):
        # verify's decide mode on a GPU is torch.compile's default: the solution compiled in the
        # mode, in its confined process (Inductor's compile pool needs /dev/shm), timed against
        # the reference compiled in the same mode.
        models = pathlib.Path(__file__).resolve().parents[1] / "models"
        with tempfile.TemporaryDirectory() as directory:
            problem, solution = model_files(directory, f"{models}/tiny_lm.py:TinyLM")
            settings = Settings(call_timeout_s=120, max_time_s=0.5, min_rounds=3, batch_target_s=0)
            record = evaluate(problem, solution, Options(device="cpu", baselines=("compile",), settings=settings,
                                                         trials=1, build_timeout_s=300, criterion="model",
                                                         solution_mode="max-autotune-no-cudagraphs",
                                                         compile_mode="max-autotune-no-cudagraphs",
                                                         extensions_dir=str(pathlib.Path(directory) / "extensions")))
        self.assertEqual(record["status"], "PASS", record["reason"])
        self.assertEqual(record["solution_mode"], "max-autotune-no-cudagraphs")
        self.assertGreater(record["timing"]["solution"]["median_us"], 0)
        self.assertGreater(record["timing"]["compile"]["median_us"], 0, record["timing"])
        self.assertIn("compile", record["speedup"])

    def test_a_transformers_model_and_its_cache_are_judged_as_verify_compares_them(self):
        # verify's verdict: a workspace's model as a problem, its ModelNew through the solver (whose
        # guard must not take transformers' own additions to torch for the solution's), outputs
        # flattened alike in every process: logits and each of two layers' keys and values.
        import os

        from autokernel.kernelbench import problems

        models = pathlib.Path(__file__).resolve().parents[1] / "models"
        with tempfile.TemporaryDirectory() as directory:
            problem, solution = model_files(directory, f"{models}/tiny_hf_llama.py:TinyLlamaWithCache")
            loaded = problems.load(problem)
            model = problems.build(loaded.Model, loaded, 0, torch.device("cpu"), torch.float32)
            with torch.no_grad():
                self.assertEqual(len(model(*problems.make_inputs(loaded, 1, "cpu", torch.float32))), 5)
            # The judge draws under its device's context (cuda on a GPU; meta stands in here): the
            # model's own drawer, with its CPU generator, still places them where the model is.
            with torch.device("meta"):
                drawn = loaded.get_inputs()
            self.assertEqual([t.device.type for t in drawn], ["cpu"])
            settings = Settings(call_timeout_s=60, max_time_s=0.2, min_rounds=3, batch_target_s=0)
            record = evaluate(problem, solution, Options(device="cpu", timing=False, baselines=(), settings=settings,
                                                         trials=2, build_timeout_s=120, criterion="model",
                                                         extensions_dir=os.path.join(directory, "extensions")))
        self.assertEqual(record["status"], "PASS", record["reason"])
        self.assertEqual(record["correctness"]["criterion"], "model")
        self.assertEqual(record["correctness"]["relative_error"], 0.0)


class Guard(unittest.TestCase):
    def test_disguised_replacements_are_named_and_torchs_own_wrappers_are_not(self):
        import torch._dynamo  # noqa: F401  (wraps torch.manual_seed when it loads)

        snapshot = guard.Snapshot()
        torch.compile(torch.nn.Linear(4, 4))(torch.randn(2, 4))  # dynamo wraps nn.Module.__init__
        self.assertEqual(snapshot.replaced(), [])
        saved = time.perf_counter, torch.allclose, torch.Tensor.copy_
        try:
            time.perf_counter = functools.wraps(saved[0])(lambda: 0.0)  # looks like the original
            torch.allclose = torch._disable_dynamo(lambda *args, **kwargs: True)  # wrapped by torch itself
            torch.Tensor.copy_ = lambda self, other, non_blocking=False: self  # a new method on the class
            # a new name that shadows nothing (transformers adds nn.Module.smart_apply) is no replacement
            torch.nn.Module.autokernel_test_helper = lambda self: None
            self.assertEqual(snapshot.replaced(), ["time.perf_counter", "torch.allclose", "torch.Tensor.copy_"])
        finally:
            time.perf_counter, torch.allclose = saved[0], saved[1]
            del torch.Tensor.copy_, torch.nn.Module.autokernel_test_helper
        self.assertEqual(snapshot.replaced(), [])


if __name__ == "__main__":
    unittest.main()
