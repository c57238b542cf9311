"""A model's outputs, as verify and decide compare them: every tensor of an output (a tensor, a
tuple, a list, a dict or a Hugging Face ModelOutput), copies that outlive the next call (a
compiled CUDA graph's outputs are overwritten by its next replay), and the relative L2 error of
one output against another, within a tolerance per dtype.
"""
import torch

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
    return output


def difference(reference, got, tolerance):
    """(relative error or None, why `got` is not `reference` within `tolerance`, or None)."""
    if got.shape != reference.shape:
        return None, f"shape {list(got.shape)}, expected {list(reference.shape)}"
    if not got.is_floating_point():  # (token ids, say) as numbers: a tie broken the other way is small
        got, reference = got.double(), reference.double()
    if not bool(torch.isfinite(got).all()) and bool(torch.isfinite(reference).all()):
        return None, "non-finite values where the expected output has none"
    # the difference in the outputs' dtype (its rounding is far below any tolerance), summed in float64
    error = float(torch.linalg.vector_norm(got - reference, dtype=torch.float64)
                  / torch.linalg.vector_norm(reference, dtype=torch.float64).clamp_min(1e-300))
    return error, None if error <= tolerance else f"relative error {error:.3g} over {tolerance:g}"


def first_difference(reference, got, tolerance):
    """Why output `got` is not `reference` (the first of its tensors that is not), or None."""
    expected, ours = flatten(reference), flatten(got)
    if len(expected) != len(ours):
        return f"{len(ours)} output tensors, expected {len(expected)}"
    for (name, ref), (_, tensor) in zip(expected, ours):
        _, why = difference(ref, tensor, tolerance)
        if why:
            return f"{name}: {why}"
    return None
