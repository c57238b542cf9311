# Cheat (GPU): does its work on a stream of its own and returns at once, so a timer recorded on
# the current stream sees none of it. The judge holds the current stream during one call: the
# result is complete (or changing) before anything on the current stream ran.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()

    def forward(self, x):
        with torch.cuda.stream(self.stream):
            y = torch.softmax(x, dim=1)
        return y
