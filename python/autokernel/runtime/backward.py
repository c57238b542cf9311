"""Backward of each operator in PyTorch ops (there are no backward kernels yet), registered on the
custom ops with torch.library.register_autograd so that a model applied with our kernels still
trains. Each function takes the saved inputs, scalars and outputs and the gradients of the
outputs, and returns one gradient per tensor input (None where there is none). Explicit formulas
rather than autograd re-running the reference: they trace under torch.compile like any other
PyTorch code. Reductions run in float32 and each gradient is rounded once to its input's dtype.
"""
import math

import torch
import torch.nn.functional as F


def _like(grad, tensor):
    return grad.to(tensor.dtype)


def matmul(inputs, scalars, outputs, grads):
    a, b = inputs
    (dc,) = grads
    return [dc @ b.t(), a.t() @ dc]


def softmax(inputs, scalars, outputs, grads):
    (y,), (dy,) = outputs, grads
    yf, dyf = y.float(), dy.float()
    return [_like(yf * (dyf - (dyf * yf).sum(-1, keepdim=True)), y)]


def _normalized(x, rstd, mean=None):
    xf = x.float()
    return (xf if mean is None else xf - mean) * rstd


def rmsnorm(inputs, scalars, outputs, grads):
    (x, w), (eps,), (dy,) = inputs, scalars, grads
    rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    xhat = _normalized(x, rstd)
    dxhat = dy.float() * w.float()
    dx = rstd * (dxhat - xhat * (dxhat * xhat).mean(-1, keepdim=True))
    return [_like(dx, x), _like((dy.float() * xhat).sum(0), w)]


def layernorm(inputs, scalars, outputs, grads):
    (x, w, b), (eps,), (dy,) = inputs, scalars, grads
    xf = x.float()
    mean = xf.mean(-1, keepdim=True)
    rstd = torch.rsqrt((xf - mean).pow(2).mean(-1, keepdim=True) + eps)
    xhat = _normalized(x, rstd, mean)
    dyf = dy.float()
    dxhat = dyf * w.float()
    dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True) - xhat * (dxhat * xhat).mean(-1, keepdim=True))
    return [_like(dx, x), _like((dyf * xhat).sum(0), w), _like(dyf.sum(0), b)]


def flash_attention(inputs, scalars, outputs, grads):
    (q, k, v), (scale, causal), (do,) = inputs, scalars, grads
    groups = q.shape[1] // k.shape[1]
    kf, vf = (t.float().repeat_interleave(groups, dim=1) for t in (k, v))
    scores = (q.float() @ kf.transpose(-1, -2)) * scale
    if causal:
        s_q, s_k = scores.shape[-2:]
        future = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, -math.inf)
    p = torch.softmax(scores, -1)
    dof = do.float()
    dv = p.transpose(-1, -2) @ dof
    dp = dof @ vf.transpose(-1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale
    dq = ds @ kf
    dk = ds.transpose(-1, -2) @ q.float()

    def ungroup(t):  # each shared key/value head gets the sum over the query heads that read it
        b, h, s, d = t.shape
        return t.reshape(b, h // groups, groups, s, d).sum(2)

    return [_like(dq, q), _like(ungroup(dk), k), _like(ungroup(dv), v)]


def fused_mlp(inputs, scalars, outputs, grads):
    (x, w_gate, w_up, w_down), (dy,) = inputs, grads
    xf, dyf = x.float(), dy.float()
    gate, up = xf @ w_gate.float().t(), xf @ w_up.float().t()
    sig = torch.sigmoid(gate)
    act = gate * sig
    hidden = act * up
    dhidden = dyf @ w_down.float()
    dup = dhidden * act
    dgate = dhidden * up * sig * (1 + gate * (1 - sig))
    dx = dgate @ w_gate.float() + dup @ w_up.float()
    return [_like(dx, x), _like(dgate.t() @ xf, w_gate), _like(dup.t() @ xf, w_up),
            _like(dyf.t() @ hidden, w_down)]


def cross_entropy(inputs, scalars, outputs, grads):
    (logits, targets), (dloss, dmean) = inputs, grads
    rows = logits.shape[0]
    probs = torch.softmax(logits.float(), -1)
    onehot = F.one_hot(targets, logits.shape[1]).to(probs.dtype)
    per_row = torch.zeros(rows, device=logits.device) if dloss is None else dloss.float()
    if dmean is not None:
        per_row = per_row + dmean.float() / rows
    return [_like((probs - onehot) * per_row[:, None], logits), None]


def rotary_embedding(inputs, scalars, outputs, grads):
    (x, cos, sin), (dy,) = inputs, grads
    half = x.shape[-1] // 2
    c, s = cos.float(), sin.float()
    dyf, xf = dy.float(), x.float()
    dy1, dy2 = dyf[..., :half], dyf[..., half:]
    x1, x2 = xf[..., :half], xf[..., half:]
    dx = torch.cat((dy1 * c + dy2 * s, dy2 * c - dy1 * s), -1)
    batch_dims = tuple(range(x.dim() - 2))
    dcos = (dy1 * x1 + dy2 * x2).sum(batch_dims)
    dsin = (dy2 * x1 - dy1 * x2).sum(batch_dims)
    return [_like(dx, x), _like(dcos, cos), _like(dsin, sin)]


def reduce(inputs, scalars, outputs, grads):
    (x,), (dy,) = inputs, grads
    return [dy[:, None].expand(x.shape).to(x.dtype).contiguous()]


BACKWARDS = {
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
