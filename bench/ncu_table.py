#!/usr/bin/env python3
"""ncu_table.py: where a training step's GPU time goes, from Nsight Compute's CSV.

Reads what `ncu --csv --page raw --metrics gpu__time_duration.sum --print-units base` wrote
(scripts/gpu_check.sh's profile step runs it over bench_step) and prints one table: each
kernel's launches and microseconds per training step, its share of the kernel time, the
largest first, and the sum. A step is one launch of the step marker (default adamw_kernel,
once per step: the optimizer's update), so the warm-up's and the timed steps' kernels are
averaged over all of them; launches outside steps (start-up) add a little. Memsets and copies
are no kernels and do not appear. The sum is kernel time only: bench_step's ms per step less
it is what the GPU spends between kernels.

The page "details" (one row per metric: Metric Name, Metric Unit, Metric Value) is read too,
and units other than nanoseconds are scaled.

  python3 bench/ncu_table.py ncu.csv [--title tiny] [--marker adamw_kernel] [--top 25]
"""
import argparse
import csv
import sys
from collections import defaultdict

METRIC = "gpu__time_duration"
SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
         "second": 1e6, "s": 1e6}


def short(name):
    """A kernel's name without its parameter list, 'void ' and the namespaces of templates."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    depth = 0
    for i, ch in enumerate(name):  # the parameter list: the first '(' outside template args
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            name = name[:i]
            break
    return name if len(name) <= 96 else name[:93] + "..."


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def rows_of(lines):
    """(kernel name, microseconds) per profiled launch."""
    reader = csv.reader(line for line in lines if line.startswith('"'))
    header = None
    out = []
    for row in reader:
        if header is None:
            if "Kernel Name" in row:
                header = row
                kern = row.index("Kernel Name")
                raw = [i for i, h in enumerate(row) if h.startswith(METRIC)]
                details = "Metric Name" in row
                if not raw and not details:
                    sys.exit(f"ncu_table: no {METRIC} column in the CSV's header")
            continue
        if len(row) != len(header):
            continue
        if details:
            if not row[header.index("Metric Name")].startswith(METRIC):
                continue
            unit = row[header.index("Metric Unit")]
            value = number(row[header.index("Metric Value")])
        else:
            unit, value = "nsecond", number(row[raw[0]])
            if value is None:  # the units row under the header
                continue
        if value is None:
            continue
        out.append((short(row[kern]), value * SCALE.get(unit, 1e-3)))
    if header is None:
        sys.exit("ncu_table: no CSV header with 'Kernel Name' (did ncu profile anything?)")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", help="ncu's CSV output (its --log-file)")
    p.add_argument("--title", default="", help="a name for the table's first line")
    p.add_argument("--marker", default="adamw_kernel", help="the kernel launched once a step")
    p.add_argument("--top", type=int, default=25, help="kernels shown (the rest summed)")
    a = p.parse_args()
    with open(a.csv, encoding="utf-8", errors="replace") as f:
        rows = rows_of(f)
    if not rows:
        sys.exit("ncu_table: no kernel in the CSV")
    launches, us = defaultdict(int), defaultdict(float)
    for name, t in rows:
        launches[name] += 1
        us[name] += t
    steps = sum(n for k, n in launches.items() if k.endswith(a.marker))
    per = steps if steps else 1
    total = sum(us.values()) / per
    what = f"{steps} steps (launches of {a.marker})" if steps else \
        f"no {a.marker} launch: totals over the whole run, not per step"
    print(f"ncu {a.title}: {len(rows)} kernel launches, {what}; kernel time "
          f"{total:.1f} us per step")
    print()
    print("| kernel | launches / step | us / step | share |")
    print("|--------|----------------:|----------:|------:|")
    order = sorted(us, key=lambda k: -us[k])
    for k in order[:a.top]:
        print(f"| {k} | {launches[k] / per:.1f} | {us[k] / per:.1f} | "
              f"{100 * us[k] / per / total:.1f}% |")
    rest = order[a.top:]
    if rest:
        r = sum(us[k] for k in rest) / per
        n = sum(launches[k] for k in rest) / per
        print(f"| ({len(rest)} others) | {n:.1f} | {r:.1f} | {100 * r / total:.1f}% |")
    print(f"| all | {len(rows) / per:.1f} | {total:.1f} | 100% |")


if __name__ == "__main__":
    main()
