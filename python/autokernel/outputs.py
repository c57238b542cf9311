"""A model's outputs, as verify and decide compare them: every tensor of an output (a tensor, a
tuple, a list, a dict, a Hugging Face ModelOutput, or a registered pytree such as the key/value
cache a transformers model returns), copies that outlive the next call (a
compiled CUDA graph's outputs are overwritten by its next replay), and the relative L2 error of
one output against another, within a tolerance per dtype.
"""
import torch
from torch.utils import _pytree as pytree

# Largest relative L2 error of a model output, ||ours - eager|| / ||eager||, per dtype. A model
# compounds each op's rounding over its layers: looser than one op's tolerance, far tighter than
# what a wrong kernel gives (order 1).
TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


def flatten(output, name="output"):
    """(name, tensor) for every tensor in a model's output."""
    if isinstance(output, torch.Tensor):
        return [(name, output)]
    if isinstance(output, dict):
        return [pair for key, value in output.items() for pair in flatten(value, f"{name}.{key}")]
    if isinstance(output, (tuple, list)):
        return [pair for i, value in enumerate(output) for pair in flatten(value, f"{name}[{i}]")]
    if hasattr(output, "to_tuple"):
        return flatten(output.to_tuple(), name)
    if type(output) in pytree.SUPPORTED_NODES:  # transformers' cache (capture registers it)
        return [pair for i, leaf in enumerate(pytree.tree_leaves(output)) for pair in flatten(leaf, f"{name}<{i}>")]
    return []


def clone_output(output):
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    if isinstance(output, dict):
        return {k: clone_output(v) for k, v in output.items()}
    if hasattr(output, "_fields"):  # a named tuple
        return type(output)(*(clone_output(v) for v in output))
    if isinstance(output, (tuple, list)):
        return type(output)(clone_output(v) for v in output)
    if hasattr(output, "to_tuple"):  # a Hugging Face ModelOutput
        return tuple(clone_output(v) for v in output.to_tuple())
    if type(output) in pytree.SUPPORTED_NODES:
        return pytree.tree_map(clone_output, output)
    return output


def _difference(reference, got, tolerance):
    """(relative L2 error or None, why `got` cannot be compared with `reference`, or None)."""
    if got.shape != reference.shape:
        return None, f"shape {list(got.shape)}, expected {list(reference.shape)}"
    if not got.is_floating_point():  # (token ids, say) as numbers: a tie broken the other way is small
        got, reference = got.double(), reference.double()
    if not bool(torch.isfinite(got).all()) and bool(torch.isfinite(reference).all()):
        return None, "non-finite values where the expected output has none"
    # the difference in the outputs' dtype (its rounding is far below any tolerance), summed in float64
    return float(torch.linalg.vector_norm(got - reference, dtype=torch.float64)
                 / torch.linalg.vector_norm(reference, dtype=torch.float64).clamp_min(1e-300)), None


def compare(reference, ours, dtype, label=""):
    """A row per output tensor of `ours` against `reference` (name, shape, tolerance, ok, and the
    relative error or the reason it has none), and one more where the tensors do not pair up."""
    tolerance, suffix = TOLERANCE[dtype], f" ({label})" if label else ""
    expected, got = flatten(reference), flatten(ours)
    rows = []
    for (name, ref), (_, tensor) in zip(expected, got):
        error, why = _difference(ref, tensor, tolerance)
        row = {"name": name + suffix, "shape": list(ref.shape), "tolerance": tolerance}
        row.update({"ok": error <= tolerance, "relative_error": error} if why is None else {"ok": False, "reason": why})
        rows.append(row)
    if len(expected) != len(got):
        rows.append({"name": f"(outputs{suffix})", "ok": False, "reason": "a different number of output tensors"})
    return rows


def first_difference(reference, ours, dtype):
    """Why output `ours` is not `reference` within dtype's tolerance (its first tensor that is not),
    or None."""
    for row in compare(reference, ours, dtype):
        if not row["ok"]:
            return f"{row['name']}: " + (row.get("reason") or
                                         f"relative error {row['relative_error']:.3g} over {row['tolerance']:g}")
    return None
