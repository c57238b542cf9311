"""fused_mlp (SwiGLU, down(silu(gate(x)) * up(x))) in and out of torch.compile's graphs, beside
PyTorch's MLP: why it made the compact LLaMA slower under reduce-overhead (+9 us a layer) though it
beat eager alone, and why it cost transformers' Llama ~2 ms of host time a forward under default.

A case is KIND:BxSxDxF (batch, tokens, width, hidden); KIND mlp is a Llama MLP of nn.Linear layers,
stackN is N blocks h = h + mlp(rmsnorm(h)) (the MLP as a decoder runs it). The CLI builds and checks
the kernel for exactly that problem (`autokernel bench --quick`), the kernel table takes it as
checked for that problem (as loading verify's kernels.json does), and autokernel.apply plugs it.
Variants: (a) eager, (b) compile default, (c) reduce-overhead, (d)-(f) the same with ours, (g)
apply's traced graph without our kernel under default. Each: timed (CUDA events) with its host enqueue time, checked
against (a), profiled; tables and Inductor's code under --out/mlp, JSON in --out/mlp_in_graph.json.
  python3 bench/mlp_in_graph.py --ak build-gpu/autokernel --out gpu-logs   (bench/gpu_mlp_in_graph.sh)
  python3 bench/mlp_in_graph.py --ak build/autokernel --device cpu          (host kernels, tiny shapes)
"""
import argparse
import copy
import json
import pathlib
import re
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
try:
    import torch
    import torch._inductor.config
    import torch.nn.functional as F
    from torch import nn
    from torch._inductor.utils import run_and_get_code

    import autokernel
    from autokernel.runtime import custom_ops
    from autokernel.runtime.abi import DTYPE_NAMES, TORCH_DTYPES
    from autokernel.runtime.kernel_table import TABLE, Kernel, device_arch
    from autokernel.verify import TOLERANCE
    from kernel_intervals import timeline
except ImportError as e:
    sys.exit(f"mlp_in_graph: cannot import what it needs: {e}")

GPU_CASES = "mlp:8x512x768x2048,mlp:1x2048x4096x11008,stack4:8x512x768x2048"
CPU_CASES = "mlp:2x16x32x48,mlp:1x64x64x172,stack2:2x16x32x48"
VARIANTS = [("a", "eager", "plain", "eager"), ("b", "default", "plain", "default"),
            ("c", "reduce-overhead", "plain", "reduce-overhead"), ("d", "ours eager", "ours", "eager"),
            ("e", "ours default", "ours", "default"), ("f", "ours reduce-overhead", "ours", "reduce-overhead"),
            ("g", "traced default", "traced", "default")]
API = re.compile(r"^(cu\w+|autokernel::\w+)$")  # CUDA runtime and driver calls, our op's calls


class Failure(Exception):
    """The run's end, in one line."""


class MLP(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.gate, self.up, self.down = nn.Linear(d, f, bias=False), nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Stack(nn.Module):
    """The MLP halves of N decoder layers: h = h + mlp(rmsnorm(h)), the norm as transformers writes it."""

    def __init__(self, d, f, layers):
        super().__init__()
        self.norms = nn.ParameterList([nn.Parameter(1 + 0.1 * torch.randn(d)) for _ in range(layers)])
        self.mlps = nn.ModuleList([MLP(d, f) for _ in range(layers)])

    def forward(self, h):
        for weight, mlp in zip(self.norms, self.mlps):
            n = h.float()
            n = n * torch.rsqrt(n.pow(2).mean(-1, keepdim=True) + 1e-6)
            h = h + mlp(weight * n.to(h.dtype))
        return h


def parse_case(text):
    m = re.fullmatch(r"(mlp|stack(\d+)):(\d+)x(\d+)x(\d+)x(\d+)", text)
    if not m:
        raise Failure(f"bad case {text!r}: KIND:BxSxDxF with KIND mlp or stackN, e.g. mlp:8x512x768x2048")
    b, s, d, f = map(int, m.group(3, 4, 5, 6))
    return {"name": text, "layers": int(m.group(2) or 0), "shape": (b, s, d), "f": f, "problem": f"{b * s}x{d}x{f}"}


def build_kernel(args, device, problem, dtype_name, work):
    """The fused_mlp module for this problem, through the CLI's harness (--quick), registered in the
    kernel table as checked for exactly this problem (what loading verify's kernels.json does)."""
    source = args.source or ROOT / "kernels" / ("cuda/fused_mlp.cu" if device.type == "cuda" else "host/fused_mlp.cpp")
    command = [args.ak, "bench", str(source), "--op", "fused_mlp", "--shape", problem, "--dtype", dtype_name,
               "--quick", "--json", "--max-time", "0.5", "--results", str(work / "results.tsv")]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise Failure(f"autokernel bench of fused_mlp {problem} ran past 600 s") from None
    (work / "bench.txt").write_text(run.stdout + run.stderr)
    try:
        answer = json.loads(run.stdout[run.stdout.find("{"):])
    except ValueError:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        raise Failure(f"autokernel bench gave no JSON (exit {run.returncode}): {last}") from None
    if answer.get("status") != "PASS" or not pathlib.Path(answer.get("module", "")).is_file():
        raise Failure(f"fused_mlp {problem} {dtype_name} failed the harness: {answer.get('status')} "
                      f"{answer.get('stage', '')} {answer.get('reason', '')}".strip())
    name = f"fused_mlp_{problem}_{dtype_name}"
    TABLE.add(Kernel(name, "fused_mlp", answer["module"], device_arch(device), frozenset({(problem, dtype_name)})))
    return name, answer.get("timing", {}).get("median_us")


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def counts(kernel):
    """Our kernel's calls since the last reset: (through its Python twin, in C++, PyTorch fallbacks)."""
    python = TABLE.calls_in_python().get(kernel, 0)
    return python, TABLE.calls.get(kernel, 0) - python, sum(TABLE.fallbacks.values())


def timed(call, device, reps, loop):
    """Median us a call (CUDA events around a loop of calls; wall time on the CPU), and median host
    us a call (the loop's enqueue time, before any synchronization)."""
    for _ in range(3):
        call()
    sync(device)
    walls, hosts = [], []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        for _ in range(loop):
            call()
        hosts.append((time.perf_counter() - t0) * 1e6 / loop)
        if device.type == "cuda":
            end.record()
            end.synchronize()
        walls.append(start.elapsed_time(end) * 1e3 / loop if device.type == "cuda" else hosts[-1])
    return statistics.median(walls), statistics.median(hosts)


def profiled(call, device, calls, path, title):
    """torch.profiler (CPU and CUDA) over `calls` calls: its tables (to `path`), GPU time a call per
    kernel, and the CUDA API calls and our op's calls a call."""
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device.type == "cuda" else [])
    sync(device)
    t0 = time.perf_counter()
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(calls):
            call()
        sync(device)
    wall = (time.perf_counter() - t0) * 1e6 / calls
    events = prof.key_averages()
    kernels = sorted(((e.self_device_time_total / calls, e.key) for e in events
                      if e.device_type == torch.autograd.DeviceType.CUDA and e.self_device_time_total > 0), reverse=True)
    tables = {"self CPU": events.table(sort_by="self_cpu_time_total", row_limit=15)}
    if device.type == "cuda":
        tables["CUDA"] = events.table(sort_by="device_time_total", row_limit=15)
    path.write_text(f"== {title}: {wall:.1f} us a call under the profiler ({calls} calls)\n"
                    + "".join(f"-- top 15 by {k} time\n{t}\n" for k, t in tables.items()))
    return {"profiled_wall_us": round(wall, 1), "kernels_us": {k: round(us, 2) for us, k in kernels},
            "kernel_sum_us": round(sum(us for us, _ in kernels), 2), "timeline": timeline(prof, calls),
            "api_per_call": {e.key: e.count / calls for e in events if API.match(e.key)}}, tables


def code_summary(codes):
    """Inductor's generated code: its kernels, its matmuls, our op's calls and the lines of `call`
    that launch or check something, in order."""
    text = "\n".join(codes)
    step = re.compile(r"^\s+(?:\w+ = )?(?:torch\.ops\.|extern_kernels\.|triton_|cpp_fused|assert_tensor_metadata)")
    return {"triton_kernels": text.count("async_compile.triton("),
            "extern_mm": len(re.findall(r"extern_kernels\.(?:mm|addmm|bmm)\(", text)),
            "our_op_calls": len(re.findall(r"= torch\.ops\.autokernel\.", text)),
            "not_aligned": text.count("assumed to be not aligned"),
            "steps": [line.strip()[:200] for line in text.splitlines() if step.match(line)]}


def run_variant(label, model, mode, x, reference, device, args, work, kernel):
    torch._dynamo.reset()
    graphs = mode == "reduce-overhead"
    runner = model if mode == "eager" else torch.compile(model, mode=mode, fullgraph=True)

    def call():
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        with torch.no_grad():
            return runner(x)

    row, slug, start = {"variant": label, "mode": mode}, label.replace(" ", "_"), time.perf_counter()
    if mode == "eager":
        call()
    else:  # the compile, its generated code kept
        _, codes = run_and_get_code(call)
        (work / f"code-{slug}.py").write_text("\n\n# ----\n".join(codes))
        row["code"] = code_summary(codes)
    row["first_call_s"] = round(time.perf_counter() - start, 2)
    TABLE.reset_counts()
    row["us"], row["host_us"] = timed(call, device, args.reps, args.loop)
    forwards = 3 + args.reps * args.loop
    row["per_forward"] = dict(zip(("twin", "native", "fallbacks"), (n / forwards for n in counts(kernel))))
    got, ref = call().double(), reference.double()
    row["rel_err"] = float((got - ref).norm() / ref.norm().clamp_min(1e-300))
    row["ok"] = row["rel_err"] <= TOLERANCE[x.dtype]
    TABLE.reset_counts()
    row["profile"], tables = profiled(call, device, args.profile_calls, work / f"profile-{slug}.txt", label)
    row["profile"]["twin_native_calls"] = counts(kernel)[:2]
    return row, tables


def show(key, row, tables, args):
    p, c = row["profile"], row.get("code")
    print(f"-- ({key}) {row['variant']}: {row['us']:.1f} us a call, host {row['host_us']:.1f} us, rel err "
          f"{row['rel_err']:.2e}{'' if row['ok'] else ' FAIL'}; our op per forward: twin {row['per_forward']['twin']:.2f}, "
          f"C++ {row['per_forward']['native']:.2f}; first call {row['first_call_s']} s", flush=True)
    if c:
        print(f"   Inductor: {c['triton_kernels']} Triton kernels, {c['extern_mm']} extern mm, {c['our_op_calls']} calls "
              f"of our op ({c['not_aligned']} outputs 'assumed not aligned'); its launches:")
        print("".join(f"     {line[:160]}\n" for line in c["steps"][:args.steps]), end="")
    print(f"   per call under the profiler ({p['profiled_wall_us']} us): "
          f"{', '.join(f'{k} {v:g}' for k, v in p['api_per_call'].items()) or 'no CUDA API calls'}")
    if key in "beg":  # default mode: where the host's time goes
        for what, text in tables.items():
            print(f"   top 15 by {what} time:\n{text}")
    if p["kernels_us"]:
        t = p["timeline"]
        print(f"   GPU timeline a call: busy {t['busy_us']:.1f} us, idle between kernels queued back to back "
              f"{t['idle_us']:.1f} us ({t['gaps']:.1f} gaps), {t['overlaps']:.1f} overlaps; idle before: "
              + ", ".join(f"{name[:40]} {us:.1f}" for name, us in list(t["idle_before"].items())[:6]))
        print(f"   GPU kernels, us a call (sum {p['kernel_sum_us']}):")
        print("".join(f"     {us:9.2f}  {name[:120]}\n" for name, us in list(p["kernels_us"].items())[:12]), end="")


def run_case(case, device, dtype, args, out):
    work = out / "mlp" / re.sub(r"[^A-Za-z0-9._-]", "_", case["name"])
    work.mkdir(parents=True, exist_ok=True)
    kernel, alone_us = build_kernel(args, device, case["problem"], DTYPE_NAMES[dtype], work)
    print(f"== {case['name']}: fused_mlp {case['problem']} {DTYPE_NAMES[dtype]} passed the harness "
          f"(alone {alone_us or 0:.1f} us)", flush=True)
    torch.manual_seed(args.seed)
    d, f, layers = case["shape"][2], case["f"], case["layers"]
    plain = (Stack(d, f, layers) if layers else MLP(d, f)).eval().to(device, dtype)
    x = torch.randn(*case["shape"], generator=torch.Generator().manual_seed(args.seed + 1)).to(device, dtype)
    ours, traced = copy.deepcopy(plain), copy.deepcopy(plain)
    autokernel.apply(ours, (x,), kernels=[kernel], ops=["fused_mlp"])
    report = autokernel.report(ours)
    if report is None or len(report.plugged()) != max(layers, 1):
        raise Failure(f"{case['name']}: fused_mlp plugged at {len(report.plugged()) if report else 0} of "
                      f"{max(layers, 1)} sites ({' / '.join(str(report).splitlines()) if report else 'model unchanged'})")
    autokernel.apply(traced, (x,), kernels=[], keep_traced=True)
    with torch.no_grad():
        reference = plain(x).clone()
    models, rows = {"plain": plain, "ours": ours, "traced": traced}, []
    for key, label, which, mode in VARIANTS:
        if key not in args.variants:
            continue
        if mode == "reduce-overhead" and device.type != "cuda":
            rows.append({"key": key, "variant": label, "mode": mode, "note": "skipped: CUDA graphs need a GPU"})
            print(f"-- ({key}) {label}: skipped, reduce-overhead is CUDA graphs and this is the CPU")
            continue
        row, tables = run_variant(label, models[which], mode, x, reference, device, args, work, kernel)
        rows.append({"key": key, **row})
        show(key, row, tables, args)
    return {"case": case, "kernel": kernel, "harness_us": alone_us, "sites": [vars(s) for s in report.sites],
            "custom_ops": "C++" if TABLE.native is not None else "Python", "rows": rows}


def table(results):
    """One row a variant; "PyTorch's mode": PyTorch's time in the same mode over this one, and the
    difference a layer (an MLP), the figure the models' +9 us a layer compares with."""
    lines = ["| case | variant | us/call | host us | PyTorch's mode / this | GPU kernels us | GPU idle us | "
             "our op a fwd: twin/C++ | rel err | first call s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        name, layers = result["case"]["name"], max(result["case"]["layers"], 1)
        base = {r["mode"]: r["us"] for r in result["rows"] if r.get("key") in ("a", "b", "c") and "us" in r}
        for r in result["rows"]:
            if "us" not in r:
                lines.append(f"| {name} | ({r.get('key', '-')}) {r['variant']} | {r.get('note', '')} | | | | | | | |")
                continue
            pf, us = r["per_forward"], base.get(r["mode"])
            versus = f"{us / r['us']:.2f}x ({(r['us'] - us) / layers:+.1f} us a layer)" if us else "-"
            lines.append(f"| {name} | ({r['key']}) {r['variant']} | {r['us']:.1f} | {r['host_us']:.1f} | {versus} | "
                         f"{r['profile']['kernel_sum_us'] or '-'} | {r['profile']['timeline']['idle_us']:.1f} | "
                         f"{pf['twin']:.2f}/{pf['native']:.2f} | "
                         f"{r['rel_err']:.1e}{'' if r['ok'] else ' FAIL'} | {r['first_call_s']} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ak", default=str(ROOT / "build-gpu" / "autokernel"), help="the autokernel CLI")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--dtype", default="auto", choices=("auto", "fp16", "bf16", "fp32"))
    parser.add_argument("--cases", help=f"comma-separated KIND:BxSxDxF (GPU default {GPU_CASES}; CPU {CPU_CASES})")
    parser.add_argument("--variants", default="abcdefg", help="which of (a)-(g) to run")
    parser.add_argument("--source", help="the fused_mlp kernel file to plug (default: the starter of the device's backend)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--loop", type=int, default=10, help="calls a timed rep")
    parser.add_argument("--profile-calls", type=int, default=10)
    parser.add_argument("--steps", type=int, default=24, help="lines of Inductor's generated code printed a variant")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=0, help="seconds: no case starts after this (0: none)")
    parser.add_argument("--out", default="gpu-logs")
    args = parser.parse_args()
    started = time.perf_counter()
    try:
        if args.device == "cuda" and not torch.cuda.is_available():
            raise Failure("--device cuda, and PyTorch sees no GPU")
        gpu = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
        device = torch.device("cuda" if gpu else "cpu")
        dtype = TORCH_DTYPES[args.dtype if args.dtype != "auto" else ("fp16" if gpu else "fp32")]
        if not pathlib.Path(args.ak).is_file():
            raise Failure(f"no CLI at {args.ak} (build it: source bench/gpu_env.sh; build_autokernel)")
        cases = [parse_case(c) for c in (args.cases or (GPU_CASES if gpu else CPU_CASES)).split(",") if c]
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        torch._inductor.config.fx_graph_cache = False  # every compile generates its code, which we keep
        custom_ops.define()
        name = torch.cuda.get_device_name(device) if gpu else "cpu"
        print(f"== {name}, torch {torch.__version__}, {DTYPE_NAMES[dtype]}, custom ops in "
              f"{'C++' if TABLE.native is not None else 'Python (native kernels not built: see above)'}; "
              f"median of {args.reps} reps of {args.loop} calls", flush=True)
        results = []
        for case in cases:
            if args.budget and time.perf_counter() - started > args.budget:
                print(f"== {case['name']}: skipped, the budget ({args.budget:.0f} s) ran out")
                results.append({"case": case, "rows": [{"variant": "-", "note": "skipped: budget"}]})
                continue
            results.append(run_case(case, device, dtype, args, out))
            (out / "mlp_in_graph.json").write_text(json.dumps({"device": name, "torch": torch.__version__,
                                                               "results": results}, indent=1, default=str))
    except Failure as e:
        sys.exit(f"mlp_in_graph: {e}")
    print(f"\n== fused_mlp in and out of torch.compile ({time.perf_counter() - started:.0f} s). GPU kernels us: "
          f"kernel time a call in the profile; GPU idle us: between kernels queued back to back (bench/kernel_intervals.py); twin/C++: our op's calls a forward through its Python twin / in C++ "
          f"(0/0 under CUDA graphs: replayed)\n{table(results)}")
    bad = [(res["case"]["name"], r) for res in results for r in res["rows"] if r.get("ok") is False]
    if bad:
        sys.exit(f"mlp_in_graph: {len(bad)} outputs differ from eager beyond tolerance: "
                 + ", ".join(f"{n} {r['variant']} {r['rel_err']:.2e}" for n, r in bad))


if __name__ == "__main__":
    main()
