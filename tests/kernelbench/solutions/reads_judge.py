# Cheat: reads the judge through /proc (its memory holds the references and the seeds of the next
# inputs; its fds the channel). A process of the same user can, unless the judge is non-dumpable;
# one running as root can anyway, unless it has lost CAP_SYS_PTRACE. This one fails its forward if
# any of it opened, so it passes only where the judge is out of its reach.
import os

import torch
import torch.nn as nn


def _open_judge():
    judge, opened = os.getppid(), []
    for path in (f"/proc/{judge}/mem", f"/proc/{judge}/environ"):
        try:
            with open(path, "rb"):
                opened.append(path)
        except OSError:
            pass
    try:
        names = os.listdir(f"/proc/{judge}/fd")  # the numbers alone tell nothing
    except OSError:
        names = []
    for name in names:
        try:
            os.close(os.open(f"/proc/{judge}/fd/{name}", os.O_RDONLY | os.O_NONBLOCK))
            opened.append(f"/proc/{judge}/fd/{name}")
        except OSError:
            pass
    return opened


OPENED = _open_judge()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if OPENED:
            raise RuntimeError("the judge was open to the solution: " + ", ".join(OPENED))
        return torch.softmax(x, dim=1)
