# An honest Triton solution: one program per row, three passes over column blocks (max, sum of
# exponentials, write), launched on the current stream as Triton does.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * cols, y_ptr + row * cols
    offsets = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        m = tl.maximum(m, tl.load(x_row + start + offsets, mask=mask, other=float("-inf")))
    row_max = tl.max(m, 0)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        s += tl.where(mask, tl.exp(tl.load(x_row + start + offsets, mask=mask, other=0.0) - row_max), 0.0)
    inv = 1.0 / tl.sum(s, 0)
    for start in range(0, cols, BLOCK):
        mask = start + offsets < cols
        v = tl.load(x_row + start + offsets, mask=mask, other=0.0)
        tl.store(y_row + start + offsets, tl.exp(v - row_max) * inv, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        softmax_rows[(x.shape[0],)](x, y, x.shape[1], BLOCK=2048)
        return y
