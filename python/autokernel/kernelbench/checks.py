"""The judge's comparison of a solution's output with the reference, both ways at once:

- KernelBench's: torch.allclose(reference, output, atol=tol, rtol=tol), i.e. every element within
  atol + rtol * |output|, tol 1e-4 for fp32 and 1e-2 for fp16/bf16 (its get_tolerance_for_precision);
- ours: every element written (none still holds the poison), and the relative L2 error
  ||output - reference|| / ||reference|| within a per-dtype bound (the bridge's verify uses the
  same: fp32 1e-4, fp16 2e-2, bf16 5e-2), so an all-zero or half-written output never passes
  where the absolute tolerance is loose.

Computed in chunks of the flattened tensors: a multi-gigabyte output is compared with little memory
beside it (the solution process may have taken the rest). Integer and boolean outputs must match
exactly.
"""
import math
from dataclasses import dataclass, field

import torch

from .buffers import poisoned_mask

KERNELBENCH_TOLERANCE = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}
RELATIVE_TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}
CHUNK = 1 << 22


@dataclass
class Comparison:
    ok: bool = True
    reason: str = ""
    max_abs_diff: float = 0.0
    relative_error: float = 0.0
    stats: dict = field(default_factory=dict)


def tolerances(precision):
    return KERNELBENCH_TOLERANCE.get(precision, 1e-4), RELATIVE_TOLERANCE.get(precision, 1e-4)


def compare(output, reference, precision, name="output", elementwise=True):
    """Comparison of one output (the judge's shared buffer, same shape and dtype) with its reference.
    `elementwise` False drops KernelBench's allclose and keeps the relative error alone: a whole
    model's output (verify's criterion, outputs.TOLERANCE), whose rounding compounds over its
    layers, has elements past one operator's absolute tolerance while the whole is well within."""
    total = reference.numel()
    unwritten = _count_unwritten(output, reference)
    if unwritten:
        return Comparison(False, f"{name}: {unwritten} of {total} elements never written (still poisoned)")
    if not reference.is_floating_point():
        differ = int((output.reshape(-1) != reference.reshape(-1)).sum())
        if differ:
            first = int((output.reshape(-1) != reference.reshape(-1)).nonzero()[0])
            return Comparison(False, f"{name}: {differ} of {total} elements differ, first at "
                                     f"{_index(first, reference.shape)}")
        return Comparison()
    atol_rtol, relative_bound = tolerances(precision)
    far, first, max_diff, diff_sq, ref_sq = 0, None, 0.0, 0.0, 0.0
    flat_out, flat_ref = output.reshape(-1), reference.reshape(-1)
    for start in range(0, total, CHUNK):
        out = flat_out[start:start + CHUNK].double()
        ref = flat_ref[start:start + CHUNK].double()
        diff = (out - ref).abs()
        close = (diff <= atol_rtol + atol_rtol * out.abs()) | (out == ref)
        misses = int((~close).sum())
        if misses and first is None:
            first = start + int((~close).nonzero()[0])
        far += misses
        finite = torch.isfinite(diff)
        if bool(finite.any()):
            max_diff = max(max_diff, float(diff[finite].max()))
        diff_sq += float(torch.where(out == ref, 0.0, diff).square().sum())
        ref_sq += float(ref.square().sum())
    relative = math.sqrt(diff_sq) / max(math.sqrt(ref_sq), 1e-30) if diff_sq else 0.0
    result = Comparison(True, "", max_diff, relative, {"elements_outside_tolerance": far})
    if far and elementwise:
        result.ok = False
        result.reason = (f"{name}: {far} of {total} elements outside KernelBench's tolerance "
                         f"(atol=rtol={atol_rtol:g}), first at {_index(first, reference.shape)}, "
                         f"max |diff| {max_diff:.3g}")
    elif not relative <= relative_bound:  # NaN fails too
        result.ok = False
        result.reason = f"{name}: relative error {relative:.3g} > {relative_bound:g}"
    return result


def _count_unwritten(output, reference):
    # An element the reference itself holds the poison pattern at (an integer -1) is not evidence.
    total = 0
    flat_out, flat_ref = output.reshape(-1), reference.reshape(-1)
    for start in range(0, flat_ref.numel(), CHUNK):
        out, ref = flat_out[start:start + CHUNK], flat_ref[start:start + CHUNK]
        total += int((poisoned_mask(out) & ~poisoned_mask(ref)).sum())
    return total


def count_poisoned(output):
    flat = output.reshape(-1)
    return sum(int(poisoned_mask(flat[s:s + CHUNK]).sum()) for s in range(0, flat.numel(), CHUNK))


def _index(flat, shape):
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return list(reversed(index))


def same_bytes(a, b):
    """Bitwise equality of two tensors of one shape and dtype (a NaN equals itself here)."""
    from .buffers import raw_bytes

    return bool(torch.equal(raw_bytes(a.contiguous()), raw_bytes(b.contiguous())))
