"""Tensors the judge and the solution process both see: on the CPU a file in /dev/shm per tensor
(mapped by both), on a GPU a tensor of the judge's own allocator opened by the solver through CUDA
IPC. The judge creates them, keeps them for the whole evaluation and removes them; the solver
only maps them. The handle passed to the solver is plain data (and, for CUDA, torch's own IPC
reduction), going one way: judge to solver.

Also the judge's tools on such tensors: poison (every byte 0xFF: a NaN pattern no arithmetic
produces, -1 for integers) and fingerprints (a keyed hash of the raw bytes, computed in chunks so
that checking a multi-gigabyte tensor needs little memory beside it).
"""
import inspect
import mmap
import os
import secrets

import torch

SHM_DIR = "/dev/shm"
POISON_BYTE = 0xFF
_KEY_WIDTH = 1 << 16  # columns of the fingerprint's weight matrix


class Arena:
    """The judge's shared tensors for one evaluation."""

    def __init__(self, device, spill_dir):
        self.device = torch.device(device)
        self.spill_dir = spill_dir  # for a host tensor /dev/shm has no room for (a small container's)
        self._files = []
        self._tensors = []

    def tensor(self, shape, dtype):
        """A new shared tensor and the handle the solver opens it with."""
        shape, nbytes = tuple(shape), _nbytes(shape, dtype)
        if self.device.type == "cuda":
            from torch.multiprocessing.reductions import reduce_tensor

            t = torch.empty(shape, dtype=dtype, device=self.device)
            self._tensors.append(t)
            return t, ("cuda", reduce_tensor(t))
        free = os.statvfs(SHM_DIR).f_bavail * os.statvfs(SHM_DIR).f_frsize if os.path.isdir(SHM_DIR) else 0
        directory = SHM_DIR if nbytes < free // 2 else self.spill_dir
        path = os.path.join(directory, f"autokernel-kb-{os.getpid()}-{secrets.token_hex(8)}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        self._files.append(path)
        try:
            os.ftruncate(fd, max(nbytes, 1))
            mapped = mmap.mmap(fd, max(nbytes, 1))
        finally:
            os.close(fd)
        return _view(mapped, shape, dtype, nbytes), ("shm", path, shape, _dtype_name(dtype), nbytes)

    def close(self):
        for path in self._files:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self._files.clear()
        self._tensors.clear()


def attach(handle, device):
    """The solver's view of a judge's tensor, on `device`: the judge's GPU as the solver numbers it
    (its cuda:0 where it sees that GPU alone)."""
    if handle[0] == "cuda":
        rebuild, args = handle[1]
        bound = inspect.signature(rebuild).bind(*args)
        bound.arguments["storage_device"] = device.index
        return rebuild(*bound.args)
    _, path, shape, dtype_name, nbytes = handle
    fd = os.open(path, os.O_RDWR)
    try:
        mapped = mmap.mmap(fd, max(nbytes, 1))
    finally:
        os.close(fd)
    return _view(mapped, shape, getattr(torch, dtype_name), nbytes)


def _view(mapped, shape, dtype, nbytes):
    raw = torch.frombuffer(mapped, dtype=torch.uint8, count=nbytes) if nbytes else torch.empty(0, dtype=torch.uint8)
    return raw.view(dtype).reshape(shape)


def _nbytes(shape, dtype):
    count = 1
    for size in shape:
        count *= size
    return count * torch.empty((), dtype=dtype).element_size()


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def raw_bytes(t):
    """The bytes of a contiguous tensor, as a flat uint8 view."""
    return t.reshape(-1).view(torch.uint8)


def poison(t):
    raw_bytes(t).fill_(POISON_BYTE)


def poisoned_mask(t):
    """True where an element still holds the poison bit pattern (compared as raw integers)."""
    size = t.element_size()
    words = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
    raw = t.reshape(-1).view(words)
    return raw == (POISON_BYTE if size == 1 else -1)


class Key:
    """Weights of a fingerprint: element i of row r in chunk k weighs u_k * v_r * w_i (mod 2^64).
    A secret key (the judge's input check) cannot be matched by a change the solution makes on
    purpose; a public one (seeded) serves the solver's probes, which only report."""

    def __init__(self, device, seed=None, chunk_rows=64):
        generator = torch.Generator().manual_seed(seed if seed is not None else secrets.randbits(63))
        draw = lambda n: torch.randint(-(1 << 62), 1 << 62, (n,), generator=generator, dtype=torch.int64) | 1
        self.columns = draw(_KEY_WIDTH).to(device)
        self.rows = draw(chunk_rows).to(device)
        self.chunks = draw(4096).tolist()

    @property
    def chunk_words(self):
        return self.rows.numel() * self.columns.numel()


def fingerprint(t, key):
    """A 64-bit keyed hash of the tensor's raw bytes (equal bytes give equal hashes)."""
    raw = raw_bytes(t.contiguous())
    words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
    total = torch.zeros((), dtype=torch.int64, device=t.device)
    width, step = key.columns.numel(), key.chunk_words
    for index, start in enumerate(range(0, words.numel(), step)):
        chunk = words[start:start + step].to(torch.int64)
        full = chunk.numel() // width * width
        rows = (chunk[:full].view(-1, width) * key.columns).sum(1) if full else chunk[:0]
        value = (rows * key.rows[:rows.numel()]).sum()
        if full < chunk.numel():
            value += (chunk[full:] * key.columns[:chunk.numel() - full]).sum() * key.rows[full // width]
        total += value * key.chunks[index % len(key.chunks)]
    return int(total)
