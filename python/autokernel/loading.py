"""A model and its inputs from a command line's --model, --input-shape, --dtype and --device: a
shipped model by name (models/), or path/to/file.py:Class for one of the user's. Every failure is
a BridgeError with a one-line reason.

A user's class is built with no arguments. Its inputs come from its own
`make_inputs(shape, device, generator)` if it has one; else token ids below its `vocab_size` if
it has that attribute; else a float tensor of the input shape. Its default input shape is its
`default_input_shape`, if any.
"""
import contextlib
import importlib.util
import pathlib
from dataclasses import dataclass
from typing import Callable, Optional

import torch
from torch import nn

from . import models
from .runtime.abi import TORCH_DTYPES


class BridgeError(Exception):
    """A one-line reason the bridge cannot do what it was asked; exit code 2 (usage) or 1."""

    def __init__(self, message, usage=True):
        super().__init__(message)
        self.usage = usage


def one_line(error):
    """An exception as one line: its type and first line, and the first later line that names an
    error, which says what went wrong (a compiler's first error line for a build; the error a
    wrapped traceback ends with: Inductor's SubprocException begins "An exception occurred in a
    subprocess:"). A traceback's frame lines (File "...") do not count, whatever their paths say."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines[1:]:
        if "error" in line.lower() and not line.startswith('File "'):
            return f"{type(error).__name__}: {lines[0][:120]} ... {line[:200]}"
    return f"{type(error).__name__}: {(lines or [''])[0][:300]}"


@dataclass
class Loaded:
    spec: str
    model: nn.Module
    inputs: tuple
    shape: tuple
    dtype: torch.dtype
    device: torch.device
    # draw(seed): another set of inputs like `inputs` (same shapes and dtypes), from that seed
    draw: Optional[Callable[[int], tuple]] = None


def parse_shape(text):
    try:
        shape = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise BridgeError(f"bad --input-shape '{text}': expected numbers such as 8,512") from None
    if not shape or any(v <= 0 for v in shape):
        raise BridgeError(f"bad --input-shape '{text}': every size must be positive")
    return shape


def pick_device(name):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise BridgeError("--device cuda, but PyTorch sees no CUDA GPU")
    if name not in ("cuda", "cpu"):
        raise BridgeError(f"unknown --device '{name}' (cuda, cpu or auto)")
    return torch.device(name)


def _user_class(spec):
    path, _, class_name = spec.rpartition(":")
    file = pathlib.Path(path)
    if not file.is_file():
        raise BridgeError(f"model file not found: {path}")
    module_spec = importlib.util.spec_from_file_location(f"autokernel_user_model_{file.stem}", file)
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:
        raise BridgeError(f"{path} does not import: {type(e).__name__}: {e}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise BridgeError(f"{path} has no class {class_name}")
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise BridgeError(f"{path}:{class_name} is not a torch.nn.Module class")
    return cls


def _user_model(spec, shape_text):
    cls = _user_class(spec)
    try:
        model = cls()
    except Exception as e:
        raise BridgeError(f"{spec}: building the model with no arguments failed: {type(e).__name__}: {e}") from None
    default = getattr(model, "default_input_shape", None)
    if shape_text is None and default is None:
        raise BridgeError(f"{spec} has no default_input_shape: pass --input-shape")
    shape = parse_shape(shape_text) if shape_text is not None else tuple(default)

    def make_inputs(model, shape, device, generator):
        if hasattr(model, "make_inputs"):
            return tuple(model.make_inputs(shape, device, generator))
        if hasattr(model, "vocab_size"):
            return (torch.randint(0, model.vocab_size, shape, generator=generator).to(device),)
        return (torch.randn(shape, generator=generator).to(device),)

    return model, shape, make_inputs


def load(spec, shape_text, dtype_name, device_name, seed=0):
    """Builds the model (seeded), moves it to the device and dtype, and draws its inputs."""
    if dtype_name not in TORCH_DTYPES:
        raise BridgeError(f"unknown --dtype '{dtype_name}' (fp32, fp16 or bf16)")
    dtype, device = TORCH_DTYPES[dtype_name], pick_device(device_name)
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    if ":" in spec and spec.rpartition(":")[0].endswith(".py"):
        model, shape, make_inputs = _user_model(spec, shape_text)
    else:
        try:
            shipped = models.get(spec)
        except KeyError as e:
            raise BridgeError(str(e.args[0]) if e.args else f"unknown model {spec}") from None
        # Built where it will run (torch >= 2.0): a 7B model initialised on a GPU, not on the CPU first.
        with torch.device(device) if hasattr(torch.device, "__enter__") else contextlib.nullcontext():
            model = shipped.build()
        shape = parse_shape(shape_text) if shape_text is not None else tuple(shipped.default_shape)
        make_inputs = shipped.make_inputs
    model = model.to(device=device, dtype=dtype).eval()

    def draw(drawn_from):
        drawn = make_inputs(model, shape, device, drawn_from)
        # float inputs follow the model's dtype; token ids stay integers
        return tuple(t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in drawn)

    try:
        inputs = draw(generator)
    except ValueError as e:
        raise BridgeError(f"{spec}: bad input shape {','.join(map(str, shape))}: {e}") from None
    return Loaded(spec, model, inputs, shape, dtype, device,
                  lambda other_seed: draw(torch.Generator().manual_seed(other_seed)))


def run_model(loaded):
    """One forward pass; a model that fails on its input is a BridgeError naming the failure."""
    try:
        with torch.no_grad():
            return loaded.model(*loaded.inputs)
    except Exception as e:
        shape = ",".join(map(str, loaded.shape))
        raise BridgeError(f"{loaded.spec} does not run on input shape {shape}: {type(e).__name__}: {e}") from None
