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

    python3 bench/generate_time.py --model examples/hf_llama.py:HFLlama --prompt 8,512 \\
        --new-tokens 32 --workspace /tmp/gen-prefill --workspace /tmp/gen-decode --json-out gen.json
"""
import argparse
import collections
import json
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
except ImportError as e:
    sys.exit(f"generate_time: cannot import what it needs: {e}")


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="path/to/file.py:Class wrapping a transformers model as .model")
    parser.add_argument("--prompt", default="8,512", help="batch,tokens of the prompt")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--workspace", action="append", required=True, help="a run's workspace or an export")
    parser.add_argument("--dtype", default="fp16", choices=("fp16", "bf16", "fp32"))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.new_tokens < 2 or args.repeats < 1:
        parser.error("--new-tokens must be at least 2 and --repeats at least 1")
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
    return model, loaded.inputs[0], loaded.device


def generate(model, ids, new_tokens):
    with torch.no_grad():
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                              min_new_tokens=new_tokens, do_sample=False)


def time_both(model, ids, device, new_tokens, repeats):
    """{(applied, tokens): [µs per generate()]} over the rounds, the two states alternating."""
    times = collections.defaultdict(list)
    with aside(model) as switch:
        for round_ in range(repeats + 1):  # round 0 warms both states up (allocator, autotuning)
            order = (True, False) if round_ % 2 else (False, True)
            for applied in order:
                switch(applied)
                for tokens in (1, new_tokens):
                    us = timed_call_us(device, lambda: generate(model, ids, tokens))
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
    ours_tokens, ours_calls = kernel_calls(model, ids, args.new_tokens, True)
    eager_tokens, eager_calls = kernel_calls(model, ids, args.new_tokens, False)
    if eager_calls:
        raise SystemExit(f"generate_time: the model set aside still ran our kernels: {eager_calls}")
    times = time_both(model, ids, device, args.new_tokens, args.repeats)
    med = {key: statistics.median(values) for key, values in times.items()}
    n = args.new_tokens
    rows = []
    for name, tokens in (("prefill + 1 token", 1), (f"prefill + {n} tokens", n)):
        rows.append((name, med[(False, tokens)], med[(True, tokens)]))
    step = {applied: (med[(applied, n)] - med[(applied, 1)]) / (n - 1) for applied in (False, True)}
    rows.append(("one decode step", step[False], step[True]))
    new = ours_tokens[:, ids.shape[1]:] == eager_tokens[:, ids.shape[1]:]
    print(f"generate(): {args.model} prompt {args.prompt}, {n} new tokens, {args.dtype}, {args.repeats} rounds "
          f"(medians, µs); {len(report.plugged())} sites plugged, {len(report.modules)} modules patched")
    print(f"{'call':<24}{'eager':>12}{'ours':>12}{'speedup':>10}")
    for name, eager, ours in rows:
        print(f"{name:<24}{eager:>12.0f}{ours:>12.0f}{eager / ours:>9.3f}x")
    print(f"our kernels' calls in one generate(): {dict(sorted(ours_calls.items()))}")
    print(f"new tokens equal to eager's: {int(new.sum())} of {new.numel()}")
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps({
            "model": args.model, "prompt": args.prompt, "new_tokens": n, "dtype": args.dtype,
            "workspaces": args.workspace, "times_us": {f"{'ours' if a else 'eager'}_{t}": v for (a, t), v in times.items()},
            "rows": [{"call": r[0], "eager_us": r[1], "ours_us": r[2]} for r in rows],
            "kernel_calls": ours_calls, "tokens_equal": int(new.sum()), "tokens": new.numel(),
            "modules_patched": report.modules}, indent=1) + "\n")


if __name__ == "__main__":
    main()
