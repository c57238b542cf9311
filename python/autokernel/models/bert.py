"""BERT encoder: word + position + token-type embeddings, post-LayerNorm layers, bidirectional attention.

Inference-shaped: no dropout, no padding mask (every position attends to every other) and no pooler,
so the model's output is the last hidden state.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .common import attention, init_weights


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int
    max_position_embeddings: int
    n_layers: int
    n_heads: int
    dim: int
    intermediate_dim: int
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    def __post_init__(self):
        if self.dim % self.n_heads:
            raise ValueError(f"inconsistent BertConfig: {self}")

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def max_positions(self) -> int:
        """The longest sequence the model accepts; the registry checks inputs against it."""
        return self.max_position_embeddings


BERT_BASE = BertConfig(
    vocab_size=30522, max_position_embeddings=512, n_layers=12, n_heads=12, dim=768, intermediate_dim=3072
)
BERT_TINY = BertConfig(
    vocab_size=256, max_position_embeddings=128, n_layers=2, n_heads=4, dim=64, intermediate_dim=256
)


class Embeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.dim)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.dim)
        self.norm = nn.LayerNorm(config.dim, eps=config.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        return self.norm(x + self.token_type_embeddings(token_type_ids))


class SelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.n_heads = config.n_heads
        self.head_dim = config.head_dim
        self.q_proj = nn.Linear(config.dim, config.dim)
        self.k_proj = nn.Linear(config.dim, config.dim)
        self.v_proj = nn.Linear(config.dim, config.dim)
        self.out_proj = nn.Linear(config.dim, config.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)

        out = attention(heads(self.q_proj(x)), heads(self.k_proj(x)), heads(self.v_proj(x)), causal=False)
        return self.out_proj(out.transpose(1, 2).reshape(batch, seq, dim))


class EncoderLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = SelfAttention(config)
        self.attention_norm = nn.LayerNorm(config.dim, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.dim, config.intermediate_dim)
        self.output = nn.Linear(config.intermediate_dim, config.dim)
        self.output_norm = nn.LayerNorm(config.dim, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Post-LN, as in the original BERT: normalise after each residual sum, not before the sublayer.
        x = self.attention_norm(x + self.attention(x))
        # BERT uses the exact erf GELU, not GPT-2's tanh approximation.
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers))
        self.apply(init_weights)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        seq = input_ids.size(1)
        if seq > self.config.max_position_embeddings:
            limit = self.config.max_position_embeddings
            raise ValueError(f"sequence length {seq} exceeds max_position_embeddings={limit}")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x)
        return x




def parameter_count(config: BertConfig) -> int:
    """Parameters of `Bert(config)`, without building it."""
    d, inner = config.dim, config.intermediate_dim
    layer_norm = 2 * d
    embeddings = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * d
    attn = 4 * (d * d + d)
    ffn = (d * inner + inner) + (inner * d + d)
    per_layer = attn + ffn + 2 * layer_norm
    return embeddings + layer_norm + config.n_layers * per_layer
