# An honest solution to 1_Softmax_wide that refuses to run where its process sees more than one
# GPU: the solution process must see the judge's GPU alone (a second one would be compute out of the
# judge's sight).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        if torch.cuda.device_count() != 1:
            raise RuntimeError(f"the solution process sees {torch.cuda.device_count()} GPUs")

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
