"""What the GPU did between its kernels in a torch.profiler trace: the time in which some kernel
ran, the idle time between kernels that the host did not cause, and kernels that overlapped.

Inside a CUDA graph, or a queue the host keeps ahead, the gap from one kernel's end to the next
one's start is the GPU's own cost of starting a kernel (a microsecond or a few). Programmatic
dependent launch lets the next kernel start before the last one ends: an overlap, which the
kernels' summed time counts twice. A gap longer than HOST_GAP_US is the host's: between calls,
or a host-bound queue. Used by bench/compiled_time.py and bench/mlp_in_graph.py.
"""
import torch

HOST_GAP_US = 20.0


def timeline(prof, calls):
    """Per call: busy_us (the union of the kernels' intervals), idle_us (gaps up to HOST_GAP_US
    between one kernel's end and the next one's start), gaps and overlaps (how many), and
    idle_before {kernel name: idle µs before its starts}, the names with the most first."""
    spans = sorted((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA)
    busy = idle = 0.0
    gaps = overlaps = 0
    before = {}
    end = float("-inf")
    for start, stop, name in spans:
        if start < end:
            overlaps += 1
        elif start - end <= HOST_GAP_US:
            idle += start - end
            gaps += 1
            before[name] = before.get(name, 0.0) + (start - end) / calls
        if stop > end:
            busy += stop - max(start, end)
            end = stop
    return {"busy_us": busy / calls, "idle_us": idle / calls, "gaps": gaps / calls, "overlaps": overlaps / calls,
            "idle_before": dict(sorted(before.items(), key=lambda item: -item[1]))}
