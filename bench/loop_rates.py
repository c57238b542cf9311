#!/usr/bin/env python3
"""Experiments per hour of a loop run, per kernel and in all, from its results.tsv: each row's
time is the gap since the row before (the first row's since the run's start), so a kernel's rate
counts everything its experiments cost — compiles not hidden behind the device, the five stages,
the timing, the git commit — and nothing of the other kernels'.

    python3 bench/loop_rates.py WORKSPACE/results.tsv [--group memory=rmsnorm,softmax,...]
"""
import argparse
import collections
import csv

MEMORY_BOUND = "rmsnorm,softmax,layernorm,reduce,cross_entropy,rotary_embedding"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results")
    p.add_argument("--group", default=f"memory-bound={MEMORY_BOUND}", help="NAME=op,op,...: a subtotal row")
    args = p.parse_args()
    rows = sorted(csv.DictReader(open(args.results), delimiter="\t"), key=lambda r: float(r["elapsed_s"]))
    if not rows:
        raise SystemExit(f"loop_rates.py: {args.results} has no experiments")
    seconds, count, ops = collections.Counter(), collections.Counter(), {}
    phases = collections.defaultdict(collections.Counter)  # kernel -> phase -> seconds
    statuses = collections.defaultdict(collections.Counter)
    last = 0.0
    for r in rows:
        now = float(r["elapsed_s"])
        seconds[r["name"]] += now - last
        count[r["name"]] += 1
        statuses[r["name"]][r["status"]] += 1
        ops[r["name"]] = r["op"]
        for item in (r.get("phases") or "").split():
            phase, _, value = item.partition("=")
            phases[r["name"]][phase] += float(value)
        last = now
    group_name, _, group_ops = args.group.partition("=")
    group = set(group_ops.split(","))
    print(f"{'kernel':24s} {'experiments':>11s} {'seconds':>8s} {'per hour':>9s}  statuses")
    for name in count:
        rate = 3600 * count[name] / seconds[name] if seconds[name] > 0 else 0
        detail = ", ".join(f"{k} {v}" for k, v in sorted(statuses[name].items()))
        print(f"{name:24s} {count[name]:11d} {seconds[name]:8.0f} {rate:9.0f}  {detail}")
    for label, names in ((group_name, [n for n in count if ops[n] in group]), ("all", list(count))):
        n, s = sum(count[k] for k in names), sum(seconds[k] for k in names)
        if n:
            print(f"{label:24s} {n:11d} {s:8.0f} {3600 * n / s if s else 0:9.0f}")
    if phases:
        # Per experiment, on average: each phase, the experiment's own total, the judge process's
        # start and end (exit), and the loop's share of the gap between results (waiting for a
        # compile, the git commit, the proposer); compiles overlap the device and count only there.
        names = [p for p in ("compile", "setup", "launcher", "smoke", "primary", "sweep", "stability",
                             "determinism", "edge", "timing", "check", "teardown", "other", "total", "exit")
                 if any(p in v for v in phases.values())]
        print("\nmean seconds per experiment")
        print(f"{'kernel':24s} " + " ".join(f"{p[:8]:>8s}" for p in names) + f" {'loop':>8s}")
        for name in count:
            mean = {p: phases[name][p] / count[name] for p in names}
            loop = seconds[name] / count[name] - mean.get("total", 0) - mean.get("exit", 0)
            print(f"{name:24s} " + " ".join(f"{mean[p]:8.2f}" for p in names) + f" {loop:8.2f}")


if __name__ == "__main__":
    main()
