"""A small language model for the bridge's CPU tests, loaded as a user's model
(tests/models/tiny_lm.py:TinyLM): every operator pattern the profiler knows, written the way a
user might write it — an RMSNorm spelled out, rotate_half rotary with cos/sin tables, a SwiGLU
MLP, attention through softmax, a LayerNorm, a row sum and a cross-entropy loss."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class Norm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Rope(nn.Module):
    def __init__(self, head_dim, positions):
        super().__init__()
        theta = 10000.0 ** (-torch.arange(0, head_dim // 2, dtype=torch.float64) * 2 / head_dim)
        angles = torch.arange(positions, dtype=torch.float64)[:, None] * theta[None, :]
        self.register_buffer("cos", angles.cos().float())
        self.register_buffer("sin", angles.sin().float())

    def forward(self, x):
        s, half = x.shape[2], x.shape[3] // 2
        x1, x2 = x[..., :half], x[..., half:]
        c, s_ = self.cos[:s], self.sin[:s]
        return torch.cat((x1 * c - x2 * s_, x2 * c + x1 * s_), dim=-1)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TinyLM(nn.Module):
    default_input_shape = (2, 24)
    vocab_size = 96

    def __init__(self, dim=48, heads=4, hidden=136, positions=64):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(self.vocab_size, dim)
        self.norm1, self.norm2 = Norm(dim), Norm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.rope = Rope(dim // heads, positions)
        self.mlp = Mlp(dim, hidden)
        self.final = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, self.vocab_size, bias=False)

    def make_inputs(self, shape, device, generator):
        if len(shape) != 2:
            raise ValueError("expects (batch, sequence)")
        ids = torch.randint(0, self.vocab_size, shape, generator=generator)
        targets = torch.randint(0, self.vocab_size, shape, generator=generator)
        return ids.to(device), targets.to(device)

    def attention(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k = self.rope(q), self.rope(k)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.out((torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, d))

    def forward(self, ids, targets):
        x = self.embed(ids)
        x = x + self.attention(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        logits = self.head(self.final(x))
        loss = F.cross_entropy(logits.reshape(-1, self.vocab_size), targets.reshape(-1))
        return logits, loss, logits.sum(-1)
