"""Inside the solution process: which functions of time and torch the solution replaced (a timer
patched to report less, torch.allclose made to agree, Tensor.copy_ turned into a no-op...).

The verdict never depends on this: the judge keeps its own clock and compares in its own process,
so a patch there changes nothing the judge measures. This names the attempt as the reason the
solution is rejected. It compares every callable in the watched namespaces with a snapshot taken
before the solution was imported; a new callable on a watched class counts too where it shadows
one the class inherits (not a new name, such as the nn.Module.smart_apply that transformers adds).
Torch's own wrappers around the originals (made when torch._dynamo loads) are not replacements;
submodules that torch imports lazily are not functions and are ignored.
"""
import os
import time
import types

import torch
import torch.nn.functional as F
from torch import nn


def _watched():
    owners = {"time": time, "torch": torch, "torch.nn.functional": F, "torch.Tensor": torch.Tensor,
              "torch._C.TensorBase": torch._C.TensorBase, "torch.nn.Module": nn.Module,
              "torch.testing": torch.testing, "torch.cuda": torch.cuda}
    if hasattr(torch.cuda, "Event"):
        owners.update({"torch.cuda.Event": torch.cuda.Event, "torch.cuda.Stream": torch.cuda.Stream})
    return owners


def _functions(owner):
    entries = {}
    for name, value in list(vars(owner).items()):
        function = callable(value) or isinstance(value, (staticmethod, classmethod))
        if isinstance(value, types.ModuleType) or not function:
            continue
        entries[name] = value
    return entries


_TORCH_DIR = os.path.dirname(torch.__file__)


def _torch_wrapper_of(value, original):
    """True for torch's own wrapper around the original (torch._dynamo wraps torch.manual_seed when
    it loads and nn.Module.__init__ when it compiles; its wrappers call what they wrap): code in
    torch's files that holds the original itself. A wrapper written elsewhere, or one around
    anything but the original, is not."""
    value = getattr(value, "__func__", value)
    original = getattr(original, "__func__", original)
    code = getattr(value, "__code__", None)
    if code is None or not os.path.abspath(code.co_filename).startswith(_TORCH_DIR):
        return False
    held = [getattr(value, "__wrapped__", None)] + [cell.cell_contents for cell in value.__closure__ or ()]
    return any(h is original for h in held)


def _inherited(owner, name):
    """Whether class `owner` had `name` from a base: a new callable there shadows the original."""
    return any(name in vars(base) for base in owner.__mro__[1:])


class Snapshot:
    def __init__(self):
        self._owners = _watched()
        self._before = {name: _functions(owner) for name, owner in self._owners.items()}

    def replaced(self):
        """'time.perf_counter', 'torch.allclose', ... : what no longer is what it was."""
        changed = []
        for owner_name, owner in self._owners.items():
            before, now = self._before[owner_name], _functions(owner)
            is_class = isinstance(owner, type)
            for name, value in now.items():
                original = before.get(name)
                if original is None and not (is_class and _inherited(owner, name)):
                    continue  # a module's new function (torch loads some lazily), a class's new name
                    # that shadows nothing (transformers adds nn.Module.smart_apply when it builds a model)
                if value is not original and not _torch_wrapper_of(value, original):
                    changed.append(f"{owner_name}.{name}")
            changed.extend(f"{owner_name}.{name}" for name in before if name not in now)
        return changed
