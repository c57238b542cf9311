# Bad input (GPU): CUDA source that does not compile; load_inline raises at import.
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

module = load_inline(name="autokernel_test_broken", cpp_sources="void broken();",
                     cuda_sources="void broken() { this is not C++; }", functions=["broken"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return x
