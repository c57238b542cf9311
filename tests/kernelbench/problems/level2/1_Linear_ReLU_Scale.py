# A small KernelBench-format problem for the tests: a Linear layer (weights from the seeded
# constructor), then two elementwise ops.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.linear(x)) * self.scale


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64, 48, 0.5]
