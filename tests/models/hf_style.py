"""Decoders written in the style of Hugging Face's Llama, Qwen2 and Mistral code (written fresh
for the tests, small): what apply() and the profile must find without being told where.

- LlamaStyle: RMSNorm module computing in float32 and casting back before the weight; a rotary
  module returning cos/sin from position ids (cat(freqs, freqs)); apply_rotary_pos_emb with
  rotate_half; an MLP module with an act_fn attribute; repeat_kv (expand + reshape) then SDPA
  with is_causal; the loss on shifted labels with -100 ignored.
- Qwen2Style: everything inline — RMSNorm as a tiny module, rotate-half rotary written in the
  attention's forward, SwiGLU in the block's forward — q/k/v with biases, SDPA's enable_gqa.
- MistralStyle: cos/sin tables as buffers sliced to the sequence, rotary spelled without
  rotate_half, w1/w2/w3 MLP, RMSNorm with the weight applied in the input dtype, a boolean causal
  mask passed to SDPA.
"""

import torch
import torch.nn.functional as F
from torch import nn


class TokenModel(nn.Module):
    default_input_shape = (2, 16)
    vocab_size = 128

    def make_inputs(self, shape, device, generator):
        if len(shape) != 2:
            raise ValueError("expects (batch, sequence)")
        ids = torch.randint(0, self.vocab_size, shape, generator=generator)
        return (ids.to(device),)


class LlamaRMSNorm(nn.Module):
    def __init__(self, size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotary(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        freqs = (self.inv_freq[None, :, None].float() @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(hidden_states, n_rep):
    batch, kv_heads, seq, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, kv_heads, n_rep, seq, head_dim)
    return hidden_states.reshape(batch, kv_heads * n_rep, seq, head_dim)


class LlamaMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaAttention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q_proj = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, dim, bias=False)

    def forward(self, hidden_states, position_embeddings):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        n_rep = self.heads // self.kv_heads
        out = F.scaled_dot_product_attention(q, repeat_kv(k, n_rep), repeat_kv(v, n_rep), is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(*input_shape, -1).contiguous())


class LlamaLayer(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden):
        super().__init__()
        self.self_attn = LlamaAttention(dim, heads, kv_heads)
        self.mlp = LlamaMLP(dim, hidden)
        self.input_layernorm, self.post_attention_layernorm = LlamaRMSNorm(dim), LlamaRMSNorm(dim)

    def forward(self, hidden_states, position_embeddings):
        residual = hidden_states
        hidden_states = residual + self.self_attn(self.input_layernorm(hidden_states), position_embeddings)
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


class LlamaStyle(TokenModel):
    def __init__(self, dim=64, heads=4, kv_heads=2, hidden=160, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(self.vocab_size, dim)
        self.layers = nn.ModuleList(LlamaLayer(dim, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = LlamaRMSNorm(dim)
        self.rotary_emb = LlamaRotary(dim // heads)
        self.lm_head = nn.Linear(dim, self.vocab_size, bias=False)

    def make_inputs(self, shape, device, generator):
        (ids,) = super().make_inputs(shape, device, generator)
        labels = ids.clone()
        labels[:, :2] = -100  # a prompt the loss ignores
        return ids, labels

    def forward(self, input_ids, labels=None):
        hidden_states = self.embed_tokens(input_ids)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, position_embeddings)
        logits = self.lm_head(self.norm(hidden_states))
        if labels is None:
            return logits
        shift_logits = logits[..., :-1, :].contiguous().float()
        shift_labels = labels[..., 1:].contiguous()
        loss = F.cross_entropy(shift_logits.view(-1, self.vocab_size), shift_labels.view(-1), ignore_index=-100)
        return loss, logits


class Qwen2Norm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x):
        x32 = x.float()
        return self.weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class Qwen2Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.ln1, self.ln2 = Qwen2Norm(dim), Qwen2Norm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, kv_heads * self.head_dim)
        self.v = nn.Linear(dim, kv_heads * self.head_dim)
        self.o = nn.Linear(dim, dim, bias=False)
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        half = self.head_dim // 2
        q = q * cos + torch.cat((-q[..., half:], q[..., :half]), dim=-1) * sin
        k = k * cos + torch.cat((-k[..., half:], k[..., :half]), dim=-1) * sin
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(attn.transpose(1, 2).reshape(b, s, -1))
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Qwen2Style(TokenModel):
    def __init__(self, dim=64, heads=4, kv_heads=1, hidden=176, layers=2, theta=1e6):
        super().__init__()
        self.embed = nn.Embedding(self.vocab_size, dim)
        self.blocks = nn.ModuleList(Qwen2Block(dim, heads, kv_heads, hidden) for _ in range(layers))
        self.norm = Qwen2Norm(dim)
        self.head = nn.Linear(dim, self.vocab_size, bias=False)
        head_dim = dim // heads
        self.register_buffer("inv_freq", theta ** (-torch.arange(0, head_dim, 2).float() / head_dim), persistent=False)

    def forward(self, ids):
        x = self.embed(ids)
        t = torch.arange(ids.shape[1], device=ids.device, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos()[None, None].to(x.dtype), emb.sin()[None, None].to(x.dtype)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.norm(x))


class MistralBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, eps):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.eps = heads, kv_heads, dim // heads, eps
        self.attention_norm, self.ffn_norm = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.ones(dim))
        self.wq, self.wo = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def norm(self, x, weight):
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * weight

    def rope(self, x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def forward(self, x, cos, sin, mask):
        b, s, d = x.shape
        h = self.norm(x, self.attention_norm)
        q = self.wq(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        rep = self.heads // self.kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.wo(out.transpose(1, 2).reshape(b, s, d))
        h = self.norm(x, self.ffn_norm)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class MistralStyle(TokenModel):
    def __init__(self, dim=64, heads=8, kv_heads=2, hidden=144, layers=2, max_seq=64, eps=1e-5):
        super().__init__()
        self.tok = nn.Embedding(self.vocab_size, dim)
        self.layers = nn.ModuleList(MistralBlock(dim, heads, kv_heads, hidden, eps) for _ in range(layers))
        self.out_norm = nn.Parameter(torch.ones(dim))
        self.output = nn.Linear(dim, self.vocab_size, bias=False)
        half = dim // heads // 2
        angles = torch.outer(torch.arange(max_seq).float(), 1e4 ** (-torch.arange(half).float() / half))
        self.register_buffer("cos_cached", angles.cos(), persistent=False)
        self.register_buffer("sin_cached", angles.sin(), persistent=False)
        self.eps = eps

    def forward(self, ids):
        s = ids.shape[1]
        x = self.tok(ids)
        cos, sin = self.cos_cached[:s].to(x.dtype), self.sin_cached[:s].to(x.dtype)
        mask = torch.ones(s, s, dtype=torch.bool, device=ids.device).tril()
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return self.output(normed.type_as(x) * self.out_norm)
