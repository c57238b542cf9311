"""kernels.json: the compiled kernels of a run, written by `autokernel verify` into the workspace
and by `autokernel export` into a package. Each kernel names its operator, its module, the
architecture it was built for and the problems (shape, dtype) the harness checked it on; the
document says what it was built with (backend, architecture, CUDA and PyTorch versions).

Loading registers the kernels that fit this machine in the kernel table. A kernel built for
another architecture, another CUDA major version or another PyTorch is not registered: one line
is logged and PyTorch's own ops run in its place.
"""
import json
import logging
import pathlib

import torch

from . import NAMESPACE
from .abi import ABI_VERSION
from .kernel_table import TABLE, Kernel, device_arch, host_arch

log = logging.getLogger(NAMESPACE)
FORMAT = "autokernel-kernels/1"


class ManifestError(Exception):
    """A kernels.json that cannot be read (a one-line reason)."""


def read(path):
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / "kernels.json"
    if not path.is_file():
        raise ManifestError(f"no {path}: run `autokernel verify` (or `autokernel run`) first")
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ManifestError(f"{path} is not JSON: {e}") from None
    if document.get("format") != FORMAT:
        raise ManifestError(f"{path} is not a kernels manifest ({FORMAT})")
    return path, document


def _major_minor(version):
    return ".".join(str(version).split("+")[0].split(".")[:2]) if version else None


def environment_mismatch(built_with):
    """Why kernels built with `built_with` cannot run here, or None."""
    if built_with.get("abi_version", ABI_VERSION) != ABI_VERSION:
        return f"built for kernel ABI {built_with.get('abi_version')}, this one is {ABI_VERSION}"
    torch_version = _major_minor(built_with.get("torch"))
    if torch_version and torch_version != _major_minor(torch.__version__):
        return f"built for PyTorch {torch_version}, this is {torch.__version__}"
    if built_with.get("backend") == "cuda":
        if not torch.cuda.is_available():
            return "built for a CUDA GPU, and PyTorch sees none"
        built_major = str(built_with.get("cuda") or "").split(".")[0]
        here_major = str(torch.version.cuda or "").split(".")[0]
        if built_major and built_major != here_major:
            return f"built with CUDA {built_with.get('cuda')}, this PyTorch uses CUDA {torch.version.cuda}"
    return None


def _here(backend):
    if backend == "cuda":
        return device_arch(torch.device("cuda", torch.cuda.current_device()))
    return host_arch()


def load(path, names=None, only_used=True):
    """Registers the manifest's kernels that fit this machine (those named in `names`, else those
    marked for use); returns (the registered kernels, every kernel's entry, why some were not)."""
    path, document = read(path)
    built_with = document.get("built_with", {})
    every = document.get("kernels", [])
    wanted = (lambda k: k["name"] in names) if names is not None else (lambda k: k.get("use", True) or not only_used)
    entries = [k for k in every if wanted(k)]
    mismatch = environment_mismatch(built_with)
    if mismatch is not None:
        if entries:
            log.warning("%s: the kernels of %s are not used: %s; PyTorch's ops run instead", NAMESPACE, path,
                        mismatch)
        return [], every, mismatch
    here = _here(built_with.get("backend"))
    registered, skipped = [], []
    for entry in entries:
        if entry["arch"] != here:
            skipped.append(entry["name"])
            continue
        module = pathlib.Path(entry["module"])
        kernel = Kernel(entry["name"], entry["op"], str(module if module.is_absolute() else path.parent / module),
                        entry["arch"], frozenset(tuple(p) for p in entry["checked"]))
        TABLE.add(kernel)
        registered.append(kernel)
    reason = None
    if skipped:
        reason = f"built for {entries[0]['arch']}, this device is {here}"
        log.warning("%s: %d kernels of %s are not used (%s); PyTorch's ops run instead", NAMESPACE,
                    len(skipped), path, reason)
    return registered, every, reason
