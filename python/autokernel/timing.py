"""One way of timing a model's forward pass, as a user runs it: calls in a loop, each waited for,
the median wall time. Used by the profile's wall time and by verify's table, in eager mode and
under torch.compile in each of its modes.
"""
import gc
import itertools
import resource
import statistics
import sys
import time

import torch

COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead")


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_call_us(device, forward):
    """The wall time of one call of forward() in µs, from an idle device until it is done."""
    synchronize(device)
    start = time.perf_counter()
    forward()
    synchronize(device)
    return (time.perf_counter() - start) * 1e6


def wall_times_us(device, forward, warmup, iterations):
    """The wall time of each of `iterations` calls of forward() in µs, each waited for, after
    `warmup` untimed calls."""
    for _ in range(warmup):
        forward()
    return [timed_call_us(device, forward) for _ in range(iterations)]


def median_us(device, forward, warmup, iterations):
    """Median wall time of forward() in µs, each run waited for, after `warmup` untimed runs."""
    return statistics.median(wall_times_us(device, forward, warmup, iterations))


def device_name(device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def forward_in_mode(model, inputs, mode, before_first_call=lambda: None, fresh=()):
    """A no-grad forward of the model as run in `mode` ("eager" or a torch.compile mode, with
    fullgraph=True: a graph break is an error, not a silent fallback), and the seconds its first
    call took (the compilation). `before_first_call` runs after torch.compile has wrapped the model
    and before the call that compiles it: the wrapper decides from the model's forward then how to
    enter it on every later call (a torch.nn class's own forward, e.g. nn.Sequential's, through a
    frame of its own), so a model changed by apply() after wrapping is entered alike in both states.
    The first call takes `inputs`; forward(given) takes `given`, and forward() the next set of
    `fresh` in turn (round and round; `inputs` when there are none), which forward.next_inputs()
    also hands out, for calls that must share one set."""
    runner = model if mode == "eager" else torch.compile(model, mode=mode, fullgraph=True)
    before_first_call()

    turn = itertools.cycle(fresh) if fresh else itertools.repeat(inputs)

    def forward(given=None):
        with torch.no_grad():
            return runner(*(given if given is not None else next(turn)))

    forward.next_inputs = lambda: next(turn)

    start = time.perf_counter()
    first = forward(inputs)
    return forward, time.perf_counter() - start, first


def reset_compiled(compiling=True):
    """Forgets what torch.compile compiled, so the next variant of the model compiles afresh, and
    frees what the last compilation left (its graphs hold reference cycles). `compiling`: whether
    the next measurement compiles; only then is Inductor's compile pool started and awaited (its
    workers each import torch: seconds of every core, for nothing in an eager measurement)."""
    if "torch._dynamo" in sys.modules:  # (hasattr would import it: seconds, for nothing to forget)
        torch._dynamo.reset()
    gc.collect()
    pool = _compile_pool() if compiling else None
    if pool is not None and not pool.use_process_pool():
        # Until the pool answers, Inductor compiles every Triton kernel here, one at a time: on the
        # H100 a compile that took 10 s ran past 80 s so (2026-11-25, py-spy). Wait for it instead.
        try:
            pool.wait_pool_ready(timeout=60)
        except Exception:  # a pool that will not start: Inductor compiles here, slowly but correctly
            pass


def _compile_pool():
    try:
        from torch._inductor.async_compile import AsyncCompile
    except ImportError:
        return None
    return AsyncCompile if hasattr(AsyncCompile, "use_process_pool") else None


def compile_state():
    """A line on what compiling leaves: the process's peak resident memory and whether Inductor's
    compile pool takes its Triton kernels (else they compile in this process, one at a time)."""
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    pool = _compile_pool()
    if pool is None:
        state = ""
    elif torch._inductor.config.compile_threads == 1:  # (autokernel_sandbox's, with the GPU)
        state = "; one compile thread: kernels compile in this process"
    elif pool.use_process_pool():
        state = "; Inductor's compile pool in use"
    else:
        state = "; Inductor's compile pool not ready: kernels compile in this process"
    return f"peak memory {peak_gb:.1f} GB{state}"
