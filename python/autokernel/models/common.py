"""What the shipped models share: the two primitives where the supported torch versions differ —
`attention` and `rms_norm` (torch 1.13 has neither `F.scaled_dot_product_attention` nor
`F.rms_norm`, and only torch >= 2.5 lets SDPA do grouped-query attention itself; each is
feature-detected once, at import) — the weight initialisation, and a language model's outputs.
"""

from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn


def _torch_version() -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


_HAS_SDPA = hasattr(F, "scaled_dot_product_attention")
_HAS_RMS_NORM = hasattr(F, "rms_norm")
# SDPA is a builtin whose signature `inspect` cannot always read, so the version decides: `enable_gqa`
# arrived in torch 2.5.
_SDPA_HAS_GQA = _HAS_SDPA and _torch_version() >= (2, 5)


def _repeat_kv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # Query head i reads key/value head i // n_rep: the grouping `enable_gqa` uses too.
    n_rep = q.size(1) // k.size(1)
    if n_rep == 1:
        return k, v
    return k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)


def _math_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    k, v = _repeat_kv(q, k, v)
    # Scaling q before the product, not the scores after it, keeps fp16 dot products in range.
    scores = (q * (1.0 / math.sqrt(q.size(-1)))) @ k.transpose(-2, -1)
    if causal:
        s_q, s_k = scores.shape[-2:]
        future = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    # Summing exponentials over a long row in half precision loses accuracy; float32 does not.
    probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return probs @ v


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Softmax attention. q: [B, H, S, D]; k, v: [B, Hkv, S, D] with H a multiple of Hkv."""
    if not _HAS_SDPA:
        return _math_attention(q, k, v, causal)
    if q.size(1) != k.size(1):
        if _SDPA_HAS_GQA:
            # Lets SDPA read the shared key/value heads in place instead of materialising copies.
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        k, v = _repeat_kv(q, k, v)
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    if _HAS_RMS_NORM:
        return F.rms_norm(x, (x.size(-1),), weight, eps)
    # The mean of squares overflows fp16 for activations above ~256, so reduce in float32.
    xf = x.float()
    normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return normed.to(x.dtype) * weight


def init_weights(module: nn.Module) -> None:
    # A small, fixed std keeps activations and logits well inside fp16 range at every depth.
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def lm_outputs(logits: torch.Tensor, targets: torch.Tensor | None):
    """A language model's result: the logits, and with targets also the next-token loss."""
    if targets is None:
        return logits
    return logits, F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
