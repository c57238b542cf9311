"""`autokernel kernelbench` as a user runs it ($AK_CLI_PATH), on the CPU: one-line errors for bad
input, eval's table and record, fast_p arithmetic from records, run finding our operators by what
the references call, optimizing our host kernels on the problem's shapes and judging a ModelNew of
them, and run with a scripted agent that cheats first and, told why it was rejected, submits an
honest solution."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

CLI = os.environ.get("AK_CLI_PATH")
HERE = pathlib.Path(__file__).resolve().parents[1] / "kernelbench"
PROBLEMS = HERE / "problems"
SOLUTIONS = HERE / "solutions"


def kernelbench(*args, timeout=600):
    return subprocess.run([CLI, "kernelbench", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def record(key, level, status, solution_us=None, eager_us=None):
    timing = {"solution": {"median_us": solution_us}, "eager": {"median_us": eager_us}} if solution_us else {}
    return {"problem": {"key": key, "level": level}, "status": status, "reason": "", "timing": timing}


@unittest.skipUnless(CLI, "AK_CLI_PATH names the autokernel binary")
class KernelBenchCli(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="autokernel-test-kb-"))
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)

    def test_bad_input_is_one_line_and_a_nonzero_exit(self):
        cases = [
            (["eval", "--problem", "level1/1", "--solution", self.dir / "missing.py"], "solution file not found"),
            (["eval", "--dir", PROBLEMS, "--problem", "level2/2_No_model.py", "--solution",
              SOLUTIONS / "honest_softmax.py"], "no class Model"),
            (["run", "--proposer", "agent", "--dir", PROBLEMS], "--proposer agent needs --agent-cmd"),
            (["score", self.dir / "nothing-here"], "no such file or directory"),
        ]
        for args, words in cases:
            with self.subTest(words):
                run = kernelbench(*args)
                self.assertEqual(run.returncode, 2, run.stderr)
                last = run.stderr.strip().splitlines()[-1]
                self.assertIn(words, last)
                self.assertTrue(last.startswith("autokernel: "))

    def test_eval_prints_the_table_and_writes_the_record(self):
        path = self.dir / "record.json"
        run = kernelbench("eval", "--dir", PROBLEMS, "--problem", "level1/1_Softmax_wide.py", "--solution",
                          SOLUTIONS / "honest_softmax.py", "--device", "cpu", "--baselines", "none",
                          "--max-time", "0.2", "--min-rounds", "3", "--trials", "2", "--record", path)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        for words in ("status       PASS", "correctness  2/2 trials", "ModelNew", "without the build"):
            self.assertIn(words, run.stdout)
        written = json.loads(path.read_text())
        self.assertEqual(written["status"], "PASS")
        self.assertGreater(written["timing"]["solution"]["median_us"], 0)

    def test_score_computes_fast_p_per_level(self):
        records = [record("level1/1", 1, "PASS", 100, 250), record("level1/2", 1, "PASS", 100, 150),
                   record("level1/3", 1, "PASS", 100, 50), record("level1/4", 1, "INCORRECT"),
                   record("level2/1", 2, "PASS"), record("level2/2", 2, "TIMEOUT")]
        for index, r in enumerate(records):
            (self.dir / f"p{index}").mkdir()
            (self.dir / f"p{index}" / "eval.json").write_text(json.dumps(r))
        run = kernelbench("score", self.dir, "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        one, two = json.loads(run.stdout)["levels"]
        self.assertEqual((one["attempted"], one["correct"]), (4, 3))
        self.assertEqual((one["fast_0"], one["fast_1"], one["fast_2"]), (0.75, 0.5, 0.25))
        self.assertAlmostEqual(one["geomean_speedup_correct"], (2.5 * 1.5 * 0.5) ** (1 / 3))
        # a correct record without a time counts for fast_0 only
        self.assertEqual((two["fast_0"], two["fast_1"]), (0.5, 0.0))

    def test_run_maps_by_what_the_references_call_optimizes_and_judges_our_kernels(self):
        # run --proposer search is map (the references profiled, our operators matched), then the
        # loop on each mapped problem's own shapes, then the judge on a ModelNew of our kernels.
        run = kernelbench("run", "--dir", PROBLEMS, "--level", "1", "--problems", "1,3", "--device", "cpu",
                          "--workspace", self.dir, "--budget", "1", "--quick", "--trials", "2", "--no-timing",
                          "--json")
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        rows = {row["key"]: row for row in json.loads(run.stdout)["problems"]}
        softmax, relu = rows["level1/1_Softmax_wide.py"], rows["level1/3_ReLU.py"]
        self.assertTrue(softmax["mapped"])
        self.assertEqual([(o["op"], o["problem"]) for o in softmax["ops"]], [("softmax", "16x32768")])
        self.assertFalse(relu["mapped"])
        self.assertEqual(relu["ops"], [])
        self.assertEqual(softmax["record"]["status"], "PASS", softmax["record"]["reason"])
        self.assertNotIn("record", relu)  # not attempted
        workspace = self.dir / "level1" / "1_Softmax_wide"
        self.assertEqual(json.loads((workspace / "run.json").read_text())["kernels"][0]["experiments"], 1)
        self.assertIn("softmax_16x32768_fp32", (workspace / "model_new.py").read_text())
        self.assertEqual(softmax["record"]["solution"], str(workspace / "model_new.py"))

    def test_run_with_an_agent_that_cheats_then_is_honest(self):
        agent = f"{sys.executable} {HERE / 'agents' / 'scripted_agent.py'} zeros,honest_softmax"
        run = kernelbench("run", "--proposer", "agent", "--agent-cmd", agent, "--attempts", "2", "--dir", PROBLEMS,
                          "--level", "1", "--problems", "1", "--device", "cpu", "--workspace", self.dir,
                          "--trials", "2", "--no-timing", "--json")
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        summary = json.loads(run.stdout)
        (row,) = summary["problems"]
        self.assertEqual((row["record"]["status"], row["record"]["attempt"]), ("PASS", 2))
        self.assertIn("level1/1_Softmax_wide.py: INCORRECT (trial 1 of 2): output 0: relative error 1", run.stderr)
        (level,) = summary["scores"]["levels"]
        self.assertEqual((level["attempted"], level["fast_0"]), (1, 1.0))


if __name__ == "__main__":
    unittest.main()
