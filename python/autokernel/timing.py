"""One way of timing a model's forward pass, for the profile's wall time and verify's table."""
import statistics
import time

import torch


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_us(device, forward, warmup, iterations):
    """Median wall time of forward() in µs, each run waited for, after `warmup` untimed runs."""
    for _ in range(warmup):
        forward()
    times = []
    for _ in range(iterations):
        synchronize(device)
        start = time.perf_counter()
        forward()
        synchronize(device)
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def device_name(device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
