#!/usr/bin/env python3
"""ncu_attention.py: what holds the fused attention kernels back, from Nsight Compute's CSV.

Reads what `ncu --csv --page raw --print-units base --metrics LIST` wrote over the attention
kernels of a training step (scripts/gpu_check.sh's attention-ncu step: bench_step base, its
first step, one run per TT_CUDA_ATTN arithmetic; LIST is METRICS below, comma-joined) and
prints one table, a row per kernel (its launches averaged): microseconds a launch; the SM's
and the memory's throughput and the achieved occupancy, in % of peak; the issue slots used;
shared-memory wavefronts a launch and the share of them that bank conflicts add; and the
three largest stall reasons, in warps stalled per issued instruction (what a warp waits on
between two of its instructions: barrier a __syncthreads, long_scoreboard global memory,
short_scoreboard and mio_throttle shared memory, math_pipe_throttle the FMA or tensor pipes).

  python3 bench/ncu_attention.py ncu.csv [--title "base, wide"]
  python3 bench/ncu_attention.py --metrics      # the comma-joined list, for ncu --metrics
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_table import number, short  # noqa: E402

STALLS = ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "math_pipe_throttle",
          "lg_throttle", "wait", "not_selected", "dispatch_stall", "no_instruction")
TIME = "gpu__time_duration.sum"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
ISSUE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
WAVES = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
METRICS = [TIME, SM, MEM, OCC, ISSUE, WAVES, CONFLICTS] + [STALL.format(s) for s in STALLS]


def launches_of(lines):
    """{kernel: [{metric: value}, ...]}, a dict per profiled launch (the raw page: one column
    per metric, a units row under the header)."""
    reader = csv.reader(line for line in lines if line.startswith('"'))
    header, out = None, defaultdict(list)
    for row in reader:
        if header is None:
            if "Kernel Name" in row:
                header = row
                kern = row.index("Kernel Name")
                cols = {m: row.index(m) for m in METRICS if m in row}
                if TIME not in cols:
                    sys.exit(f"ncu_attention: no {TIME} column in the CSV's header")
            continue
        if len(row) != len(header) or number(row[cols[TIME]]) is None:
            continue  # the units row, or a cut line
        out[short(row[kern])].append({m: number(row[i]) for m, i in cols.items()})
    if header is None:
        sys.exit("ncu_attention: no CSV header with 'Kernel Name' (did ncu profile anything?)")
    return out


def mean(runs, metric):
    vals = [r[metric] for r in runs if r.get(metric) is not None]
    return sum(vals) / len(vals) if vals else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", nargs="?", help="ncu's CSV output (its --log-file)")
    p.add_argument("--title", default="", help="a name for the table's first line")
    p.add_argument("--metrics", action="store_true", help="print the metrics for ncu, and stop")
    a = p.parse_args()
    if a.metrics:
        print(",".join(METRICS))
        return
    if not a.csv:
        p.error("the CSV is missing")
    with open(a.csv, encoding="utf-8", errors="replace") as f:
        kernels = launches_of(f)
    if not kernels:
        sys.exit("ncu_attention: no kernel in the CSV")
    print(f"ncu {a.title}: {sum(len(v) for v in kernels.values())} launches")
    print()
    print("| kernel | launches | us | SM % | memory % | occupancy % | issue % | "
          "smem wavefronts | conflicts | stalls (warps per issue) |")
    print("|--------|---------:|---:|-----:|---------:|------------:|--------:|"
          "----------------:|----------:|--------------------------|")
    for name in sorted(kernels):
        runs = kernels[name]
        stalls = [(s, mean(runs, STALL.format(s))) for s in STALLS]
        top = sorted((x for x in stalls if x[1] is not None), key=lambda x: -x[1])[:3]
        waves, conf = mean(runs, WAVES), mean(runs, CONFLICTS)
        share = 100 * conf / waves if waves and conf is not None else None
        us = mean(runs, TIME)
        print(f"| {name} | {len(runs)} | {fmt(None if us is None else us / 1e3, '.1f')} | "
              f"{fmt(mean(runs, SM), '.0f')} | {fmt(mean(runs, MEM), '.0f')} | "
              f"{fmt(mean(runs, OCC), '.0f')} | {fmt(mean(runs, ISSUE), '.0f')} | "
              f"{fmt(waves, '.3g')} | {fmt(share, '.0f')}{'%' if share is not None else ''} | "
              + ", ".join(f"{s} {v:.2f}" for s, v in top) + " |")


if __name__ == "__main__":
    main()
