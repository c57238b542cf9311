#!/usr/bin/env python3
"""Side-by-side table of the Nsight Compute counters that decide a kernel's speed, from one or more
.ncu-rep files (each: the longest kernel in it), read with `ncu --import R --page raw --csv`.

    python3 bench/ncu_summary.py ours=matmul-ours.ncu-rep cublas=matmul-torch.ncu-rep
    python3 bench/ncu_summary.py --hot 25 source.csv   # from `ncu --import R --page source --csv`
    python3 bench/ncu_summary.py --mix ours=ours-source.csv cudnn=torch-source.csv

Rows: time and SM clock; launch shape; throughput of SM, L2, DRAM as % of peak; tensor-pipe
activity; achieved occupancy, issue activity, instructions executed and the busiest
non-tensor pipes; the spread of active cycles across SMs (a tail
or imbalance shows as avg < max); and the largest warp-stall reasons (cycles per issued
instruction), so that a gap between two kernels can be read off counters, not guessed. With --hot,
the instructions of a source page export where the most warp-stall samples fell; with --mix, the
warp instructions executed per SASS opcode of each export, side by side (where one kernel spends
instructions the other does not).
"""
import csv
import io
import re
import subprocess
import sys

FIXED = [
    ("duration (us)", "gpu__time_duration.sum", 1e-3),
    ("SM clock (GHz)", "sm__cycles_elapsed.avg.per_second", 1e-9),
    ("grid", "launch__grid_size", 1),
    ("block", "launch__block_size", 1),
    ("cluster size", "launch__cluster_size", 1),
    ("registers/thread", "launch__registers_per_thread", 1),
    ("shared mem/block (KB)", "launch__shared_mem_per_block", 1 / 1024),
    ("SM throughput %", "sm__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("memory throughput %", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("L2 throughput %", "lts__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("L2 hit rate %", "lts__t_sector_hit_rate.pct", 1),
    ("DRAM throughput %", "dram__throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("DRAM read (MB)", "dram__bytes_read.sum", 1e-6),
    ("L1/shared throughput %", "l1tex__throughput.avg.pct_of_peak_sustained_active", 1),
    ("achieved occupancy %", "sm__warps_active.avg.pct_of_peak_sustained_active", 1),
    ("issue slots busy %", "smsp__issue_active.avg.pct_of_peak_sustained_active", 1),
    ("warp instructions (M)", "smsp__inst_executed.sum", 1e-6),
    ("XU pipe % (exp2, conversions)", "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", 1),
    ("FMA pipe %", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("ALU pipe %", "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("SM active cycles avg", "sm__cycles_active.avg", 1),
    ("SM active cycles max", "sm__cycles_active.max", 1),
    ("elapsed cycles", "sm__cycles_elapsed.max", 1),
]
TENSOR = re.compile(r"^sm__(pipe_tensor_cycles_active|inst_executed_pipe_tensor_op_gmma)\.avg\.pct_of_peak_sustained_active$")
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")
SCALE = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9,
         "hz": 1, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/nsecond": 1e9, "cycle/usecond": 1e6,
         "byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 1024, "mibyte": 1048576}


def number(text, unit):
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value * SCALE.get(unit.lower(), 1)


def longest_kernel(report):
    raw = subprocess.run(["ncu", "--import", report, "--page", "raw", "--csv"], capture_output=True, text=True,
                         check=True).stdout
    rows = list(csv.reader(io.StringIO(raw)))
    header, units, data = rows[0], rows[1], rows[2:]
    if not data:
        raise SystemExit(f"ncu_summary.py: {report} holds no kernel")
    kernels = [{h: (v, u) for h, u, v in zip(header, units, row)} for row in data]
    duration = lambda k: number(*k.get("gpu__time_duration.sum", ("0", "")))
    return max(kernels, key=lambda k: duration(k) or 0), kernels


def source_rows(path):
    """A source page export's header row (the one naming Source), its instruction rows and the
    Source column's index."""
    rows = list(csv.reader(open(path)))
    start = next((i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r)), None)
    if start is None:
        raise SystemExit(f"ncu_summary.py: no Source column in {path}")
    header = rows[start]
    return header, rows[start + 1:], next(i for i, c in enumerate(header) if c.strip() == "Source")


def hot(count, path):
    header, data, source = source_rows(path)
    sampling = [i for i, c in enumerate(header) if "Sampling" in c]
    if not sampling:
        raise SystemExit(f"ncu_summary.py: no stall-sampling column in {path}")
    samples = next((i for i in sampling if "All" in header[i]), sampling[0])
    value = lambda r: number(r[samples], "") or 0 if len(r) > samples else 0
    total = sum(value(r) for r in data) or 1
    print(f"top {count} of {len(data)} instructions by '{header[samples]}' ({total:.0f} samples)")
    for r in sorted(data, key=value, reverse=True)[:count]:  # addresses differ in their last digits
        print(f"{100 * value(r) / total:6.2f}%  {r[0][-6:]:6s} {r[source][:110]}")


def opcode_counts(path):
    header, data, source = source_rows(path)
    executed = next((i for i, c in enumerate(header) if c.strip() in ("Instructions Executed",
                                                                      "Warp Instructions Executed")), None)
    if executed is None:
        raise SystemExit(f"ncu_summary.py: no instructions-executed column in {path}")
    counts = {}
    for r in data:
        words = [w for w in r[source].split() if not w.startswith("@")] if len(r) > executed else []
        if words:
            op = words[0].rstrip(";")
            counts[op] = counts.get(op, 0) + (number(r[executed], "") or 0)
    return counts


def mix(args):
    columns = [(label, opcode_counts(path)) for label, _, path in (a.partition("=") for a in args)]
    ops = sorted({op for _, c in columns for op in c}, key=lambda op: -max(c.get(op, 0) for _, c in columns))
    print(f"{'opcode':24s} | " + " | ".join(f"{label + ' (M)':>14s}" for label, _ in columns))
    for op in ops + ["total"]:
        cells = [sum(c.values()) if op == "total" else c.get(op, 0) for _, c in columns]
        print(f"{op:24s} | " + " | ".join(f"{v / 1e6:14.3f}" for v in cells))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--hot":
        return hot(int(sys.argv[2]), sys.argv[3])
    if len(sys.argv) >= 3 and sys.argv[1] == "--mix":
        return mix(sys.argv[2:])
    if len(sys.argv) < 2:
        raise SystemExit("usage: ncu_summary.py LABEL=REPORT.ncu-rep [LABEL=REPORT.ncu-rep ...]")
    columns = []
    for arg in sys.argv[1:]:
        label, _, path = arg.partition("=")
        kernel, kernels = longest_kernel(path or label)
        columns.append((label, kernel))
        print(f"{label}: {kernel['Kernel Name'][0][:150]} ({len(kernels)} kernel(s) in the report)")
        for other in kernels if len(kernels) > 1 else []:  # split-K's reduction, a conversion...
            print(f"  {number(*other['gpu__time_duration.sum']) / 1e3:8.2f} us  grid {other['launch__grid_size'][0]:>6s}"
                  f"  {other['Kernel Name'][0][:120]}")
    def value(kernel, name, scale):
        v = number(*kernel[name]) if name in kernel else None
        return v * scale if v is not None else None
    rows = [(label, [value(k, name, scale) for _, k in columns]) for label, name, scale in FIXED]
    tensor = sorted({n for _, k in columns for n in k if TENSOR.search(n)})
    rows += [(n.replace("sm__", "").replace(".avg.pct_of_peak_sustained_active", " % (active)"),
              [value(k, n, 1) for _, k in columns]) for n in tensor]
    stalls = {}
    for _, k in columns:
        for n in k:
            m = STALL.match(n)
            if m and (v := value(k, n, 1)):
                stalls[m.group(1)] = max(stalls.get(m.group(1), 0), v)
    for reason in sorted(stalls, key=stalls.get, reverse=True)[:8]:
        n = f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"
        rows.append((f"stall {reason} (per issue)", [value(k, n, 1) for _, k in columns]))
    width = max(len(r[0]) for r in rows)
    print(f"{'counter':{width}s} | " + " | ".join(f"{label:>14s}" for label, _ in columns))
    for label, values in rows:
        cells = " | ".join(f"{v:14.4g}" if v is not None else f"{'-':>14s}" for v in values)
        print(f"{label:{width}s} | {cells}")


if __name__ == "__main__":
    main()
