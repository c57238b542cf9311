"""The KernelBench loader on the project's copy of levels 1 and 2 (every file found, loaded, its
inputs described without memory) and on malformed directories and files; the real references run
on the CPU, shrunk; the weights are KernelBench's (the same seed builds the same model)."""
import pathlib
import tempfile
import unittest

import torch

from autokernel.kernelbench import problems

SHARED = pathlib.Path(problems.default_directory())
TESTS = pathlib.Path(__file__).resolve().parents[1] / "kernelbench" / "problems"
# Real problems whose references run in well under a second on a CPU once shrunk by 16: a matmul,
# softmax, two norms, a reduction, a loss, attention, and level-2 fusions with weights.
SMALL = ["level1/1_Square_matrix_multiplication_.py", "level1/23_Softmax.py", "level1/36_RMSNorm_.py",
         "level1/40_LayerNorm.py", "level1/47_Sum_reduction_over_a_dimension.py", "level1/95_CrossEntropyLoss.py",
         "level1/97_ScaledDotProductAttention.py", "level2/12_Gemm_Multiply_LeakyReLU.py",
         "level2/1_Conv2D_ReLU_BiasAdd.py"]


@unittest.skipUnless((SHARED / "level1").is_dir(), "the shared KernelBench problems are not here")
class SharedLevels(unittest.TestCase):
    def test_both_levels_are_found_in_order(self):
        for level in (1, 2):
            found = problems.discover(SHARED, {level})
            self.assertEqual(len(found), 100)
            self.assertEqual([p.number for p in found], list(range(1, 101)))
            self.assertTrue(all(p.key == f"level{level}/{p.path.name}" for p in found))

    def test_every_problem_loads_and_describes_its_inputs(self):
        for problem in problems.discover(SHARED):
            with self.subTest(problem.key):
                loaded = problems.load(problem)
                self.assertTrue(issubclass(loaded.Model, torch.nn.Module))
                shapes = problems.shapes(loaded)
                self.assertTrue(shapes, "no inputs described")
                self.assertTrue(any(shape for shape, _ in shapes))

    def test_small_references_run_on_the_cpu(self):
        for key in SMALL:
            with self.subTest(key):
                loaded = problems.load(problems.find(SHARED, key), shrink=16)
                model = problems.build(loaded.Model, loaded, 42, "cpu", torch.float32)
                inputs = problems.make_inputs(loaded, 7, "cpu", torch.float32)
                with torch.no_grad():
                    out = model(*inputs)
                self.assertTrue(torch.isfinite(out).all())
                again = problems.make_inputs(loaded, 7, "cpu", torch.float32)
                self.assertTrue(all(torch.equal(a, b) for a, b in zip(inputs, again)), "a seed gives one input set")

    def test_the_seed_builds_the_same_weights(self):
        loaded = problems.load(problems.find(SHARED, "level2/12"), shrink=16)
        first, second = (problems.build(loaded.Model, loaded, 42, "cpu", torch.float32).state_dict()
                         for _ in range(2))
        self.assertTrue(first and all(torch.equal(first[k], second[k]) for k in first))
        other = problems.build(loaded.Model, loaded, 43, "cpu", torch.float32).state_dict()
        self.assertFalse(all(torch.equal(first[k], other[k]) for k in first))

    def test_shrink_divides_the_size_constants(self):
        full, small = problems.load(problems.find(SHARED, "level1/23")), problems.find(SHARED, "level1/23")
        self.assertEqual(problems.shapes(full)[0][0], (4096, 393216))
        self.assertEqual(problems.shapes(problems.load(small, shrink=16))[0][0], (256, 24576))


class Lookup(unittest.TestCase):
    def test_find_by_key_number_and_path(self):
        by_key = problems.find(TESTS, "level1/1_Softmax_wide.py")
        self.assertEqual((by_key.level, by_key.number, by_key.name), (1, 1, "Softmax_wide"))
        self.assertEqual(problems.find(TESTS, "level1/1"), by_key)
        self.assertEqual(problems.find("/nonexistent", str(by_key.path)), by_key)

    def test_a_checkout_of_the_repository_is_read_through_its_kernelbench_directory(self):
        with tempfile.TemporaryDirectory() as root:
            (pathlib.Path(root) / "KernelBench").symlink_to(TESTS)
            self.assertEqual(len(problems.discover(root, {1})), len(problems.discover(TESTS, {1})))

    def test_malformed_inputs_are_one_line_errors(self):
        cases = {
            "no class Model": lambda: problems.load(TESTS / "level2" / "2_No_model.py"),
            "no level1/": lambda: problems.discover(TESTS / "level1"),
            "no problem level1/99": lambda: problems.find(TESTS, "level1/99"),
            "bad problem numbers": lambda: problems.numbers("1,x"),
        }
        for expected, call in cases.items():
            with self.subTest(expected), self.assertRaises(problems.ProblemError) as raised:
                call()
            self.assertIn(expected, str(raised.exception))
            self.assertNotIn("\n", str(raised.exception))

    def test_a_file_without_get_inputs_or_that_does_not_import(self):
        with tempfile.TemporaryDirectory() as root:
            no_inputs = pathlib.Path(root) / "1_x.py"
            no_inputs.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
            broken = pathlib.Path(root) / "2_y.py"
            broken.write_text("import torch\nraise ValueError('half written')\n")
            with self.assertRaisesRegex(problems.ProblemError, "no get_inputs"):
                problems.load(no_inputs)
            with self.assertRaisesRegex(problems.ProblemError, "does not import: ValueError: half written"):
                problems.load(broken)


if __name__ == "__main__":
    unittest.main()
