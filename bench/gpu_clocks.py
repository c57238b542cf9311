#!/usr/bin/env python3
"""What the GPU's clocks did while it was busy, from the readings bench/gpu_env.sh logs during a
device call (nvidia-smi every half second into $OUT/gpu-clocks.csv: timestamp, SM and memory
clocks, load, temperature, power and the clock-event reasons). One line, for the foot of a
script's tables: a machine whose SM clock fell under load, or that hit its power or thermal
limits, says so beside its figures (lent machines differ: one call's PyTorch read 3.8 and 7.4 ms
in rounds of one process, docs/benchmarks.md, fortieth session).

    python3 bench/gpu_clocks.py $OUT/gpu-clocks.csv
"""
import csv
import statistics
import sys

# NVML's clock-event (throttle) reasons, bit by bit; idle and the applications' clock setting say
# nothing about a slowdown.
REASONS = {0x4: "software power cap", 0x8: "hardware slowdown", 0x10: "sync boost",
           0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown",
           0x80: "hardware power brake", 0x100: "display clock setting"}
BUSY_LOAD = 50  # % utilization from which a sample counts as the GPU at work


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def summarize(rows):
    """rows: dicts of the log's columns (strings). The busy samples' SM clock (min, median, max),
    hottest temperature, highest power and the slowdown reasons seen; None without busy samples."""
    busy = [r for r in rows if (_number(r.get("utilization.gpu")) or 0) >= BUSY_LOAD]
    clocks = [c for c in (_number(r.get("clocks.sm")) for r in busy) if c is not None]
    if not clocks:
        return None
    reasons = set()
    for r in busy:
        try:
            bits = int(r.get("clocks_event_reasons.active") or "0", 16)
        except ValueError:
            continue
        reasons.update(name for bit, name in REASONS.items() if bits & bit)
    temperatures = [t for t in (_number(r.get("temperature.gpu")) for r in busy) if t is not None]
    powers = [p for p in (_number(r.get("power.draw")) for r in busy) if p is not None]
    return {"samples": len(clocks), "sm_mhz": (min(clocks), statistics.median(clocks), max(clocks)),
            "max_temperature_c": max(temperatures, default=None), "max_power_w": max(powers, default=None),
            "reasons": sorted(reasons)}


def line(summary):
    if summary is None:
        return "GPU clocks: no sample with the GPU at work"
    low, median, high = summary["sm_mhz"]
    text = (f"GPU clocks while busy ({summary['samples']} samples at >= {BUSY_LOAD}% load): SM {low:.0f}-{high:.0f} MHz"
            f" (median {median:.0f})")
    if summary["max_temperature_c"] is not None:
        text += f", up to {summary['max_temperature_c']:.0f} C"
    if summary["max_power_w"] is not None:
        text += f" and {summary['max_power_w']:.0f} W"
    return text + "; slowdowns: " + (", ".join(summary["reasons"]) or "none")


def read(path):
    with open(path, newline="") as f:
        lines = [row for row in csv.reader(f, skipinitialspace=True) if row]
    if not lines:
        return []
    header = lines[0]
    return [dict(zip(header, row)) for row in lines[1:] if len(row) == len(header)]


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_clocks.py CSV", file=sys.stderr)
        return 2
    try:
        print(line(summarize(read(argv[1]))))
    except OSError as e:
        print(f"GPU clocks: {e.strerror}: {argv[1]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
