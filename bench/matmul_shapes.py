#!/usr/bin/env python3
"""Our matmul (or fused_mlp, or flash_attention) against PyTorch on the shapes models have, one configuration per column.

Every shape of the operator in the shipped H100 profiles (python/autokernel/profiles/*nvidia*.json)
plus --extra-shapes, fp16 (and bf16 where --dtypes says). Each configuration ("NAME=VALUE ..." of
the CUDA starter's tuning parameters) is built and checked once by `autokernel bench --quick`
(the smoke problem and the timed one, not the five stages; all compiled in parallel first, then
checked one at a time so that no check is timed beside another); its module is then loaded here (the kernel ABI, as compare.py
does), its output on each shape checked against PyTorch in fp32, and timed by compare.py's method
(L2 flushed by a read, the stream kept busy while enqueuing, events, median) beside PyTorch's call
(cuBLAS for matmul; three matmuls and the SiLU product for fused_mlp; SDPA for attention, with
enable_gqa on grouped-query shapes).

    python3 bench/matmul_shapes.py --ak build-gpu/autokernel [--op fused_mlp] \\
        --configs "TMA_STORE=0;BLOCK_N=128 STAGES=5 TMA_STORE=1" [--json-out rows.json]

Prints one markdown table: µs per configuration, PyTorch's µs, and PyTorch / the best of ours.
"""
import argparse
import concurrent.futures
import glob
import json
import pathlib
import sys

import torch

from compare import FUNCTIONS, TORCH_DTYPE, Timer, make_inputs
from compare_ours import KernelModule, _outputs_and_scalars, checked_module
from problem_shape import shape_dims, shape_params

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECK_SHAPE = {"matmul": "1000x1000x200", "fused_mlp": "1000x256x520", "flash_attention": "2x4x300x128:causal=1"}
EXTRA_SHAPES = {"matmul": "4096x4096x4096,8192x8192x8192", "fused_mlp": "4096x4096x11008",
                "flash_attention": "4x32x4096x128:causal=1,4x32x4096x128:causal=0"}
# Relative error (2-norm) allowed against PyTorch in fp32: about the dtype's rounding of the output.
MAX_REL_ERROR = {"fp16": 5e-3, "bf16": 1.5e-2}


def model_shapes(op):
    """(shape, where) for every call of `op` in the shipped GPU profiles."""
    seen = {}
    for path in sorted(glob.glob(str(ROOT / "python" / "autokernel" / "profiles" / "*nvidia*.json"))):
        doc = json.loads(pathlib.Path(path).read_text())
        model = doc["model"].get("spec", "?") if isinstance(doc["model"], dict) else doc["model"]
        for e in doc["entries"]:
            if e.get("op") == op:
                seen.setdefault(e["problem"], f"{model} ({e['us'] / doc['total_us']:.0%})")
    return list(seen.items())


def build(ak, op, config):
    """(config, module path or None, note): the starter with `config` as its defaults, checked."""
    module, failure = checked_module(ak, "cuda", op, config, CHECK_SHAPE[op], "fp16")
    return config, module, failure or "PASS"


def measure(timer, op, module_path, shape, args, max_rel_error):
    """{"us", "rel_error"} of one module on one shape: its output (into a NaN-filled buffer)
    against PyTorch's in fp32, then its time; no time when the output is wrong."""
    module = KernelModule(module_path, op)
    inputs, outputs, scalars = _outputs_and_scalars(op, args, shape)
    outputs[0].fill_(float("nan"))
    code = module.launch(inputs, outputs, scalars)
    torch.cuda.synchronize()
    if code != 0:
        return {"us": None, "error": f"ak_launch returned {code}"}
    ref = FUNCTIONS[op](shape)(*(t.float() for t in args))
    rel = ((outputs[0].float() - ref).norm() / ref.norm()).item()  # NaN left anywhere makes it NaN
    if not rel < max_rel_error:
        return {"us": None, "rel_error": rel}
    return {"us": timer.median_us(lambda: module.launch(inputs, outputs, scalars), ()), "rel_error": rel}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ak", default=str(ROOT / "build-gpu" / "autokernel"))
    p.add_argument("--op", default="matmul", choices=sorted(CHECK_SHAPE))
    p.add_argument("--configs", required=True,
                   help="';'-separated configurations, each 'NAME=VALUE ...' (an empty one: the defaults)")
    p.add_argument("--dtypes", default="fp16")
    p.add_argument("--extra-shapes", default=None, help="default: the standard problems (EXTRA_SHAPES)")
    p.add_argument("--b-nk", action="store_true", help="matmul: every B held as a Linear's [N, K] weight")
    p.add_argument("--no-model-shapes", action="store_true", help="only the --extra-shapes")
    p.add_argument("--json-out")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("matmul_shapes.py: no CUDA GPU visible to PyTorch")
    torch.backends.cuda.matmul.allow_tf32 = False
    configs = [c.strip() for c in a.configs.split(";")]  # an empty one: the starter's defaults
    with concurrent.futures.ThreadPoolExecutor(8) as pool:  # compiles only: the cache keeps them
        list(pool.map(lambda c: build(a.ak, a.op, c), configs))
    built = [build(a.ak, a.op, c) for c in configs]
    for config, module, note in built:
        print(f"[build] {config or '(defaults)'}: {note}", file=sys.stderr, flush=True)
    extra = a.extra_shapes if a.extra_shapes is not None else EXTRA_SHAPES[a.op]
    shapes = ([] if a.no_model_shapes else model_shapes(a.op)) + [(s, "standard") for s in extra.split(",") if s]
    if a.op == "matmul" and a.b_nk:  # B as the models hold it: a Linear's weight
        shapes = [(s if "b_nk" in s else s + ":b_nk=1", where) for s, where in shapes]
    timer, rows = Timer(), []
    for shape, where in shapes:
        for dtype_name in a.dtypes.split(","):
            args = make_inputs(a.op, shape_dims(shape), TORCH_DTYPE[dtype_name], shape_params(shape))
            row = {"shape": shape, "where": where, "dtype": dtype_name,
                   "torch_us": timer.median_us(FUNCTIONS[a.op](shape), args), "ours": {}}
            for config, module, _ in built:
                if module is not None:
                    row["ours"][config] = measure(timer, a.op, module, shape, args, MAX_REL_ERROR[dtype_name])
            timed = [(v["us"], c) for c, v in row["ours"].items() if v.get("us")]
            row["best"] = min(timed) if timed else None
            rows.append(row)
            print(f"[{shape} {dtype_name}] PyTorch {row['torch_us']:.1f} µs, best {row['best']}", file=sys.stderr,
                  flush=True)
            if a.json_out:
                pathlib.Path(a.json_out).write_text(json.dumps({"op": a.op, "configs": configs, "rows": rows}, indent=1))
            del args
            torch.cuda.empty_cache()

    names = [f"c{i}" for i in range(len(configs))]
    print("\n".join(f"- {n}: `{c or '(defaults)'}`" for n, c in zip(names, configs)))
    print()
    print("| shape | model (share) | dtype | PyTorch µs | " + " | ".join(names) + " | PyTorch / best |")
    print("|---|---|---|---|" + "---|" * len(names) + "---|")
    for r in rows:
        cells = []
        for c in configs:
            v = r["ours"].get(c, {})
            cells.append("–" if v.get("us") is None else f"{v['us']:.1f}")
        best = f"{r['torch_us'] / r['best'][0]:.2f}× ({names[configs.index(r['best'][1])]})" if r["best"] else "–"
        print(f"| {r['shape']} | {r['where']} | {r['dtype']} | {r['torch_us']:.1f} | " + " | ".join(cells) +
              f" | {best} |")


if __name__ == "__main__":
    main()
