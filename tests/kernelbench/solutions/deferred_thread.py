# Cheat: returns an empty tensor at once and fills it from a host thread a moment later, so a
# timer stopped when forward returns sees no work. The judge fingerprints the result again after
# the call: "the result changed after the call returned".
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)

        def finish_later():
            time.sleep(0.010)
            out.copy_(torch.softmax(x, dim=1))

        threading.Thread(target=finish_later, daemon=True).start()
        return out
