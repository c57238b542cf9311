"""A workspace's model (its profile's spec, input shape, dtype and seed) as a KernelBench problem, and
the ModelNew that runs it with our kernels: `autokernel verify`'s verdict comes from the judge
(judge.py), as a KernelBench solution's does, never from a process that loaded a kernel.

verify's own Python process loads the kernels to decide which to plug in; whatever it reports is
the kernels' word. The judge builds the same model from the same seed, draws every input from
seeds it keeps, runs the reference, keeps the clock and compares the outputs, while the model with
the kernels applied runs in a confined solution process of its own (solver.py) that only ever
sees the judge's shared buffers.

The C++ verify writes, in a directory of its own, model.json (the profile's model) and two files:

    problem.py:   from autokernel.kernelbench.model_problem import problem
                  Model, get_inputs, get_init_inputs = problem(".../model.json")
    solution.py:  from autokernel.kernelbench.model_problem import solution
                  ModelNew = solution(".../model.json", ".../kernels.json", ["rmsnorm_...", ...])

A model's output (a tensor, a tuple, a Hugging Face ModelOutput with its cache) is given to the
judge as the flat tuple of its tensors, in the order verify compares them (outputs.flatten).
"""
import json
import pathlib

import torch
from torch import nn

from .. import loading
from ..outputs import flatten

# The model built last in this process: get_inputs draws inputs as it does (its shapes, its vocabulary)
_last_built = {}


def _read(path):
    document = json.loads(pathlib.Path(path).read_text())
    missing = [key for key in ("spec", "input_shape", "dtype", "device") if key not in document]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)}")
    return document


def _flat(output):
    return tuple(tensor for _, tensor in flatten(output))


def problem(path):
    """(Model, get_inputs, get_init_inputs) for the model described in the JSON file at `path`."""
    model = _read(path)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            loaded = loading.load(model["spec"], ",".join(map(str, model["input_shape"])), model["dtype"],
                                  model["device"], model.get("seed", 0))
            from ..runtime import capture

            # a transformers cache in the outputs is flattened alike in every process (apply registers it too)
            capture.register_transformers_caches()
            self.inner = loaded.model
            _last_built["loaded"] = loaded

        def forward(self, *inputs):
            return _flat(self.inner(*inputs))

    def get_inputs():
        loaded = _last_built.get("loaded")
        if loaded is None:
            raise RuntimeError("get_inputs() before Model(): the model's own input drawer makes the inputs")
        # The judge seeded torch's generator: one draw of it seeds the model's own input maker,
        # which draws with a generator of its own on the CPU and places the inputs itself: out of
        # the judge's device context (under torch.device("cuda") a CPU generator is an error).
        with torch.device("cpu"):
            return list(loaded.draw(int(torch.randint(0, 2**62, (1,)))))

    return Model, get_inputs, lambda: []


def solution(path, manifest_path, kernels):
    """ModelNew: the problem's Model with `kernels` (names in the manifest at `manifest_path`)
    applied as a user applies them (autokernel.apply on the model's own inputs), before torch.compile
    wraps it where the judge times it compiled. A site whose kernel refuses a call runs PyTorch, as
    in the user's model."""
    Model, _, _ = problem(path)
    names = list(kernels)

    class ModelNew(Model):
        def __init__(self):
            super().__init__()
            from ..runtime import apply as applying
            from ..runtime import manifest

            registered, _, not_loaded = manifest.load(manifest_path, names=set(names))
            if len(registered) != len(names):
                raise RuntimeError(f"of {len(names)} kernels, {len(registered)} load here"
                                   + (f": {not_loaded}" if not_loaded else ""))
            applying.apply(self.inner, _last_built["loaded"].inputs, kernels=names)

    ModelNew.__qualname__ = ModelNew.__name__ = "ModelNew"
    return ModelNew
