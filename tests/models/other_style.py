"""Decoders written in the style of GPT-NeoX, Gemma, GPT-J and the original LLaMA code (written
fresh for the tests, small), covering the spellings hf_style.py does not:

- NeoXStyle: nn.LayerNorm, one fused QKV projection, rotary on the first quarter of each head
  (partial, rotate-half), attention written out (matmul, masked_fill, softmax in float32), a
  GELU MLP, parallel residual.
- GemmaStyle: RMSNorm with (1 + weight) in float32, embeddings scaled by sqrt(dim), a GeGLU MLP
  (tanh gelu: no operator of ours), SDPA with enable_gqa, tied output embedding.
- GPTJStyle: interleaved rotary (rotate_every_two with strided slices and stack), a LayerNorm
  written out as (x - mean) / sqrt(var + eps), softmax written out as exp / sum, the loss as
  nll_loss(log_softmax).
- MetaLlamaStyle: interleaved rotary through complex numbers (view_as_complex * freqs_cis), its
  RMSNorm with the weight applied after the cast, a w1/w2/w3 SwiGLU.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from hf_style import TokenModel


class NeoXLayer(nn.Module):
    def __init__(self, dim, heads, rotary_pct):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.rotary_ndims = int(self.head_dim * rotary_pct)
        self.input_layernorm, self.post_attention_layernorm = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.query_key_value = nn.Linear(dim, 3 * dim)
        self.dense = nn.Linear(dim, dim)
        self.dense_h_to_4h, self.dense_4h_to_h = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def rotate(self, t, cos, sin):
        rot, keep = t[..., : self.rotary_ndims], t[..., self.rotary_ndims:]
        half = self.rotary_ndims // 2
        rotated = torch.cat((-rot[..., half:], rot[..., :half]), dim=-1)
        return torch.cat((rot * cos + rotated * sin, keep), dim=-1)

    def attention(self, x, cos, sin):
        b, s, d = x.shape
        qkv = self.query_key_value(x).view(b, s, self.heads, 3 * self.head_dim).permute(0, 2, 1, 3)
        q, k, v = qkv.split(self.head_dim, dim=-1)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, torch.finfo(scores.dtype).min)
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(v.dtype)
        return self.dense(torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, d))

    def forward(self, x, cos, sin):
        attn = self.attention(self.input_layernorm(x), cos, sin)
        mlp = self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(self.post_attention_layernorm(x))))
        return x + attn + mlp


class NeoXStyle(TokenModel):
    def __init__(self, dim=64, heads=4, layers=2, rotary_pct=0.25):
        super().__init__()
        self.embed_in = nn.Embedding(self.vocab_size, dim)
        self.layers = nn.ModuleList(NeoXLayer(dim, heads, rotary_pct) for _ in range(layers))
        self.final_layer_norm = nn.LayerNorm(dim)
        self.embed_out = nn.Linear(dim, self.vocab_size, bias=False)
        rot = int(dim // heads * rotary_pct)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, rot, 2).float() / rot), persistent=False)

    def forward(self, ids):
        x = self.embed_in(ids)
        freqs = torch.arange(ids.shape[1], device=ids.device).float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.embed_out(self.final_layer_norm(x))


class GemmaNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        out = x.float()
        out = out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * (1.0 + self.weight.float())).type_as(x)


class GemmaLayer(nn.Module):
    def __init__(self, dim, heads, kv_heads, head_dim, hidden):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(dim, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, dim, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.input_layernorm, self.post_attention_layernorm = GemmaNorm(dim), GemmaNorm(dim)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q1, q2 = q.chunk(2, dim=-1)
        k1, k2 = k.chunk(2, dim=-1)
        q = q * cos + torch.cat((-q2, q1), dim=-1) * sin
        k = k * cos + torch.cat((-k2, k1), dim=-1) * sin
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.head_dim ** -0.5, enable_gqa=True)
        x = x + self.o_proj(attn.transpose(1, 2).reshape(b, s, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.gelu(self.gate_proj(h), approximate="tanh") * self.up_proj(h))


class GemmaStyle(TokenModel):
    def __init__(self, dim=64, heads=4, kv_heads=1, head_dim=32, hidden=128, layers=2):
        super().__init__()
        self.dim = dim
        self.embed_tokens = nn.Embedding(self.vocab_size, dim)
        self.layers = nn.ModuleList(GemmaLayer(dim, heads, kv_heads, head_dim, hidden) for _ in range(layers))
        self.norm = GemmaNorm(dim)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, ids):
        x = self.embed_tokens(ids) * torch.tensor(self.dim ** 0.5, dtype=self.embed_tokens.weight.dtype)
        positions = torch.arange(ids.shape[1], device=ids.device).float()
        emb = torch.cat([torch.outer(positions, self.inv_freq)] * 2, dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return F.linear(self.norm(x), self.embed_tokens.weight)


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class GPTJLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.ln_weight, self.ln_bias = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.zeros(dim))
        self.q_proj, self.k_proj = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.v_proj, self.out_proj = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.fc_in, self.fc_out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def layer_norm(self, x, eps=1e-5):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + eps) * self.ln_weight + self.ln_bias

    def forward(self, x, sincos):
        b, s, d = x.shape
        h = self.layer_norm(x)
        q = self.q_proj(h).view(b, s, self.heads, self.head_dim)
        k = self.k_proj(h).view(b, s, self.heads, self.head_dim)
        v = self.v_proj(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        sin, cos = sincos
        q = (q * cos + rotate_every_two(q) * sin).transpose(1, 2)
        k = (k * cos + rotate_every_two(k) * sin).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) * self.head_dim ** -0.5
        scores = scores + torch.full((s, s), float("-inf"), dtype=scores.dtype, device=x.device).triu(1)
        weights = (scores - scores.amax(-1, keepdim=True)).exp()
        weights = weights / weights.sum(-1, keepdim=True)
        attn = (weights @ v).transpose(1, 2).reshape(b, s, d)
        return x + self.out_proj(attn) + self.fc_out(F.gelu(self.fc_in(h), approximate="tanh"))


class GPTJStyle(TokenModel):
    def __init__(self, dim=64, heads=4, layers=2):
        super().__init__()
        self.wte = nn.Embedding(self.vocab_size, dim)
        self.h = nn.ModuleList(GPTJLayer(dim, heads) for _ in range(layers))
        self.lm_head = nn.Linear(dim, self.vocab_size)
        head_dim = dim // heads
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))

    def make_inputs(self, shape, device, generator):
        (ids,) = super().make_inputs(shape, device, generator)
        return ids, torch.randint(0, self.vocab_size, shape, generator=generator).to(device)

    def forward(self, ids, targets):
        x = self.wte(ids)
        angles = torch.einsum("i,j->ij", torch.arange(ids.shape[1], device=ids.device).float(), self.inv_freq)
        sin = angles.sin().repeat_interleave(2, dim=-1)[None, :, None, :].to(x.dtype)
        cos = angles.cos().repeat_interleave(2, dim=-1)[None, :, None, :].to(x.dtype)
        for layer in self.h:
            x = layer(x, (sin, cos))
        logits = self.lm_head(x)
        loss = F.nll_loss(F.log_softmax(logits.view(-1, self.vocab_size), dim=-1), targets.view(-1))
        return logits, loss


class MetaAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq, self.wk = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.wv, self.wo = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)

    def forward(self, x, freqs_cis):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim)
        k = self.wk(x).view(b, s, self.heads, self.head_dim)
        v = self.wv(x).view(b, s, self.heads, self.head_dim)
        q_ = torch.view_as_complex(q.float().reshape(b, s, self.heads, -1, 2))
        k_ = torch.view_as_complex(k.float().reshape(b, s, self.heads, -1, 2))
        f = freqs_cis.view(1, s, 1, self.head_dim // 2)
        q = torch.view_as_real(q_ * f).flatten(3).type_as(x)
        k = torch.view_as_real(k_ * f).flatten(3).type_as(x)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


class MetaNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


class MetaBlock(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.attention, self.attention_norm, self.ffn_norm = MetaAttention(dim, heads), MetaNorm(dim), MetaNorm(dim)
        self.w1, self.w2 = nn.Linear(dim, hidden, bias=False), nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        f = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(f)) * self.w3(f))


class MetaLlamaStyle(TokenModel):
    def __init__(self, dim=64, heads=4, hidden=192, layers=2, max_seq=64):
        super().__init__()
        self.tok_embeddings = nn.Embedding(self.vocab_size, dim)
        self.layers = nn.ModuleList(MetaBlock(dim, heads, hidden) for _ in range(layers))
        self.norm, self.output = MetaNorm(dim), nn.Linear(dim, self.vocab_size, bias=False)
        head_dim = dim // heads
        freqs = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
        # Angles, not their complex exponentials: a model cast to half must not cast complex buffers.
        self.register_buffer("angles", torch.outer(torch.arange(max_seq).float(), freqs), persistent=False)

    def forward(self, ids):
        x = self.tok_embeddings(ids)
        angles = self.angles[: ids.shape[1]].float()
        freqs_cis = torch.polar(torch.ones_like(angles), angles)
        for layer in self.layers:
            x = layer(x, freqs_cis)
        return self.output(self.norm(x)).float()
