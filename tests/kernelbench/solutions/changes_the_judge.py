# Cheat: changes what judges it, from the solution process, at import. A solution runs as the
# judge's user (root in a container), so it could rewrite the judge's own code for the next problem
# (opened here for appending and closed again: a probe that changes nothing), plant a file in the
# caches the references' processes compile into (a slower baseline, a larger speedup), signal the
# judge, or run a shell to do any of it; every name is built at run time. Its forward fails if any
# of that worked, so it passes only where the solution process is confined.
import importlib
import pathlib

import torch
import torch.nn as nn

_os = importlib.import_module("o" + "s")
_JUDGE_CODE = pathlib.Path(importlib.import_module("autokernel.kernelbench.judge").__file__)
_CACHE = _os.environ.get("AUTOKERNEL_CACHE") or _os.path.expanduser("~/.cache/autokernel")
_PLANTED = _os.path.join(_CACHE, "kernelbench", "reference-caches", "planted-by-a-solution")


def _escapes():
    escaped = []

    def attempt(name, action):
        try:
            action()
            escaped.append(name)
        except OSError:
            pass

    attempt("opened the judge's code for writing", lambda: open(_JUDGE_CODE, "ab").close())
    attempt("planted a file in the references' caches", lambda: open(_PLANTED, "w").close())
    attempt("signalled the judge", lambda: getattr(_os, "ki" + "ll")(_os.getppid(), 0))
    if getattr(_os, "sys" + "tem")(f"touch '{_PLANTED}.sh' 2>/dev/null") == 0:
        escaped.append("ran a shell that wrote")
    return escaped


ESCAPED = _escapes()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if ESCAPED:
            raise RuntimeError("escaped: " + ", ".join(ESCAPED))
        return torch.softmax(x, dim=1)
