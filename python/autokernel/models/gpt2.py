"""GPT-2: learned position embeddings, pre-LayerNorm blocks, fused QKV projection, tied LM head."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .common import attention, init_weights, lm_outputs


@dataclass(frozen=True)
class GPT2Config:
    vocab_size: int
    n_positions: int
    n_layers: int
    n_heads: int
    dim: int
    layer_norm_eps: float = 1e-5

    def __post_init__(self):
        if self.dim % self.n_heads:
            raise ValueError(f"inconsistent GPT2Config: {self}")

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def max_positions(self) -> int:
        """The longest sequence the model accepts; the registry checks inputs against it."""
        return self.n_positions


GPT2_SMALL = GPT2Config(vocab_size=50257, n_positions=1024, n_layers=12, n_heads=12, dim=768)
GPT2_TINY = GPT2Config(vocab_size=256, n_positions=128, n_layers=2, n_heads=4, dim=64)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPT2Config):
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        # One [dim, 3 * dim] GEMM instead of three: GPT-2's checkpoints store q, k and v this way.
        self.c_attn = nn.Linear(config.dim, 3 * config.dim)
        self.c_proj = nn.Linear(config.dim, config.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.c_attn(x).split(dim, dim=-1)
        q, k, v = (t.view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        out = attention(q, k, v, causal=True)
        return self.c_proj(out.transpose(1, 2).reshape(batch, seq, dim))


class MLP(nn.Module):
    def __init__(self, config: GPT2Config):
        super().__init__()
        self.c_fc = nn.Linear(config.dim, 4 * config.dim)
        self.c_proj = nn.Linear(4 * config.dim, config.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # GPT-2 was trained with the tanh approximation, so the exact erf form would change its outputs.
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, config: GPT2Config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.dim, eps=config.layer_norm_eps)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.dim, eps=config.layer_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, config: GPT2Config):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.dim)
        self.wpe = nn.Embedding(config.n_positions, config.dim)
        self.h = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.dim, eps=config.layer_norm_eps)
        self.lm_head = nn.Linear(config.dim, config.vocab_size, bias=False)
        # Tied: the output projection reuses the token embedding, as GPT-2 does; parameters() then
        # yields the shared tensor once.
        self.lm_head.weight = self.wte.weight
        self.apply(init_weights)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        seq = idx.size(1)
        if seq > self.config.n_positions:
            raise ValueError(f"sequence length {seq} exceeds n_positions={self.config.n_positions}")
        positions = torch.arange(seq, device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return lm_outputs(self.lm_head(self.ln_f(x)), targets)




def parameter_count(config: GPT2Config) -> int:
    """Parameters of `GPT2(config)`, without building it; the tied LM head counts once."""
    d = config.dim
    layer_norm = 2 * d
    attn = (d * 3 * d + 3 * d) + (d * d + d)
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)
    per_layer = 2 * layer_norm + attn + mlp
    return (config.vocab_size + config.n_positions) * d + config.n_layers * per_layer + layer_norm
