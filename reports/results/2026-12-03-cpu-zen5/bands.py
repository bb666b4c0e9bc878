#!/usr/bin/env python3
"""Each run's op-breakdown bands per process, their medians per side, and the
attention band's per-round ratio A/B (an --ab run's rounds pair A's and B's
processes in order). Usage: bands.py RUN_DIR... (ladder run directories).
The figures of this folder's README: python3 bands.py runs/* > bands.txt."""
import glob
import json
import statistics
import sys


def processes(base):
    files = [f"{base}/report.json"] + sorted(glob.glob(f"{base}/repeat*/report.json"))
    return [json.load(open(f))["op_breakdown"]["categories_ms"] for f in files]


for run in sys.argv[1:]:
    sides = {s: f"{run}/{s}/fused-adamw" for s in "AB"} if glob.glob(f"{run}/A") else {"-": f"{run}/fused-adamw"}
    per = {s: processes(b) for s, b in sides.items()}
    print(f"== {run}")
    for s, procs in per.items():
        med = {k: round(statistics.median(p[k] for p in procs), 2) for k in procs[0]}
        print(f"  {s} ({len(procs)} processes) medians: {med}")
        print(f"    attention per process: {[round(p['attention'], 2) for p in procs]}")
    if "A" in per:
        ratios = [a["attention"] / b["attention"] for a, b in zip(per["A"], per["B"])]
        print(f"  attention A/B per round: {[round(r, 2) for r in ratios]}, median {statistics.median(ratios):.2f}")
