"""The nine operators in PyTorch, in the ABI's layout (src/ops/<op>.cpp): what a custom op runs
when no checked kernel serves a call (PyTorch's own ops: cuBLAS, SDPA...), and the formula a
traced subgraph is compared with before it is taken for an operator. Each returns the list of
the operator's outputs; the norms and rotary compute in float32 and round once, as the kernels
and the usual spellings do.
"""
import torch
import torch.nn.functional as F


def matmul(a, b):
    return [a @ b]


def softmax(x):
    return [torch.softmax(x, -1)]


def layernorm(x, weight, bias, eps):
    return [F.layer_norm(x, (x.shape[-1],), weight, bias, eps)]


def rmsnorm(x, weight, eps):
    xf = x.float()
    return [(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)]


def flash_attention(q, k, v, scale, causal):
    grouped = k.shape[1] != q.shape[1]
    return [F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=scale, enable_gqa=grouped)]


def fused_mlp(x, w_gate, w_up, w_down):
    return [F.linear(F.silu(F.linear(x, w_gate)) * F.linear(x, w_up), w_down)]


def cross_entropy(logits, targets):
    loss = F.cross_entropy(logits.float(), targets, reduction="none")
    return [loss, loss.mean().reshape(1)]


def rotary_embedding(x, cos, sin):
    half = x.shape[-1] // 2
    xf = x.float()
    c, s = cos.float(), sin.float()  # [S, D/2], broadcast over batch and heads
    x1, x2 = xf[..., :half], xf[..., half:]
    return [torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1).to(x.dtype)]


def rotary_interleaved(x, cos, sin):
    """The other convention: channels (2i, 2i+1) rotate together (GPT-J, the original LLaMA)."""
    xf = x.float()
    c, s = cos.float(), sin.float()
    even, odd = xf[..., 0::2], xf[..., 1::2]
    return [torch.stack((even * c - odd * s, odd * c + even * s), -1).flatten(-2).to(x.dtype)]


def reduce(x):
    return [x.float().sum(-1).to(x.dtype)]


REFERENCES = {
    "matmul": matmul,
    "softmax": softmax,
    "layernorm": layernorm,
    "rmsnorm": rmsnorm,
    "flash_attention": flash_attention,
    "fused_mlp": fused_mlp,
    "cross_entropy": cross_entropy,
    "rotary_embedding": rotary_embedding,
    "reduce": reduce,
}
