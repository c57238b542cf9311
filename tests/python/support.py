"""What the bridge's tests share: the CLI ($AK_CLI_PATH), the models written for the tests
(tests/models), host kernel modules built by the engine itself, and scratch directories that are
removed afterwards, and a test case with the host kernels of the test LLaMA registered."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "models"
CLI = os.environ.get("AK_CLI_PATH")
if str(MODELS) not in sys.path:
    sys.path.insert(0, str(MODELS))

import hf_style  # noqa: E402 (from MODELS, just put on the path)

try:
    import transformers  # noqa: F401

    HAVE_TRANSFORMERS = True
except ImportError:
    HAVE_TRANSFORMERS = False

import autokernel  # noqa: E402
from autokernel.runtime import capture, rewrite  # noqa: E402
from autokernel.runtime.kernel_table import TABLE, Kernel, host_arch  # noqa: E402


def engine(*args, check=True, env=None):
    """Runs the autokernel CLI; its JSON answer (check), or the completed process."""
    run = subprocess.run([CLI, *args], capture_output=True, text=True, env=env)
    if check and run.returncode != 0:
        raise AssertionError(f"autokernel {' '.join(args)} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    return json.loads(run.stdout[run.stdout.find("{"):]) if check else run


_modules = {}
# Small problems for building (and smoke-testing) the host starters: the ops' standard ones are
# GPU sizes.
SMALL = {"matmul": "16x16x16", "softmax": "4x32", "layernorm": "4x32", "rmsnorm": "4x32",
         "flash_attention": "1x2x8x16:causal=1", "fused_mlp": "4x16x24", "cross_entropy": "4x32",
         "rotary_embedding": "1x2x8x16", "reduce": "4x32"}


def host_module(op, source=None):
    """A host kernel of an operator (its starter, or the file `source`), built by the engine
    (`bench --quick`, through its cache)."""
    source = str(source or ROOT / "kernels" / "host" / f"{op}.cpp")
    if source not in _modules:
        # The module is what is wanted (whatever the harness said of it): the tests check its
        # results against eager themselves.
        with Scratch() as scratch:
            run = engine("bench", source, "--op", op, "--shape", SMALL[op], "--dtype", "fp32", "--quick", "--json",
                         "--max-time", "0.05", "--results", str(scratch / "results.tsv"), check=False)
        answer = json.loads(run.stdout[run.stdout.find("{"):] or "{}")
        if not pathlib.Path(answer.get("module", "")).is_file():
            raise AssertionError(f"the engine did not build {source}:\n{run.stdout}\n{run.stderr}")
        _modules[source] = answer["module"]
    return _modules[source]


class Scratch:
    """A temporary directory, removed with everything in it."""

    def __enter__(self):
        self.path = pathlib.Path(tempfile.mkdtemp(prefix="autokernel-test-"))
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)


def build(model_class, dtype=torch.float32, seed=0, shape=(2, 16)):
    """A test model (seeded weights) and its inputs."""
    torch.manual_seed(seed)
    model = model_class().eval().to(dtype)
    inputs = model.make_inputs(shape, torch.device("cpu"), torch.Generator().manual_seed(seed))
    return model, tuple(inputs)


def relative_error(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / a.norm().clamp_min(1e-30))


def tensors(output):
    if isinstance(output, torch.Tensor):
        return [output]
    if hasattr(output, "to_tuple"):
        output = output.to_tuple()
    if isinstance(output, dict):
        output = list(output.values())
    return [t for item in output for t in tensors(item)] if isinstance(output, (tuple, list)) else []


def problems_of(model, inputs):
    """{op: {(problem, dtype)}} of the operators found in the model."""
    captures, _ = capture.capture(model, inputs, {})
    found, _ = rewrite.find_all(captures[0].graph)
    problems = {}
    for m in rewrite.choose(found):
        problems.setdefault(m.op, set()).add((m.problem, m.dtype_name))
    return problems


class WithKernels(unittest.TestCase):
    """Host kernels registered as checked for exactly the problems of the test model
    (hf_style.LlamaStyle, a fresh one for each test)."""

    @classmethod
    def setUpClass(cls):
        cls.model_class = hf_style.LlamaStyle
        model, inputs = build(cls.model_class)
        cls.kernels = [Kernel(f"host_{op}", op, host_module(op), host_arch(), frozenset(problems))
                       for op, problems in problems_of(model, inputs).items()]

    def setUp(self):
        self.model, self.inputs = build(self.model_class)
        for kernel in self.kernels:
            TABLE.add(kernel)
        TABLE.reset_counts()

    def tearDown(self):
        autokernel.restore(self.model)
        for kernel in self.kernels:
            TABLE.remove(kernel)

    def eager(self):
        with torch.no_grad():
            return tensors(self.model(*self.inputs))


def transformers_models():
    """{name: (config class, model class, settings, {op: sites})} of transformers' real model
    classes in small configurations (2 layers, 64 wide, vocabulary 128: random weights, nothing
    fetched), with the operator sites each has: per layer a norm before attention and one before
    the MLP plus one at the end (BERT: one after the embeddings, two per layer, one in the masked-LM
    head; Qwen3 also normalizes q and k per head), rotary on q and k, attention, SwiGLU only where
    the MLP is silu(gate) * up (Phi-3's gate and up are one projection, chunked), the loss."""
    import transformers

    common = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=64, use_cache=False)
    decoder = {"rmsnorm": 5, "rotary_embedding": 4, "flash_attention": 2, "cross_entropy": 1}
    swiglu = {**decoder, "fused_mlp": 2}
    return {
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM, {**common, "num_key_value_heads": 2},
                  swiglu),
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM, {**common, "num_key_value_heads": 1},
                  swiglu),
        "qwen3": (transformers.Qwen3Config, transformers.Qwen3ForCausalLM,
                  {**common, "num_key_value_heads": 2, "head_dim": 16}, {**swiglu, "rmsnorm": 9}),
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM,
                    {**common, "num_key_value_heads": 2}, swiglu),
        "phi3": (transformers.Phi3Config, transformers.Phi3ForCausalLM,
                 {**common, "num_key_value_heads": 2, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2},
                 swiglu),
        "gemma": (transformers.GemmaConfig, transformers.GemmaForCausalLM,
                  {**common, "num_key_value_heads": 1, "head_dim": 16}, decoder),
        "gpt_neox": (transformers.GPTNeoXConfig, transformers.GPTNeoXForCausalLM, {**common, "rotary_pct": 0.25},
                     {**decoder, "rmsnorm": 0, "layernorm": 5}),
        "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel,
                 dict(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64, use_cache=False,
                      bos_token_id=1, eos_token_id=2),
                 {"layernorm": 5, "flash_attention": 2, "cross_entropy": 1}),
        "bert": (transformers.BertConfig, transformers.BertForMaskedLM,
                 dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=64),
                 {"layernorm": 6, "flash_attention": 2, "cross_entropy": 1}),
    }
