"""Models that fail in the ways a user's model can, for the bridge's error tests."""
import torch
from torch import nn


class FailsInForward(nn.Module):
    default_input_shape = (2, 8)

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(x) @ torch.ones(3, 3)  # inner dimensions do not match


class NeedsArguments(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)


NotAModule = dict
