# An honest solution to 1_Softmax_wide: softmax written out (max-subtracted exponentials over
# their row sums), computed within the call on the call's own inputs.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
