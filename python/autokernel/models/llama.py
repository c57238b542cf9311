"""A LLaMA-style decoder: RMSNorm, rotary position embeddings, grouped-query attention, SwiGLU.

Besides the model, this file holds the two primitives the other models share -- `attention` and
`rms_norm` -- because they are where the supported torch versions differ: torch 1.13 has neither
`F.scaled_dot_product_attention` nor `F.rms_norm`, and only torch >= 2.5 lets SDPA do grouped-query
attention itself. Each is feature-detected once, at import.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

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


@dataclass(frozen=True)
class LlamaConfig:
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    hidden_dim: int
    vocab_size: int
    max_seq: int
    norm_eps: float = 1e-6
    rope_base: float = 10000.0

    def __post_init__(self):
        if self.dim % self.n_heads or self.n_heads % self.n_kv_heads or (self.dim // self.n_heads) % 2:
            raise ValueError(f"inconsistent LlamaConfig: {self}")

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def max_positions(self) -> int:
        """The longest sequence the model accepts; the registry checks inputs against it."""
        return self.max_seq


LLAMA_COMPACT = LlamaConfig(
    dim=768, n_layers=12, n_heads=12, n_kv_heads=4, hidden_dim=2048, vocab_size=32000, max_seq=2048
)
LLAMA_7B = LlamaConfig(
    dim=4096, n_layers=32, n_heads=32, n_kv_heads=32, hidden_dim=11008, vocab_size=32000, max_seq=4096
)
LLAMA_TINY = LlamaConfig(
    dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=172, vocab_size=256, max_seq=128
)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


class RotaryEmbedding(nn.Module):
    """Rotates each (i, i + D/2) pair of channels by the angle s * theta_i of its position s."""

    def __init__(self, head_dim: int, max_seq: int, base: float = 10000.0):
        super().__init__()
        # Angles in float64: at position 4096 float32 would already lose digits of the phase.
        theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.outer(torch.arange(max_seq, dtype=torch.float64), theta)
        # Not persistent: they follow from the config, so checkpoints need not carry them.
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        half = x.size(-1) // 2
        seq = x.size(-2)
        # The cast matters only under autocast, where x can be half while the tables stay float32.
        c = self.cos[:seq].to(x.dtype)
        s = self.sin[:seq].to(x.dtype)
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=False)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Attention(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads
        self.head_dim = config.head_dim
        self.q_proj = nn.Linear(config.dim, config.n_heads * config.head_dim, bias=False)
        self.k_proj = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.v_proj = nn.Linear(config.dim, config.n_kv_heads * config.head_dim, bias=False)
        self.o_proj = nn.Linear(config.n_heads * config.head_dim, config.dim, bias=False)
        # One table per layer rather than one shared: code that swaps modules through their parent
        # (e.g. a kernel bridge) would otherwise replace it in the first layer only. It costs 64 MiB
        # on the 7B configuration.
        self.rotary = RotaryEmbedding(config.head_dim, config.max_seq, config.rope_base)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q = self.q_proj(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.n_kv_heads, self.head_dim).transpose(1, 2)
        out = attention(self.rotary(q), self.rotary(k), v, causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq, -1))


class Block(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.attn_norm = RMSNorm(config.dim, config.norm_eps)
        self.attn = Attention(config)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
        self.ffn = FeedForward(config.dim, config.hidden_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.lm_head = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.apply(_init_weights)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        # Past max_seq the rotary tables run out; say so rather than fail on a broadcast.
        if idx.size(1) > self.config.max_seq:
            raise ValueError(f"sequence length {idx.size(1)} exceeds max_seq={self.config.max_seq}")
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.norm(x))
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def _init_weights(module: nn.Module) -> None:
    # A small, fixed std keeps activations and logits well inside fp16 range at every depth.
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def parameter_count(config: LlamaConfig) -> int:
    """Parameters of `Llama(config)`, without building it."""
    d, kv_dim = config.dim, config.n_kv_heads * config.head_dim
    attn = 2 * d * d + 2 * d * kv_dim
    ffn = 3 * d * config.hidden_dim
    per_layer = attn + ffn + 2 * d  # + the two RMSNorm weights
    return 2 * config.vocab_size * d + config.n_layers * per_layer + d  # embedding, lm_head, norm
