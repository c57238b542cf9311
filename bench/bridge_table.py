"""The table bench/gpu_bridge.sh prints last: per model and mode, PyTorch and ours as a user runs
the model (median wall time per forward pass), the ratio, the kernels plugged in, and issue 11's
targets (ours in eager >= 1.3x eager; ours under torch.compile >= 1.05x torch.compile alone in the
same mode) for the two LLaMA configurations; then every reading under torch.compile (verify.json's
measurement log) with its fastest and slowest call, the host's load, and for a reading with our
kernels its rounds against PyTorch alone's in the same rounds; then the judge's verdict per
model and run (judged.json: the plugged-in kernels checked and timed by a process that loads
none). Writes OUT/bridge.json with the table's rows.

    python3 bench/bridge_table.py OUT llama llama-7b-4l gpt2 bert
"""
import json
import pathlib
import sys

TARGETS = {"eager": 1.3, "default": 1.05, "max-autotune-no-cudagraphs": 1.05, "reduce-overhead": 1.05}
TARGET_MODELS = ("llama", "llama-7b-4l", "hf-llama", "hf-llama-7b-4l")


def rows_of(model, verify):
    rows = []
    for row in verify["timing"]["rows"]:
        torch_us, ours_us = row.get("torch_us"), row.get("ours_us")
        ratio = torch_us / ours_us if torch_us and ours_us else None
        target = TARGETS.get(row["mode"]) if model in TARGET_MODELS else None
        rows.append({"model": model, "mode": row["mode"], "torch_us": torch_us, "ours_us": ours_us, "ratio": ratio,
                     "kernels": len(row.get("kernels", [])), "target": target,
                     "met": None if target is None or ratio is None else ratio >= target,
                     "note": row.get("note", "")})
    replay = verify["timing"].get("replay", {})
    if "eager_us" in replay:
        ours = replay.get("ours_us")
        rows.append({"model": model, "mode": "graph replay", "torch_us": replay["eager_us"], "ours_us": ours,
                     "ratio": replay["eager_us"] / ours if ours else None, "kernels": len(replay.get("kernels", [])),
                     "target": None, "met": None, "note": replay.get("ours_note", "")})
    return rows


def judged_lines(model, judged):
    """The judge's runs of one model: mode, kernels, verdict, PyTorch and ours as it timed them."""
    lines = []
    for run in judged:
        record = run["record"]
        timing, base = record.get("timing", {}), "eager" if run["mode"] == "eager" else "compile"
        torch_us, ours_us = timing.get(base, {}).get("median_us"), timing.get("solution", {}).get("median_us")
        verdict = record["status"] if record["status"] == "PASS" else \
            f"{record['status']} in {record.get('phase', '')}: {record.get('reason', '')[:80]}"
        lines.append(f"  {model:12s} {run['mode']:28s} {len(run['kernels']):3d} {verdict:8s} "
                     f"{cell(torch_us, '{:.0f}'):>11s} {cell(ours_us, '{:.0f}'):>11s} "
                     f"{cell(torch_us / ours_us if torch_us and ours_us else None, '{:.2f}x'):>6s}")
    return lines


def op_of(kernel):
    """'fused_mlp' of 'fused_mlp_4096x768x2048_fp16': the name up to its first shape."""
    words = kernel.split("_")
    shape = next((i for i, w in enumerate(words) if w[:1].isdigit()), len(words))
    return "_".join(words[:shape]) or kernel


def cell(value, form):
    return "-" if value is None else form.format(value)


def main(out, models):
    out = pathlib.Path(out)
    rows, missing, readings, judged = [], [], [], []
    for model in models:
        path = out / model / "verify.json"
        if path.is_file():
            verify = json.loads(path.read_text())
            rows.extend(rows_of(model, verify))
            readings += [(model, m) for m in verify.get("measurements", []) if m["mode"] != "eager"]
            if not verify.get("passed", False):
                missing.append(f"{model}: outputs DIFFER from eager (see {model}/verify.txt)")
            if (out / model / "judged.json").is_file():
                judged += judged_lines(model, json.loads((out / model / "judged.json").read_text()))
        else:
            missing.append(f"{model}: no verify.json (skipped or failed: see bridge.log)")
    (out / "bridge.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"{'model':12s} {'mode':28s} {'PyTorch us':>11s} {'ours us':>11s} {'ratio':>6s} {'in':>3s} target")
    for r in rows:
        target = "" if r["target"] is None else f">= {r['target']:.2f}x " + {True: "met", False: "MISSED", None: "-"}[
            r["met"]]
        print(f"{r['model']:12s} {r['mode']:28s} {cell(r['torch_us'], '{:11.0f}')} {cell(r['ours_us'], '{:11.0f}')} "
              f"{cell(r['ratio'], '{:5.2f}x')} {r['kernels']:3d} {target} {r['note'][:60]}")
    for line in missing:
        print(line)
    if judged:
        print("\nthe judge: model, mode, kernels, verdict, PyTorch and ours (µs per call, its rounds), ratio")
        print("\n".join(judged))
    if readings:  # each compiled reading's calls: uniformly slow, or a few slow ones?
        print("\ncompiled readings: model, mode, kernels, median / fastest / slowest call us, host load (1 min); "
              "with kernels, each round's median: ours / PyTorch alone")
    for model, m in readings:
        kernels = ",".join(op_of(k) for k in m["kernels"]) or "PyTorch"
        print(f"  {model:10s} {m['mode']:28s} {kernels[:40]:40s} {cell(m['us'], '{:8.0f}')} "
              f"{cell(m['fastest_call_us'], '{:8.0f}')} {cell(m['slowest_call_us'], '{:8.0f}')} "
              f"{cell(m['load_1min'], '{:5.1f}')} {m['note'][:40]}")
        rounds = zip(m.get("rounds_us") or [], m.get("paired_torch_rounds_us") or [])
        print("".join(f"{'':42s}round {i}: {ours:8.0f} / {alone:8.0f}\n" for i, (ours, alone) in enumerate(rounds, 1)),
              end="")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
