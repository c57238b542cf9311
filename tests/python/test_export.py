"""The user's path on the CPU with the host backend: profile → extract → optimize → export, then
pip install the package into a fresh virtual environment, import it, apply it to the model and
get eager's outputs; the same export in the Hugging Face `kernels` layout loaded by the real
`kernels` package; an export for another architecture or PyTorch runs PyTorch's ops; exporting
nothing, and installing without PyTorch, are one-line errors; extract starts from a shipped
profile without running the model.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import unittest

from support import CLI, HAVE_TRANSFORMERS, MODELS, ROOT, Scratch, engine

MODEL = f"{MODELS}/hf_style.py:Qwen2Style"
# Applies the exported package to the test model and prints what ran and how far from eager.
APPLY = textwrap.dedent("""
    import importlib, json, sys, torch
    sys.path.insert(0, {models!r})
    import hf_style
    package = importlib.import_module({package!r})
    torch.manual_seed(0)
    model = hf_style.Qwen2Style().eval()
    inputs = model.make_inputs((2, 16), torch.device("cpu"), torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = model(*inputs)
    package.apply(model, inputs)
    # As the README's path goes on: compiled whole (aot_eager: Inductor's codegen would be slow here)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    with torch.no_grad():
        got = compiled(*inputs)
    report = package.report(model)
    print(json.dumps({{"error": float((got - expected).norm() / expected.norm()),
                      "plugged": len(report.plugged()), "loaded": [k.name for k in package.KERNELS],
                      "not_loaded": package.NOT_LOADED, "file": package.__file__}}))
""")
# The bridge itself, installed: autokernel.apply with a run's workspace.
BRIDGE = textwrap.dedent("""
    import json, sys, torch
    sys.path.insert(0, {models!r})
    import hf_style, autokernel
    torch.manual_seed(0)
    model = hf_style.Qwen2Style().eval()
    inputs = model.make_inputs((2, 16), torch.device("cpu"), torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = model(*inputs)
    autokernel.apply(model, inputs, workspace={workspace!r})
    with torch.no_grad():
        got = model(*inputs)
    print(json.dumps({{"error": float((got - expected).norm() / expected.norm()),
                      "plugged": len(autokernel.report(model).plugged()), "file": autokernel.__file__}}))
""")
# Applies a package to the test model traced at 2 x 16 tokens, then calls it with one token a row,
# as a decode step does: which of the package's kernels ran on that call, and how far from eager.
DECODE_STEP = textwrap.dedent("""
    import importlib, json, sys, torch
    sys.path.insert(0, {models!r})
    import hf_style
    package = importlib.import_module({package!r})
    table = importlib.import_module({package!r} + ".runtime.kernel_table").TABLE
    torch.manual_seed(0)
    model = hf_style.Qwen2Style().eval()
    generator = torch.Generator().manual_seed(0)
    prefill, step = (model.make_inputs(shape, torch.device("cpu"), generator) for shape in ((2, 16), (2, 1)))
    with torch.no_grad():
        expected = model(*step)
    package.apply(model, prefill)
    table.reset_counts()
    with torch.no_grad():
        got = model(*step)
    print(json.dumps({{"error": float((got - expected).norm() / expected.norm()),
                      "ran": sorted(name for name, calls in table.calls.items() if calls)}}))
""")


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


@unittest.skipUnless(CLI, "AK_CLI_PATH names the autokernel binary")
class Export(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = Scratch()
        cls.dir = cls.scratch.__enter__()
        # A class cleanup, unlike tearDownClass, runs also when this setUpClass fails.
        cls.addClassCleanup(cls.scratch.__exit__, None, None, None)
        cls.ws = cls.dir / "workspace"
        engine("profile", "--model", MODEL, "--workspace", str(cls.ws), "--json")
        engine("extract", "--top", "2", "--backend", "host", "--workspace", str(cls.ws), "--json")
        engine("optimize", "--workspace", str(cls.ws), "--backend", "host", "--budget", "2", "--quick", "--json")
        # verify writes the workspace's kernels.json, what autokernel.apply(workspace=...) reads
        # (--plug all: every kernel in, none left out by timing a model this small on a busy CPU)
        engine("verify", "--workspace", str(cls.ws), "--plug", "all", "--compile-modes", "none", "--iterations", "1",
               "--json")
        cls.wheel = engine("export", "--workspace", str(cls.ws), "--out", str(cls.dir / "wheel"), "--json")
        cls.hf = engine("export", "--workspace", str(cls.ws), "--out", str(cls.dir / "hf"), "--format",
                        "hf-kernels", "--json")

    def python(self, python, script, env=None):
        run = subprocess.run([python, "-c", script], capture_output=True, text=True, env=env, cwd=self.dir)
        return run

    def test_the_user_path_pip_install_import_apply_compile(self):
        # The export and the bridge (./python) are built into wheels here (this Python has
        # setuptools), then installed into a fresh environment, offline.
        dist = self.dir / "dist"
        # (the bridge from a copy: an in-tree build leaves build/ and *.egg-info behind)
        bridge = shutil.copytree(ROOT / "python", self.dir / "bridge", ignore=shutil.ignore_patterns("__pycache__"))
        for project in (self.dir / "wheel", bridge):
            subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                            "--no-build-isolation", "--wheel-dir", str(dist), str(project)],
                           check=True, capture_output=True)
        self.assertEqual(len(list(dist.glob("*.whl"))), 2, list(dist.iterdir()))
        venv = self.dir / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", *map(str, dist.glob("*.whl"))],
                       check=True, capture_output=True)
        package = self.wheel["import"]
        clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        # A fresh environment has no PyTorch: importing says so in one line.
        bare = self.python(python, f"import {package}", clean)
        self.assertNotEqual(bare.returncode, 0)
        self.assertIn("needs PyTorch in this Python environment: pip install torch", bare.stderr.splitlines()[-1])
        bare = self.python(python, "import autokernel", clean)
        self.assertIn("autokernel needs PyTorch (>= 2.5)", bare.stderr.splitlines()[-1])
        # With this Python's PyTorch visible (a .pth line), the installed package runs the kernels.
        site = pathlib.Path(subprocess.check_output([python, "-c", "import site; print(site.getsitepackages()[0])"],
                                                    text=True).strip())
        (site / "project_torch.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        run = self.python(python, APPLY.format(models=str(MODELS), package=package), clean)
        self.assertEqual(run.returncode, 0, run.stderr)
        answer = last_json(run.stdout)
        self.assertTrue(answer["file"].startswith(str(venv)), answer["file"])  # the installed copy
        self.assertEqual(len(answer["loaded"]), 2, answer)
        self.assertGreater(answer["plugged"], 0)
        self.assertLess(answer["error"], 1e-4)
        # The bridge, installed the same way, applies a run's workspace.
        run = self.python(python, BRIDGE.format(models=str(MODELS), workspace=str(self.ws)), clean)
        self.assertEqual(run.returncode, 0, run.stderr)
        answer = last_json(run.stdout)
        self.assertTrue(answer["file"].startswith(str(venv)), answer["file"])
        self.assertGreater(answer["plugged"], 0)
        self.assertLess(answer["error"], 1e-4)

    def test_the_kernels_package_loads_the_hf_export(self):
        # The `kernels` loader imports the variant directory as a package: the same apply() and ops.
        loader = textwrap.dedent(f"""
            import pathlib, sys, kernels
            module = kernels.get_local_kernel(pathlib.Path({str(self.dir / 'hf')!r}), backend="cpu")
            sys.modules["exported"] = module
        """)
        run = self.python(sys.executable, loader + APPLY.format(models=str(MODELS), package="exported"),
                          dict(os.environ, HF_HUB_OFFLINE="1"))
        self.assertEqual(run.returncode, 0, run.stderr)
        answer = last_json(run.stdout)
        self.assertEqual(len(answer["loaded"]), 2, answer)
        self.assertGreater(answer["plugged"], 0)
        self.assertLess(answer["error"], 1e-4)
        self.assertIn("/build/torch", answer["file"])

    def test_an_export_for_another_machine_runs_pytorch(self):
        for field, value, reason in (("arch", "sm_90a", "this device is host:"),
                                     ("torch", "1.13.1", "built for PyTorch 1.13")):
            with self.subTest(field):
                copy = self.dir / f"moved-{field}"
                shutil.copytree(self.dir / "wheel", copy)
                manifest_file = copy / self.wheel["import"] / "kernels.json"
                manifest = json.loads(manifest_file.read_text())
                if field == "arch":
                    for kernel in manifest["kernels"]:
                        kernel["arch"] = value
                else:
                    manifest["built_with"]["torch"] = value
                manifest_file.write_text(json.dumps(manifest))
                run = self.python(sys.executable, APPLY.format(models=str(MODELS), package=self.wheel["import"]),
                                  dict(os.environ, PYTHONPATH=str(copy)))
                self.assertEqual(run.returncode, 0, run.stderr)
                answer = last_json(run.stdout)
                self.assertEqual((answer["loaded"], answer["plugged"]), ([], 0))
                self.assertIn(reason, answer["not_loaded"])
                self.assertIn("PyTorch's ops run instead", run.stderr)
                self.assertLess(answer["error"], 1e-6)

    def test_two_runs_make_one_package_whose_kernels_serve_both_calls(self):
        # A decode step's run (one token a row) beside the prefill's: one package with the kernels
        # of both, each once; exporting one workspace twice adds nothing.
        decode = self.dir / "ws-decode"
        engine("profile", "--model", MODEL, "--input-shape", "2,1", "--workspace", str(decode), "--json")
        plan = engine("extract", "--top", "4", "--backend", "host", "--workspace", str(decode), "--json")
        engine("optimize", "--workspace", str(decode), "--backend", "host", "--budget", str(len(plan["kernels"])),
               "--quick", "--json")
        merged = engine("export", "--workspace", str(self.ws), "--workspace", str(decode), "--workspace",
                        str(self.ws), "--out", str(self.dir / "merged"), "--json")
        names = [k["name"] for k in merged["kernels"]]
        prefill_names = {k["name"] for k in self.wheel["kernels"]}
        decode_names = {k["name"] for k in plan["kernels"]}
        self.assertEqual(len(names), len(set(names)), names)
        self.assertEqual(set(names), prefill_names | decode_names)
        sources = self.dir / "merged" / merged["import"] / "sources"
        self.assertEqual({p.name for p in sources.iterdir()}, set(names))
        run = self.python(sys.executable, DECODE_STEP.format(models=str(MODELS), package=merged["import"]),
                          dict(os.environ, PYTHONPATH=str(self.dir / "merged")))
        self.assertEqual(run.returncode, 0, run.stderr)
        answer = last_json(run.stdout)
        self.assertLess(answer["error"], 1e-4)
        # The decode step's norms and Linears are whole modules: called unlike the traced call,
        # they run the kernels checked for their one-token problems, never the prefill's.
        served = {k["name"] for k in plan["kernels"] if k["op"] in ("rmsnorm", "matmul")}
        self.assertTrue(served, plan)
        self.assertTrue(set(answer["ran"]) & served, (answer, served))
        self.assertFalse(set(answer["ran"]) & (prefill_names - decode_names), answer)

    def test_runs_of_two_devices_make_no_package(self):
        other = shutil.copytree(self.ws, self.dir / "other-device")
        profile = json.loads((other / "profile.json").read_text())
        profile["device"]["type"] = "cuda"
        (other / "profile.json").write_text(json.dumps(profile))
        run = engine("export", "--workspace", str(self.ws), "--workspace", str(other), "--out",
                     str(self.dir / "two-devices"), check=False)
        self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
        self.assertIn("was profiled on another device", run.stderr.strip().splitlines()[-1])
        self.assertFalse((self.dir / "two-devices").exists())

    def test_what_the_judge_did_not_pass_is_not_exported(self):
        # verify.json is what verify's own process wrote, and that process loaded the kernels;
        # judged.json is the engine's, from the judge. A workspace the judge rejected exports
        # nothing; a kernel verify.json says is in, which the judge did not pass plugged in, is
        # exported out.
        judged = json.loads((self.ws / "judged.json").read_text())
        self.assertEqual([run["record"]["status"] for run in judged], ["PASS"], judged)
        self.assertTrue(judged[0]["plugged"])
        rejected = shutil.copytree(self.ws, self.dir / "rejected")
        judged[0]["record"].update(status="INCORRECT", phase="trial 1 of 5", reason="output 0: relative error 0.7")
        (rejected / "judged.json").write_text(json.dumps(judged))
        run = engine("export", "--workspace", str(rejected), "--out", str(self.dir / "nothing"), check=False)
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        self.assertIn("verify's judge rejected the model", run.stderr.strip().splitlines()[-1])
        self.assertIn("INCORRECT in trial 1 of 5", run.stderr.strip().splitlines()[-1])
        self.assertFalse((self.dir / "nothing").exists())
        narrower = shutil.copytree(self.ws, self.dir / "narrower")
        judged[0]["record"]["status"] = "PASS"
        before = {k["name"]: k["use"] for k in self.wheel["kernels"]}
        out_of_it = next(name for name in judged[0]["kernels"] if before.get(name))
        judged[0]["kernels"].remove(out_of_it)
        (narrower / "judged.json").write_text(json.dumps(judged))
        exported = engine("export", "--workspace", str(narrower), "--out", str(self.dir / "narrower-out"), "--json")
        uses = {k["name"]: k["use"] for k in exported["kernels"]}
        self.assertIn(out_of_it, uses, exported)
        self.assertFalse(uses[out_of_it], exported)
        self.assertTrue(all(uses[name] for name in judged[0]["kernels"] if name in uses), exported)

    def test_nothing_to_export_is_one_line(self):
        empty = self.dir / "empty"
        empty.mkdir()
        cases = [(empty, "run `autokernel profile"),
                 (self.dir / "no-run", "no optimization run"),
                 (self.dir / "all-failed", "passed the harness in its run: nothing to export")]
        shutil.copytree(self.ws, self.dir / "no-run", ignore=shutil.ignore_patterns("run.json"))
        shutil.copytree(self.ws, self.dir / "all-failed")
        run_state = json.loads((self.dir / "all-failed" / "run.json").read_text())
        for kernel in run_state["kernels"]:  # as a run whose every version failed the harness leaves it
            kernel["best_us"] = 0.0
        (self.dir / "all-failed" / "run.json").write_text(json.dumps(run_state))
        for workspace, message in cases:
            run = engine("export", "--workspace", str(workspace), "--out", str(self.dir / "nothing"), check=False)
            self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
            self.assertIn(message, run.stderr.strip().splitlines()[-1])
            self.assertFalse((self.dir / "nothing").exists())


# A user's script with transformers' own class: builds its LlamaForCausalLM, applies the installed
# export to it with one call (given the ids by position), then calls the model as transformers'
# users do (by name: model(**tokenizer(...))), eager and compiled whole, and says which of our
# kernels ran in each.
TRANSFORMERS_USER = textwrap.dedent("""
    import importlib, json, sys, torch
    sys.path.insert(0, {models!r})
    import tiny_hf_llama
    package = importlib.import_module({package!r})
    table = importlib.import_module({package!r} + ".runtime.kernel_table").TABLE
    model = tiny_hf_llama.build().eval()
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    package.apply(model, (ids,))
    answer = {{"plugged": sorted({{m.op for m in package.report(model).plugged()}})}}
    for mode, run in (("eager", model), ("compiled", torch.compile(model, backend="aot_eager", fullgraph=True))):
        table.reset_counts()
        with torch.no_grad():
            got = run(input_ids=ids).logits
        answer[mode] = float((got - expected).norm() / expected.norm())
        answer[mode + "_ran"] = sorted({{k.op for k in package.KERNELS if table.calls.get(k.name)}})
    print(json.dumps(answer))
""")


@unittest.skipUnless(CLI, "AK_CLI_PATH names the autokernel binary")
@unittest.skipUnless(HAVE_TRANSFORMERS, "transformers is not installed (python/requirements.txt installs it)")
class TransformersUserPath(unittest.TestCase):
    def test_the_whole_path_on_transformers_llama_then_one_call_in_the_users_script(self):
        with Scratch() as directory:
            ws = directory / "workspace"
            engine("profile", "--model", f"{MODELS}/tiny_hf_llama.py:TinyLlama", "--workspace", str(ws), "--json")
            # The tiny Llama has three matmul problems (q/o, k/v and the head): four operators always
            # include one that is not a matmul, whichever order the CPU's timings put them in.
            plan = engine("extract", "--top", "4", "--backend", "host", "--workspace", str(ws), "--json")
            # one experiment per kernel: each one's defaults, through the harness
            engine("optimize", "--workspace", str(ws), "--backend", "host", "--budget", str(len(plan["kernels"])),
                   "--quick", "--json")
            engine("verify", "--workspace", str(ws), "--plug", "all", "--compile-modes", "none", "--iterations",
                   "1", "--json")
            export = engine("export", "--workspace", str(ws), "--out", str(directory / "wheel"), "--json")
            run = subprocess.run([sys.executable, "-c", TRANSFORMERS_USER.format(models=str(MODELS),
                                                                               package=export["import"])],
                                 capture_output=True, text=True, cwd=directory,
                                 env=dict(os.environ, PYTHONPATH=str(directory / "wheel"), HF_HUB_OFFLINE="1"))
            self.assertEqual(run.returncode, 0, run.stderr)
            answer = last_json(run.stdout)
            # The top operators by CPU time vary from run to run; each one extracted must be plugged
            # and must run, whether called by name or (as traced) by position. A matmul kernel may
            # find its sites taken by fused_mlp: it need not run.
            extracted = {k["op"] for k in plan["kernels"]}
            must_run = extracted - {"matmul"}
            self.assertTrue(must_run, plan)
            self.assertTrue(must_run <= set(answer["plugged"]), (extracted, answer))
            for mode in ("eager", "compiled"):
                ran = set(answer[mode + "_ran"])
                self.assertTrue(must_run <= ran <= extracted, (mode, extracted, answer))
                self.assertLess(answer[mode], 1e-4)


@unittest.skipUnless(CLI, "AK_CLI_PATH names the autokernel binary")
class ShippedProfiles(unittest.TestCase):
    def test_extract_starts_from_a_shipped_profile_without_running_the_model(self):
        with Scratch() as directory:
            ws = directory / "workspace"
            # No Python at all: the model cannot run, extract must not need it.
            env = dict(os.environ, AUTOKERNEL_PYTHON="/bin/false")
            run = engine("extract", "--model", "llama", "--workspace", str(ws), "--top", "3", check=False, env=env)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("using the shipped profile of llama", run.stderr)
            plan = json.loads((ws / "plan.json").read_text())
            self.assertEqual(len(plan["kernels"]), 3)
            self.assertTrue(json.loads((ws / "profile.json").read_text())["shipped_from"])
            unknown = engine("extract", "--model", "resnet9000", "--workspace", str(directory / "other"),
                             check=False, env=env)
            self.assertEqual(unknown.returncode, 2)
            self.assertIn("none shipped", unknown.stderr.strip().splitlines()[-1])


if __name__ == "__main__":
    unittest.main()
