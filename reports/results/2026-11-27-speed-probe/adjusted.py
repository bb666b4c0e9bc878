"""Would probe-adjusted ratios earn their place? For each run directory, each
A/B rung's B over A (paired by round) raw and adjusted by the speed probe, and
each rung's x fp32 (the block design of reports/block_design.h) raw and
adjusted: the ratio, its 95 % interval and the interval's half-width.

    .venv/bin/python reports/results/2026-11-27-speed-probe/adjusted.py RUN_DIR...

Adjusted: a process's tokens/s divided by its probe's speed index, relative
to the median index of processes with the same probe workload in the run:
what the process would have done on a machine at the run's typical speed.
The rule for using it (issue 43): only if, on A/A runs, it narrows the
intervals and moves no ratio by more than the 1 % noise threshold.
"""
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np


def t_cdf(t, df):
    """Student's t CDF by numeric integration of its density (no SciPy in .venv)."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    xs = np.linspace(0, t, 20001)
    pdf = c * (1 + xs * xs / df) ** (-(df + 1) / 2)
    return 0.5 + float(np.trapezoid(pdf, xs))


def t975(df):
    lo, hi = 0.0, 100.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < 0.975 else (lo, mid)
    return (lo + hi) / 2


def load(run):
    s = json.loads((Path(run) / "summary.json").read_text())
    out = []
    for row in s["rows"]:
        if row.get("status") != "ok" or "peer" in row:
            continue
        tok = row["per_process"]["tokens_per_s_median"]
        idx = (row.get("probe") or {}).get("speed_index_per_s") or [None] * len(tok)
        # The probe's workload, to normalise within one workload
        rep = json.loads((Path(run) / row["report"]).read_text())
        workload = ((rep["timing"].get("noise") or {}).get("probe") or {}).get("workload")
        out.append({"cell": row["cell"], "side": row.get("side", ""), "rung": row["rung"], "rounds": row["rounds"],
                    "tok": tok, "idx": idx, "workload": workload})
    return s, out


def adjust(rows):
    by_workload = {}
    for r in rows:
        by_workload.setdefault(r["workload"], []).extend(v for v in r["idx"] if v)
    ref = {w: statistics.median(v) for w, v in by_workload.items() if v}
    for r in rows:
        r["adj"] = [t / (i / ref[r["workload"]]) if i else None for t, i in zip(r["tok"], r["idx"])]


def paired(a_by_round, b_by_round):
    d = [math.log(b_by_round[k] / a_by_round[k]) for k in b_by_round if k in a_by_round]
    n = len(d)
    if n < 2:
        return None
    m, sd = statistics.mean(d), statistics.stdev(d)
    h = t975(n - 1) * sd / math.sqrt(n)
    return math.exp(m), math.exp(m - h), math.exp(m + h), 100 * math.expm1(h)


def block(rows, key):
    """x fp32 per rung from the block design log y = cell + round."""
    cells = sorted({r["cell"] for r in rows})
    rounds = sorted({k for r in rows for k in r["rounds"]})
    X, y = [], []
    for r in rows:
        for k, v in zip(r["rounds"], r[key]):
            if not v:
                continue
            x = [0.0] * (len(cells) + len(rounds) - 1)
            x[cells.index(r["cell"])] = 1
            ri = rounds.index(k)
            if ri > 0:
                x[len(cells) + ri - 1] = 1
            X.append(x)
            y.append(math.log(v))
    X, y = np.array(X), np.array(y)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    df = len(y) - np.linalg.matrix_rank(X)
    if df < 1:
        return {}
    sigma2 = float(((y - X @ beta) ** 2).sum() / df)
    cov = sigma2 * np.linalg.pinv(X.T @ X)
    out = {}
    fp32 = [c for c in cells if c.endswith("fp32") and "+" not in c]
    if not fp32:
        return {}
    a = cells.index(fp32[0])
    for c in cells:
        b = cells.index(c)
        if b == a:
            continue
        d = beta[b] - beta[a]
        h = t975(df) * math.sqrt(cov[a, a] + cov[b, b] - 2 * cov[a, b])
        out[c] = (math.exp(d), math.exp(d - h), math.exp(d + h), 100 * math.expm1(h))
    return out


def fmt(r):
    return "-" if r is None else f"{r[0]:.4f} [{r[1]:.4f}, {r[2]:.4f}] +-{r[3]:.2f} %"


def main():
    for run in sys.argv[1:]:
        s, rows = load(run)
        adjust(rows)
        print(f"== {run} ({s.get('ab', {}) and s['ab'].get('spec')})")
        sides = {r["side"] for r in rows}
        if sides == {"A", "B"}:
            a = {r["rung"]: r for r in rows if r["side"] == "A"}
            for b in (r for r in rows if r["side"] == "B"):
                ar = a[b["rung"]]
                raw = paired(dict(zip(ar["rounds"], ar["tok"])), dict(zip(b["rounds"], b["tok"])))
                adj = paired(dict(zip(ar["rounds"], ar["adj"])), dict(zip(b["rounds"], b["adj"])))
                move = 100 * (adj[0] / raw[0] - 1) if raw and adj else float("nan")
                print(f"  B/A {b['rung']:<12} raw {fmt(raw)}   adjusted {fmt(adj)}   moved {move:+.2f} %")
        for side in sorted(sides):
            part = [r for r in rows if r["side"] == side]
            raw, adj = block(part, "tok"), block(part, "adj")
            for c in raw:
                move = 100 * (adj[c][0] / raw[c][0] - 1) if c in adj else float("nan")
                print(f"  x fp32 {c:<14} raw {fmt(raw[c])}   adjusted {fmt(adj.get(c))}   moved {move:+.2f} %")


if __name__ == "__main__":
    main()
