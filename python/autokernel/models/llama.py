"""A LLaMA-style decoder: RMSNorm, rotary position embeddings, grouped-query attention, SwiGLU."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .common import attention, init_weights, lm_outputs, rms_norm


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
        self.apply(init_weights)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        # Past max_seq the rotary tables run out; say so rather than fail on a broadcast.
        if idx.size(1) > self.config.max_seq:
            raise ValueError(f"sequence length {idx.size(1)} exceeds max_seq={self.config.max_seq}")
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x)
        return lm_outputs(self.lm_head(self.norm(x)), targets)




def parameter_count(config: LlamaConfig) -> int:
    """Parameters of `Llama(config)`, without building it."""
    d, kv_dim = config.dim, config.n_kv_heads * config.head_dim
    attn = 2 * d * d + 2 * d * kv_dim
    ffn = 3 * d * config.hidden_dim
    per_layer = attn + ffn + 2 * d  # + the two RMSNorm weights
    return 2 * config.vocab_size * d + config.n_layers * per_layer + d  # embedding, lm_head, norm
