# A small KernelBench-format problem for the tests: a softmax over rows so long that every output
# (~3e-5) is below KernelBench's fp32 absolute tolerance (1e-4), where all zeros pass allclose.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 16
dim = 32768


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
