# A small KernelBench-format problem for the tests: a sum over the last dim (our reduce operator).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.rand(128, 96)]


def get_init_inputs():
    return [1]
