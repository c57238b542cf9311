# A small KernelBench-format problem for the tests: an elementwise op none of our operators computes.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
