"""CUDA-graph replays of eager PyTorch and of eager with our kernels: a replay runs the same
kernels without any Python or launch cost, so it shows what the kernels themselves give, beside
the same treatment of PyTorch's own.
"""
import torch

from .loading import one_line
from .outputs import compare
from .runtime import apply as applying
from .timing import median_us, synchronize


def _graphed(forward):
    """forward() captured as a CUDA graph (after warm-up on a side stream), and its outputs."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(3):
            forward()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph, capture_error_mode="relaxed"):
        output = forward()
    return graph, output


def _replayed(bench, name, timing):
    loaded, settings = bench.loaded, bench.settings
    try:
        graph, output = _graphed(lambda: loaded.model(*loaded.inputs))
    except Exception as e:  # a kernel that cannot be captured is a note, not the end of verify
        timing[f"{name}_note"] = f"capture failed: {one_line(e)}"
        return None
    graph.replay()
    synchronize(loaded.device)
    timing[f"{name}_us"] = median_us(loaded.device, graph.replay, settings.warmup, settings.iterations)
    return output


def replay_timing(bench, reference, kernels):
    """Replay times of eager and of eager with `kernels` applied, and the replay's output check."""
    timing = {"kernels": list(kernels)}
    model = bench.loaded.model
    applying.restore(model)
    bench.progress("CUDA graphs of eager and ours")
    _replayed(bench, "eager", timing)
    if not kernels:
        return timing, []
    bench.apply(kernels)
    try:
        output = _replayed(bench, "ours", timing)
    finally:
        applying.restore(model)
    return timing, [] if output is None else compare(reference, output, bench.loaded.dtype, "ours, graph replay")
