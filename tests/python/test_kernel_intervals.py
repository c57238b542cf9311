"""bench/kernel_intervals.py: the GPU's busy time, its idle time between kernels queued back to
back, and overlaps, read off a profiler's kernel intervals (here made up, in microseconds)."""
import sys
import unittest
from types import SimpleNamespace

import torch
from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from kernel_intervals import HOST_GAP_US, timeline  # noqa: E402 (bench/ just put on the path)

CUDA, CPU = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU


def trace(*events):
    """A stand-in for a torch.profiler profile: (name, start, end, device type) per event."""
    made = [SimpleNamespace(name=name, device_type=kind, time_range=SimpleNamespace(start=start, end=end))
            for name, start, end, kind in events]
    return SimpleNamespace(events=lambda: made)


class Timeline(unittest.TestCase):
    def test_gaps_overlaps_and_the_hosts_pauses(self):
        prof = trace(("gemm", 0, 10, CUDA), ("norm", 12, 15, CUDA),  # a 2 µs gap before norm
                     ("pdl", 14, 20, CUDA),  # starts 1 µs before norm ends: an overlap
                     ("host work", 20, 500, CPU),  # not a kernel
                     ("gemm", 20 + HOST_GAP_US + 1, 30 + HOST_GAP_US + 1, CUDA),  # after the host's pause
                     ("norm", 30 + HOST_GAP_US + 4, 32 + HOST_GAP_US + 4, CUDA))  # a 3 µs gap
        t = timeline(prof, calls=2)
        self.assertAlmostEqual(t["busy_us"], (10 + 3 + 5 + 10 + 2) / 2)
        self.assertAlmostEqual(t["idle_us"], (2 + 3) / 2)
        self.assertEqual(t["gaps"], 1.0)
        self.assertEqual(t["overlaps"], 0.5)
        self.assertEqual(t["idle_before"], {"norm": 2.5})

    def test_no_kernels_no_time(self):
        t = timeline(trace(("host work", 0, 5, CPU)), calls=3)
        self.assertEqual((t["busy_us"], t["idle_us"], t["gaps"], t["overlaps"], t["idle_before"]), (0, 0, 0, 0, {}))


if __name__ == "__main__":
    unittest.main()
