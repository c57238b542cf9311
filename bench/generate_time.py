"""model.generate() as a transformers user runs it, with and without our kernels: the prompt's
forward pass (prefill) and each decode step (one token a row, the key/value cache on), timed on
one model whose applied state is switched call by call (autokernel's `aside`), so that both see
the same machine drift.

The model is a wrapper of transformers' own model (examples/hf_llama.py's HFLlama: its `.model`),
traced by apply on the prompt's ids. Kernels come from one or more workspaces (or exports): a run
at the prompt's shape checks the prefill's problems, a run at `--input-shape <batch>,1` a decode
step's. Only kernels verify kept (kernels.json's `use`) are loaded.

For each of `--repeats` rounds, in alternating order: generate(max_new_tokens=1) (the prefill and
one token) and generate(max_new_tokens=N), each waited for; a decode step's time is
(T_N - T_1) / (N - 1). Prints one table; `--json-out` writes every time, the kernels each call
of ours ran per generate() call, and how many of the tokens the two agree on (fp16 kernels may
pick another of two near-tied tokens; greedy decoding then goes its own way).

`--compile MODE` (default, reduce-overhead, max-autotune-no-cudagraphs; none, the default, is the
eager run above) times generate() as transformers users run it compiled: the static key/value
cache (generation_config.cache_implementation "static", sized once for the prompt and N tokens)
and transformers' own compile of the forward, CompileConfig(mode=MODE) in generation_config (its
generate() compiles `model.__call__` once, get_compiled_call, and runs the decode steps through it;
the prefill stays eager there). Both states run that one compiled forward: each should compile on
its first call, and switching should pick its compiled code again. The JSON records the mode, the
frames Dynamo compiled in each state's first generate() and in the timed calls, the graph breaks
with their reasons and whether the recompile limit was hit; a timed call that compiled is warned
of (its time is not a compiled generate()'s). reduce-overhead (CUDA graphs) needs a GPU.

    python3 bench/generate_time.py --model examples/hf_llama.py:HFLlama --prompt 8,512 \\
        --new-tokens 32 --workspace /tmp/gen-prefill --workspace /tmp/gen-decode --json-out gen.json
"""
import argparse
import collections
import json
import logging
import pathlib
import statistics
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
try:
    import torch

    import autokernel
    from autokernel import loading
    from autokernel.runtime import manifest
    from autokernel.runtime.apply import aside
    from autokernel.runtime.kernel_table import TABLE
    from autokernel.timing import timed_call_us
    from torch._dynamo.utils import counters
except ImportError as e:
    sys.exit(f"generate_time: cannot import what it needs: {e}")


COMPILE_MODES = ("none", "default", "reduce-overhead", "max-autotune-no-cudagraphs")


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="path/to/file.py:Class wrapping a transformers model as .model")
    parser.add_argument("--prompt", default="8,512", help="batch,tokens of the prompt")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--workspace", action="append", required=True, help="a run's workspace or an export")
    parser.add_argument("--dtype", default="fp16", choices=("fp16", "bf16", "fp32"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--compile", default="none", choices=COMPILE_MODES, metavar="MODE",
                        help="none (eager, a dynamic cache) or transformers' compile of the forward in this "
                             "torch.compile mode, with a static cache: " + ", ".join(COMPILE_MODES[1:]))
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.new_tokens < 2 or args.repeats < 1:
        parser.error("--new-tokens must be at least 2 and --repeats at least 1")
    if args.compile == "reduce-overhead" and loading.pick_device(args.device).type != "cuda":
        print("generate_time: --compile reduce-overhead needs CUDA (CUDA graphs); on this device use "
              "default or max-autotune-no-cudagraphs", file=sys.stderr)
        sys.exit(2)
    return args


def generator_model(args):
    """The wrapped transformers model with its cache on, and the prompt's ids."""
    loaded = loading.load(args.model, args.prompt, args.dtype, args.device)
    model = getattr(loaded.model, "model", None)
    if model is None or not hasattr(model, "generate"):
        raise SystemExit(f"generate_time: {args.model} has no .model with generate() (a transformers model)")
    model.config.use_cache = True
    model.generation_config.use_cache = True
    model.generation_config.pad_token_id = model.generation_config.eos_token_id or 0
    ids = loaded.inputs[0]
    if args.compile != "none":
        compile_static(model, args.compile, ids.shape[1] + args.new_tokens, loaded.device)
    return model, ids, loaded.device


def compile_static(model, mode, length, device):
    """generate() as transformers compiles it: a static cache (one size for every call, so that
    generate(max_new_tokens=1) prefills the same cache as generate(max_new_tokens=N)) and
    CompileConfig(mode=mode); transformers compiles only on an accelerator unless told
    (_compile_all_devices, as its own tests do on a CPU)."""
    from transformers import CompileConfig

    config = CompileConfig(mode=mode)
    if device.type != "cuda":
        config._compile_all_devices = True
    settings = model.generation_config
    settings.cache_implementation = "static"
    settings.max_cache_len = length
    settings.compile_config = config
    settings.disable_compile = False


class LimitHits(logging.Handler):
    """Counts Dynamo's warnings that a function hit its recompile limit (from then on, calls that
    none of its compiled entries fits run uncompiled)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.hits = 0
        logging.getLogger("torch._dynamo.convert_frame").addHandler(self)

    def emit(self, record):
        self.hits += str(record.msg).startswith("torch._dynamo hit config.")


def dynamo_counts():
    """Dynamo's running totals: frames compiled, graphs, graph breaks."""
    return collections.Counter(frames=counters["frames"]["ok"], graphs=counters["stats"]["unique_graphs"],
                               breaks=sum(counters["graph_break"].values()))


def compiled_during(counts, key, call):
    """call(), adding to counts[key] the frames Dynamo compiled during it."""
    before = dynamo_counts()["frames"]
    result = call()
    counts[key] += dynamo_counts()["frames"] - before
    return result


def generate(model, ids, new_tokens):
    with torch.no_grad():
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                              min_new_tokens=new_tokens, do_sample=False)


def time_both(model, ids, device, new_tokens, repeats, compiled):
    """{(applied, tokens): [µs per generate()]} over the rounds, the two states alternating;
    compiled[(applied, "timed")]: the frames Dynamo compiled during them (warm-up round included)."""
    times = collections.defaultdict(list)
    with aside(model) as switch:
        for round_ in range(repeats + 1):  # round 0 warms both states up (allocator, autotuning)
            order = (True, False) if round_ % 2 else (False, True)
            for applied in order:
                switch(applied)
                for tokens in (1, new_tokens):
                    us = compiled_during(compiled, (applied, "timed"),
                                         lambda: timed_call_us(device, lambda: generate(model, ids, tokens)))
                    if round_:
                        times[(applied, tokens)].append(us)
    return times


def kernel_calls(model, ids, new_tokens, applied):
    """Our kernels' calls during one generate(), by kernel name."""
    with aside(model) as switch:
        switch(applied)
        TABLE.reset_counts()
        tokens = generate(model, ids, new_tokens)
        return tokens, {name: calls for name, calls in TABLE.calls.items() if calls}


def main():
    args = parse()
    model, ids, device = generator_model(args)
    for workspace in args.workspace[1:]:
        manifest.load(workspace)
    autokernel.apply(model, (ids,), workspace=args.workspace[0])
    report = autokernel.report(model)
    limit_hits = LimitHits()
    compiled = collections.Counter()  # (applied, "first" or "timed") -> frames Dynamo compiled
    ours_tokens, ours_calls = compiled_during(compiled, (True, "first"),
                                              lambda: kernel_calls(model, ids, args.new_tokens, True))
    eager_tokens, eager_calls = compiled_during(compiled, (False, "first"),
                                                lambda: kernel_calls(model, ids, args.new_tokens, False))
    if eager_calls:
        raise SystemExit(f"generate_time: the model set aside still ran our kernels: {eager_calls}")
    times = time_both(model, ids, device, args.new_tokens, args.repeats, compiled)
    med = {key: statistics.median(values) for key, values in times.items()}
    n = args.new_tokens
    rows = []
    for name, tokens in (("prefill + 1 token", 1), (f"prefill + {n} tokens", n)):
        rows.append((name, med[(False, tokens)], med[(True, tokens)]))
    step = {applied: (med[(applied, n)] - med[(applied, 1)]) / (n - 1) for applied in (False, True)}
    rows.append(("one decode step", step[False], step[True]))
    new = ours_tokens[:, ids.shape[1]:] == eager_tokens[:, ids.shape[1]:]
    how = "eager" if args.compile == "none" else f"static cache, forward compiled ({args.compile})"
    print(f"generate(): {args.model} prompt {args.prompt}, {n} new tokens, {args.dtype}, {how}, {args.repeats} "
          f"rounds (medians, µs); {len(report.plugged())} sites plugged, {len(report.modules)} modules patched")
    print(f"{'call':<24}{'eager':>12}{'ours':>12}{'speedup':>10}")
    for name, eager, ours in rows:
        print(f"{name:<24}{eager:>12.0f}{ours:>12.0f}{eager / ours:>9.3f}x")
    print(f"our kernels' calls in one generate(): {dict(sorted(ours_calls.items()))}")
    print(f"new tokens equal to eager's: {int(new.sum())} of {new.numel()}")
    compile_record = None
    if args.compile != "none":
        totals = dynamo_counts()
        compile_record = {
            "mode": args.compile, "cache_implementation": "static",
            "frames_compiled": {f"{'ours' if a else 'eager'}_{when}": compiled[(a, when)]
                                for a in (True, False) for when in ("first", "timed")},
            "graphs": totals["graphs"], "graph_breaks": totals["breaks"],
            "graph_break_reasons": dict(counters["graph_break"]),
            "recompile_limit": torch._dynamo.config.recompile_limit, "recompile_limit_hits": limit_hits.hits,
            "cudagraphs": {k: v for k, v in counters["inductor"].items() if k.startswith("cudagraph")}}
        print(f"Dynamo: frames compiled by the first generate() of ours {compiled[(True, 'first')]}, of eager "
              f"{compiled[(False, 'first')]}, by the {4 * (args.repeats + 1)} timed calls (switching between them) "
              f"{compiled[(True, 'timed')] + compiled[(False, 'timed')]}; {totals['graphs']} graphs, "
              f"{totals['breaks']} graph breaks")
        timed = {applied: compiled[(applied, "timed")] for applied in (True, False)}
        if any(timed.values()) or limit_hits.hits:
            limit = (f", and hit Dynamo's recompile limit ({torch._dynamo.config.recompile_limit}): later calls that "
                     "fit none of its entries ran uncompiled" if limit_hits.hits else "")
            print(f"WARNING: the timed calls recompiled (ours {timed[True]} frames, eager {timed[False]}){limit}; "
                  "these times are not compiled generate()'s (TORCH_LOGS=recompiles says why)")
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps({
            "model": args.model, "prompt": args.prompt, "new_tokens": n, "dtype": args.dtype,
            "compile": args.compile, "compile_counts": compile_record,
            "workspaces": args.workspace, "times_us": {f"{'ours' if a else 'eager'}_{t}": v for (a, t), v in times.items()},
            "rows": [{"call": r[0], "eager_us": r[1], "ours_us": r[2]} for r in rows],
            "kernel_calls": ours_calls, "tokens_equal": int(new.sum()), "tokens": new.numel(),
            "modules_patched": report.modules}, indent=1) + "\n")


if __name__ == "__main__":
    main()
