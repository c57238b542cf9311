# Bad input (GPU): takes all the free device memory when built and keeps it, then runs out of
# memory in its forward. The judge allocated what it needs before this process started.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.hoard = []
        size = 1 << 30
        while size >= 1 << 20:
            try:
                self.hoard.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
            except torch.cuda.OutOfMemoryError:
                size //= 2

    def forward(self, x):
        return torch.softmax(x, dim=1) + torch.empty(1 << 30, device="cuda")[: x.numel()].view_as(x)
