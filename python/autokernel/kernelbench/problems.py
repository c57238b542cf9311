"""KernelBench problems: a directory of levels (`level1/`, `level2/`, ..., or `KernelBench/levelN/`
in a checkout of the repository) holding `<number>_<name>.py` files. Nothing is fetched: the
user's own directory is read.

Loading a problem runs its file: the problem is the trusted reference. A file without class Model
(an nn.Module) or get_inputs() is a ProblemError with a one-line reason. KernelBench's order of
seeding is kept: the seed, get_init_inputs(), the seed again, Model(*init_inputs), so a solution
built the same way gets the same weights.
"""
import importlib.util
import itertools
import os
import pathlib
import re
from dataclasses import dataclass

import torch
from torch import nn

LEVEL_DIR = re.compile(r"level(\d+)$")
PROBLEM_FILE = re.compile(r"(\d+)_(.+)\.py$")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# The project's copy of KernelBench's problems (../shared/kernelbench beside the checkout)
SHARED_DIR = pathlib.Path(__file__).resolve().parents[4] / "shared" / "kernelbench"


def default_directory(given=None):
    return given or os.environ.get("AUTOKERNEL_KERNELBENCH") or str(SHARED_DIR)


def numbers(text):
    """'1,23,95' -> {1, 23, 95}; None for no selection."""
    try:
        return {int(v) for v in text.split(",")} if text else None
    except ValueError:
        raise ProblemError(f"bad problem numbers '{text}': expected e.g. 1,23,95") from None


class ProblemError(Exception):
    """A problem directory or file that is not in KernelBench's format; the message is one line."""


@dataclass(frozen=True)
class Problem:
    level: int  # 0 for a file outside a levelN directory
    number: int
    name: str
    path: pathlib.Path

    @property
    def key(self):
        """'level1/23_Softmax.py', the name KernelBench and our records use."""
        return f"level{self.level}/{self.path.name}" if self.level else self.path.name


def problem_of_path(path):
    path = pathlib.Path(path).resolve()
    match = PROBLEM_FILE.match(path.name)
    level = LEVEL_DIR.match(path.parent.name)
    number, name = (int(match.group(1)), match.group(2)) if match else (0, path.stem)
    return Problem(int(level.group(1)) if level else 0, number, name, path)


def levels_root(directory):
    """The directory holding levelN/: the given one, or its KernelBench/ (a repository checkout)."""
    directory = pathlib.Path(directory)
    for root in (directory, directory / "KernelBench"):
        if root.is_dir() and any(LEVEL_DIR.match(p.name) for p in root.iterdir() if p.is_dir()):
            return root
    raise ProblemError(f"{directory} holds no level1/, level2/, ... directories of KernelBench problems")


def discover(directory, levels=None, numbers=None):
    """The problems under `directory`, by level then number; only `levels` / `numbers` when given."""
    root = levels_root(directory)
    found = []
    for level_dir in root.iterdir():
        match = LEVEL_DIR.match(level_dir.name)
        if not match or not level_dir.is_dir() or (levels and int(match.group(1)) not in levels):
            continue
        for file in level_dir.glob("*.py"):
            problem = problem_of_path(file)
            if PROBLEM_FILE.match(file.name) and (not numbers or problem.number in numbers):
                found.append(problem)
    return sorted(found, key=lambda p: (p.level, p.number))


def find(directory, spec):
    """A problem named by a path that exists, or relative to the directory's levels
    ('level1/23_Softmax.py'), or by level and number ('level1/23')."""
    if pathlib.Path(spec).is_file():
        return problem_of_path(spec)
    root = levels_root(directory)
    if (root / spec).is_file():
        return problem_of_path(root / spec)
    level_text, _, number_text = spec.rstrip("/").partition("/")
    level = LEVEL_DIR.match(level_text)
    if level and number_text.isdigit():
        for problem in discover(root, {int(level.group(1))}, {int(number_text)}):
            return problem
    raise ProblemError(f"no problem {spec} (in {root} or as a file)")


@dataclass
class Loaded:
    problem: Problem
    Model: type
    get_inputs: object
    get_init_inputs: object


_counter = itertools.count()


def import_file(path, prefix):
    """Runs a Python file as a module of its own (a unique name: two problems may share a stem)."""
    path = pathlib.Path(path)
    spec = importlib.util.spec_from_file_location(f"{prefix}_{next(_counter)}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(problem, shrink=1):
    """The problem's Model and input functions. With `shrink` > 1, every size constant of the file
    (a module-level integer of 64 or more, alone or in a tuple) is divided by it first: a quick run
    of the real problem on a small machine, its operators and their layouts unchanged."""
    problem = problem if isinstance(problem, Problem) else problem_of_path(problem)
    if not problem.path.is_file():
        raise ProblemError(f"problem file not found: {problem.path}")
    try:
        module = import_file(problem.path, "kernelbench_problem")
    except Exception as e:
        raise ProblemError(f"{problem.key} does not import: {type(e).__name__}: {first_line(e)}") from None
    if shrink > 1:
        _shrink(module, shrink)
    model = getattr(module, "Model", None)
    if not (isinstance(model, type) and issubclass(model, nn.Module)):
        raise ProblemError(f"{problem.key} has no class Model (a torch.nn.Module)")
    if not callable(getattr(module, "get_inputs", None)):
        raise ProblemError(f"{problem.key} has no get_inputs()")
    init = getattr(module, "get_init_inputs", None)
    return Loaded(problem, model, module.get_inputs, init if callable(init) else (lambda: []))


def _shrink(module, factor):
    def smaller(value):
        if type(value) is int and value >= 64:
            return max(1, value // factor)
        return value

    for name, value in list(vars(module).items()):
        if name.startswith("_"):
            continue
        if type(value) is int:
            setattr(module, name, smaller(value))
        elif type(value) is tuple and all(type(v) is int for v in value):
            setattr(module, name, tuple(smaller(v) for v in value))


def build(cls, loaded, seed, device, dtype):
    """cls (the reference Model, or a solution's ModelNew) built as KernelBench builds it."""
    torch.manual_seed(seed)
    init = loaded.get_init_inputs()
    torch.manual_seed(seed)
    model = cls(*init)
    return model.to(device=device, dtype=dtype) if isinstance(model, nn.Module) else model


def make_inputs(loaded, seed, device, dtype):
    """One input set: get_inputs() under the seed, made on the device (so a large input is not
    drawn on the host first), floating tensors in the dtype."""
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = list(loaded.get_inputs())
    return [_placed(x, device, dtype) for x in inputs]


def _placed(x, device, dtype):
    if not isinstance(x, torch.Tensor):
        return x
    x = x.to(device)
    return x.to(dtype) if x.is_floating_point() else x


def shapes(loaded):
    """[(shape, dtype)] of the inputs without making them (the meta device); None where that fails."""
    try:
        with torch.device("meta"):
            inputs = loaded.get_inputs()
        return [(tuple(x.shape), str(x.dtype).replace("torch.", "")) if isinstance(x, torch.Tensor) else (None, repr(x))
                for x in inputs]
    except Exception:
        return None


def first_line(error):
    return (str(error).splitlines() or [""])[0][:300]
