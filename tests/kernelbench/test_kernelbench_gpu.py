"""The KernelBench judge on a CUDA GPU (CTest label gpu; bench/gpu_kernelbench.sh runs it): honest
solutions written with load_inline CUDA and with Triton pass and are timed beside eager and
torch.compile; the exploits are rejected with their reasons, the GPU-only ones included (a side
stream, a process that takes all the device memory, CUDA that does not build); a bad solution
leaves the next evaluation unaffected."""
import os
import pathlib
import unittest
from unittest import mock

import torch

from autokernel.kernelbench.evaluate import Options, evaluate
from autokernel.kernelbench.timing import Settings

HERE = pathlib.Path(__file__).resolve().parent
PROBLEM = HERE / "problems" / "level1" / "1_Softmax_wide.py"

# solution -> (status, words of the reason); the phase can differ from the CPU's (a race decides
# whether a side stream is caught in an ordinary call or in the gated one).
EXPECTED = {
    "cached_result": ("INCORRECT", "a remembered result"),
    "zeros": ("INCORRECT", "relative error 1 > 0.0001"),
    "modifies_input": ("INCORRECT", "input 0 was modified"),
    "deferred_thread": ("INCORRECT", "changed after the call returned"),
    "partial_output": ("INCORRECT", "elements"),
    "side_stream": ("INCORRECT", "stream"),
    "patched_timer": ("INCORRECT", "replaced time.time, time.perf_counter, torch.cuda.Event.elapsed_time"),
    "forged_channel": ("INCORRECT", "forged message"),
    "oom_hog": ("CRASH", "out of memory"),
    "cuda_build_error": ("COMPILE_ERROR", "error"),
    "exits": ("CRASH", "exited with code 3"),
    "hangs_later": ("TIMEOUT", "no answer within"),
}


def judge(solution, **overrides):
    settings = Settings(call_timeout_s=20, max_time_s=1.0, min_rounds=5)
    options = Options(device="cuda", timing=False, baselines=(), settings=settings, build_timeout_s=300)
    for name, value in overrides.items():
        setattr(options, name, value)
    return evaluate(PROBLEM, HERE / "solutions" / f"{solution}.py", options)


@unittest.skipUnless(torch.cuda.is_available(), "needs a CUDA GPU")
class OnTheGpu(unittest.TestCase):
    def test_load_inline_cuda_passes_and_is_timed_beside_eager_and_compile(self):
        record = judge("honest_cuda", timing=True, baselines=("eager", "compile"))
        self.assertEqual(record["status"], "PASS", record["reason"])
        for model in ("solution", "eager", "compile"):
            self.assertGreater(record["timing"][model]["median_us"], 0, record["timing"][model])
        self.assertEqual(record["timing"]["solution"]["batch"], record["timing"]["eager"]["batch"])
        self.assertEqual(set(record["speedup"]), {"eager", "compile"})
        print(f"\nhonest_cuda: {record['timing']['solution']['median_us']:.1f} us, "
              f"{record['speedup']['eager']:.2f}x eager, {record['speedup']['compile']:.2f}x torch.compile, "
              f"evaluation {record['seconds']['without_build']:.1f} s without the build")

    def test_triton_passes(self):
        record = judge("honest_triton")
        self.assertEqual(record["status"], "PASS", record["reason"])

    def test_the_judge_is_out_of_the_solutions_reach(self):
        record = judge("reads_judge", trials=1)  # its buffers opened through CUDA IPC all the same
        self.assertEqual(record["status"], "PASS", record["reason"])

    def test_the_solution_sees_the_judges_gpu_alone(self):
        # With several GPUs its CUDA_VISIBLE_DEVICES names the judge's by UUID and its confinement
        # opens only that GPU's device file; AUTOKERNEL_SOLE_GPU_BY_UUID=1 takes that path on one
        # GPU too (the judge's buffers then reopened on the solver's cuda:0).
        for by_uuid in ("0", "1"):
            with self.subTest(by_uuid=by_uuid), mock.patch.dict(os.environ, {"AUTOKERNEL_SOLE_GPU_BY_UUID": by_uuid}):
                record = judge("sees_one_gpu")
                self.assertEqual(record["status"], "PASS", record["reason"])

    def test_every_exploit_is_rejected_and_the_next_evaluation_is_unaffected(self):
        for solution, (status, words) in EXPECTED.items():
            with self.subTest(solution):
                record = judge(solution, settings=Settings(call_timeout_s=5))
                self.assertEqual(record["status"], status, f"{record['phase']}: {record['reason']}")
                self.assertIn(words.lower(), record["reason"].lower())
                if solution in ("oom_hog", "hangs_later", "exits"):  # the device's memory, a killed process
                    after = judge("honest_softmax")
                    self.assertEqual(after["status"], "PASS", f"after {solution}: {after['reason']}")


if __name__ == "__main__":
    unittest.main()
