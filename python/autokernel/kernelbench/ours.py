"""A KernelBench ModelNew made of our compiled kernels: the problem's own Model, rewritten at its
first call by the bridge's apply() (runtime/apply.py: the forward traced, our operators matched in
its graph, each site a kernel was built for replaced by the custom op that launches it through the
C ABI: the same .so the harness checked). The rest of the forward is the problem's own PyTorch.

Strict where the bridge is lenient: a rewritten site whose kernel then refuses a call (a shape or
layout it does not take) is an error, never PyTorch quietly timed under our name; so is a problem
none of whose sites our kernels serve.

`autokernel kernelbench` writes the ModelNew file:

    from autokernel.kernelbench.ours import model_new
    ModelNew = model_new("/path/level1/23_Softmax.py", [{"name": "softmax_4096x393216_fp32",
        "op": "softmax", "shape": "4096x393216", "dtype": "fp32", "module": "/cache/....so"}])
"""
import torch

from ..runtime import apply as applying
from ..runtime.kernel_table import TABLE, Kernel, device_arch
from . import problems


class KernelRefused(RuntimeError):
    pass


def _register(kernels, device):
    for k in kernels:
        TABLE.add(Kernel(k["name"], k["op"], k["module"], device_arch(device), frozenset({(k["shape"], k["dtype"])})))


def _strict(call):
    """`call`, raising when one of our sites fell back to PyTorch during it."""

    def run(*args, **kwargs):
        before = sum(TABLE.fallbacks.values())
        result = call(*args, **kwargs)
        if sum(TABLE.fallbacks.values()) != before:
            (op, reason), _ = TABLE.fallbacks.most_common(1)[0]
            raise KernelRefused(f"our {op} kernel did not run: {reason}")
        return result

    return run


def model_new(problem_path, kernels):
    """The ModelNew class for a problem: its Model, running `kernels` where they apply."""
    base = problems.load(problem_path).Model

    class ModelNew(base):
        def forward(self, *args, **kwargs):
            if "_kernelbench_applied" in self.__dict__:  # a call unlike the traced one
                return _strict(super().forward)(*args, **kwargs)
            self.__dict__["_kernelbench_applied"] = True
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            _register(kernels, tensors[0].device if tensors else torch.device("cpu"))
            applying.apply(self, args, kwargs, kernels=[k["name"] for k in kernels])
            report = applying.report(self)
            if report is None or not report.plugged():
                found = ", ".join(f"{s.op} {s.problem} {s.dtype}" for s in (report.sites if report else [])) or "none"
                raise KernelRefused(f"none of our kernels serves this problem's operators (found: {found})")
            if "forward" in self.__dict__:  # the whole forward was traced: apply's dispatcher
                self.__dict__["forward"] = _strict(self.__dict__["forward"])
                return self.forward(*args, **kwargs)
            return _strict(super().forward)(*args, **kwargs)

    ModelNew.__qualname__ = ModelNew.__name__ = "ModelNew"
    return ModelNew
