#!/usr/bin/env python3
"""scripts/smoke_verdict.py: the verdict of scripts/gpu-smoke on one `ladder run` directory.

usage: smoke_verdict.py RUN_DIR      (the directory holding summary.json)

Prints a table with one row per rung, then one line per check:
  ladder-smoke  every rung ran, held parity with fp32 and had every switch it
                turns on effective (a rung that cannot run here is SKIP with
                its reason);
  breakdown     every rung that ran has a valid CUPTI op breakdown whose
                device busy time fits in the step's dt (plus the allowed
                slack), with kernels counted and categories summing to the
                span plus overlap.
Each line is `PASS <check>`, `FAIL <check>: <why>` or `SKIP <check>: <why>`.
Exit 0 when no check failed, 1 otherwise. Standard library only: it runs
under any python3.
"""
import json
import os
import sys


def num(x):
    """A number in 3 significant digits; anything else (None) as it is."""
    return f"{x:.3g}" if isinstance(x, (int, float)) else x


def smoke_problems(row):
    """Why a rung fails the smoke: status, parity (naming the failed quantity), switches."""
    why = []
    if row["status"] != "ok":
        why.append(f"status {row['status']}: {(row.get('failure') or {}).get('reason', '')}")
    parity = row.get("parity") or {}
    if parity.get("status") not in ("pass", "baseline"):
        quantities = [f"{label} {num(parity[key])}" for label, key in
                      (("loss max_rel_diff", "max_rel_diff"), ("grad_norm_max_rel_diff", "grad_norm_max_rel_diff"))
                      if parity.get(key) is not None]
        detail = parity.get("reason") or ", ".join(quantities)
        if detail and not parity.get("reason") and parity.get("rtol") is not None:
            detail += f", rtol {num(parity['rtol'])}"
        why.append(f"parity {parity.get('status')}" + (f": {detail}" if detail else ""))
    why += [f"{switch} not effective" for switch, effective in (row.get("effective") or {}).items()
            if not effective]
    return why


def breakdown_problems(run_dir, cell):
    """Why a rung's op breakdown cannot be trusted, checked against the step's dt and its own span."""
    path = os.path.join(run_dir, cell, "report.json")
    try:
        with open(path) as f:
            b = json.load(f).get("op_breakdown")
    except (OSError, ValueError) as e:
        return [f"{path} unreadable: {e}"]
    if not b:
        return [f"{path}: no op_breakdown"]
    if b.get("unavailable"):
        return [f"op_breakdown unavailable: {b['unavailable']}"]
    why = []
    inv = b.get("invariant")
    if "valid" not in b or not inv:
        why.append("op_breakdown has no valid/invariant fields (written by an older ladder)")
    else:
        if not b["valid"]:
            why.append(f"op_breakdown invalid: {b.get('invalid_reason')}")
        limit_ms = inv["step_dt_ms"] * (1 + inv["slack_pct"] / 100)
        if inv["busy_ms"] > limit_ms:
            why.append(f"device busy {inv['busy_ms']:.2f} ms per step > step dt {inv['step_dt_ms']:.2f} ms "
                       f"+ {inv['slack_pct']:g} %")
        elif not inv.get("holds"):
            why.append(f"invariant.holds is false (busy {inv['busy_ms']:.2f} ms, dt {inv['step_dt_ms']:.2f} ms)")
    if not b.get("kernel_launches_per_step"):
        why.append("op_breakdown counted no kernels")
    if abs(b["sum_ms"] - b["overlap_ms"] - b["span_ms"]) > 0.01 * max(b["span_ms"], 1e-9):
        why.append(f"categories {b['sum_ms']:.2f} ms - overlap {b['overlap_ms']:.2f} ms "
                   f"!= span {b['span_ms']:.2f} ms")
    return why


def check_line(name, failed, skipped, total):
    """One line for a check: FAIL names the failed rungs, SKIP says why nothing was checked."""
    if failed:
        return f"FAIL {name}: {len(failed)} of {total} rungs failed: {', '.join(failed)}"
    if skipped == total:
        return f"SKIP {name}: no rung to check"
    return f"PASS {name}"


def main(run_dir):
    summary_path = os.path.join(run_dir, "summary.json")
    try:
        with open(summary_path) as f:
            rows = json.load(f)["rows"]
    except (OSError, ValueError, KeyError) as e:
        print(f"FAIL ladder-smoke: {summary_path} unreadable: {e}")
        print("SKIP breakdown: no summary to read the rungs from")
        return 1
    smoke_failed, smoke_skipped, bd_failed, bd_skipped = [], 0, [], 0
    print(f"{'rung':<14} {'smoke':<6} {'breakdown':<10} why")
    for row in rows:
        cell = row["cell"]
        if row["status"] == "not_runnable":
            smoke_skipped += 1
            bd_skipped += 1
            print(f"{cell:<14} {'SKIP':<6} {'SKIP':<10} {row.get('reason', '')}")
            continue
        smoke = smoke_problems(row)
        if row["status"] == "ok":
            bd = breakdown_problems(run_dir, cell)
        else:
            bd, bd_skipped = None, bd_skipped + 1
        if smoke:
            smoke_failed.append(cell)
        if bd:
            bd_failed.append(cell)
        bd_verdict = "SKIP" if bd is None else "FAIL" if bd else "PASS"
        why = "; ".join(smoke + (bd or [])) or "ran, parity held, switches effective, breakdown fits dt"
        print(f"{cell:<14} {'FAIL' if smoke else 'PASS':<6} {bd_verdict:<10} {why}")
    print(f"(summary: {summary_path})")
    print(check_line("ladder-smoke", smoke_failed, smoke_skipped, len(rows)))
    print(check_line("breakdown", bd_failed, bd_skipped, len(rows)))
    return 1 if smoke_failed or bd_failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.splitlines()[2].strip())
    sys.exit(main(sys.argv[1]))
