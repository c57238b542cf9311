# Bad input: does not import (a module that does not exist).
import torch.nn as nn
import a_module_that_does_not_exist  # noqa: F401


class ModelNew(nn.Module):
    pass
