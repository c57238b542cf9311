"""Progress plot of an `autokernel optimize` run: one panel per kernel.

Run by `autokernel report` as a child process:

    python3 plot.py RESULTS_TSV RUN_JSON OUTPUT_PNG [--speedup X]

Each panel shows the run's experiment number (x) against the measured median time (y), the
best-so-far time as a step line, kept / reverted / failed experiments as distinct markers (a
failed experiment has no time, so it sits on the top edge) and the baseline as a dashed line.
"""

import argparse
import csv
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only: the report runs on headless machines
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen before pyplot loads)
from matplotlib.ticker import MaxNLocator  # noqa: E402

# A panel switches to a log axis when its slowest time is this many times its fastest.
LOG_SCALE_RATIO = 10.0
# Where failed experiments sit, as a fraction of the panel's height.
FAILED_ROW = 0.96

STYLES = {
    "baseline": dict(marker="s", color="black", label="baseline", zorder=4),
    "kept": dict(marker="o", color="tab:green", label="kept", zorder=4),
    "reverted": dict(marker="o", facecolors="none", edgecolors="tab:gray", label="reverted", zorder=3),
    "failed": dict(marker="x", color="tab:red", label="failed", zorder=3),
}


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Plot the progress of an autokernel optimize run.")
    parser.add_argument("results", help="the workspace's results.tsv")
    parser.add_argument("run", help="the workspace's run.json")
    parser.add_argument("output", help="the PNG to write")
    parser.add_argument("--speedup", type=float, help="projected end-to-end speedup for the title")
    return parser.parse_args(argv)


def read_experiments(path):
    """The loop's rows of results.tsv (those with a decision), grouped by the plan's kernel name."""
    by_kernel = {}
    if not os.path.exists(path):
        return by_kernel
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if not row.get("decision") or not row.get("name"):
                continue
            try:
                number = int(row["experiment"])
                time_us = float(row["median_us"] or 0)
            except (KeyError, TypeError, ValueError):
                continue  # a torn or foreign row
            passed = row.get("status") == "PASS" and time_us > 0
            decision = row["decision"] if passed or row["decision"] == "failed" else "failed"
            by_kernel.setdefault(row["name"], []).append((number, time_us if passed else None, decision))
    for rows in by_kernel.values():
        rows.sort(key=lambda r: r[0])
    return by_kernel


def best_so_far(rows):
    """(x, y) of the step line: the best time among the baseline and the kept experiments."""
    xs, ys, best = [], [], math.inf
    for number, time_us, decision in rows:
        if time_us is not None and decision in ("baseline", "kept") and time_us < best:
            best = time_us
        if best < math.inf:
            xs.append(number)
            ys.append(best)
    return xs, ys


def panel_title(kernel):
    base, best = kernel.get("baseline_us", 0), kernel.get("best_us", 0)
    what = "{} {} {}, share {:.0%}".format(
        kernel.get("op", ""), kernel.get("shape", ""), kernel.get("dtype", ""), kernel.get("share", 0))
    # an extracted kernel's name is its op, problem and dtype already; a suite kernel's is its op
    name = kernel["name"]
    title = what if name.startswith(kernel.get("op", "")) else "{}: {}".format(name, what)
    if base > 0 and best > 0:
        title += "\n{:.4g} \u2192 {:.4g} \u00b5s ({:.2f}x)".format(base, best, base / best)
    return title


def draw_panel(ax, kernel, rows):
    ax.set_title(panel_title(kernel), fontsize=9)
    ax.set_xlabel("experiment")
    ax.set_ylabel("median time (\u00b5s)")
    ax.grid(True, alpha=0.3)
    times = [t for _, t, _ in rows if t is not None]
    if not rows:
        ax.text(0.5, 0.5, "no experiments yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
        return
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if times and max(times) / min(times) > LOG_SCALE_RATIO:
        ax.set_yscale("log")
    for decision, style in STYLES.items():
        points = [(n, t) for n, t, d in rows if d == decision and t is not None]
        if points:
            ax.scatter([n for n, _ in points], [t for _, t in points], s=24, **style)
    failed = [n for n, t, _ in rows if t is None]
    if failed:
        # x in data units, y in axes units: the top edge whatever the time scale.
        ax.scatter(failed, [FAILED_ROW] * len(failed), transform=ax.get_xaxis_transform(), clip_on=False,
                   s=28, **STYLES["failed"])
    xs, ys = best_so_far(rows)
    if xs:
        xs.append(rows[-1][0])
        ys.append(ys[-1])
        ax.step(xs, ys, where="post", color="tab:blue", linewidth=1.5, label="best so far", zorder=2)
    baseline = kernel.get("baseline_us", 0) or (times[0] if times else 0)
    if baseline > 0:
        ax.axhline(baseline, color="black", linestyle="--", linewidth=1, label="baseline time", zorder=1)
    if not times:
        ax.set_yticks([])  # nothing passed: no time to scale
    numbers = [n for n, _, _ in rows]
    ax.set_xlim(min(numbers) - 1, max(numbers) + 1)
    if times:
        low, high = min(times + [baseline or min(times)]), max(times + [baseline or max(times)])
        if ax.get_yscale() == "log":
            ax.set_ylim(low / 1.3, high * 1.6)  # headroom above for the failed row
        else:
            span = max(high - low, 0.05 * high)  # one point, or two a rounding apart: still a readable axis
            ax.set_ylim(max(0.0, low - 0.1 * span), high + 0.2 * span)
            ax.ticklabel_format(axis="y", useOffset=False)
    ax.legend(fontsize=7, loc="best")


def main(argv):
    args = parse_args(argv)
    with open(args.run) as f:
        run = json.load(f)
    by_kernel = read_experiments(args.results)
    kernels = run.get("kernels", [])
    if not kernels:
        print("plot.py: {} lists no kernels".format(args.run), file=sys.stderr)
        return 1
    columns = 1 if len(kernels) == 1 else 2
    panel_rows = math.ceil(len(kernels) / columns)
    fig, axes = plt.subplots(panel_rows, columns, figsize=(6.4 * columns, 3.8 * panel_rows), squeeze=False)
    for index, kernel in enumerate(kernels):
        draw_panel(axes[index // columns][index % columns], kernel, by_kernel.get(kernel["name"], []))
    for index in range(len(kernels), panel_rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    speedup = args.speedup if args.speedup is not None else run.get("projected_speedup", 1)
    fig.suptitle("{} on {}: {} experiments, projected end-to-end speedup {:.2f}x".format(
        run.get("name", "run"), run.get("device", "?"), run.get("experiments", 0), speedup))
    fig.tight_layout()
    out_dir = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(out_dir, exist_ok=True)
    fig.savefig(args.output, dpi=110)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
