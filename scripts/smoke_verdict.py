#!/usr/bin/env python3
"""scripts/smoke_verdict.py: the verdict of scripts/gpu-smoke on one `ladder run` directory.

usage: smoke_verdict.py RUN_DIR      (the directory holding summary.json)

Prints a table with one row per rung, then one line per check:
  ladder-smoke  every rung ran, held parity with fp32 (a peer takes no part
                in parity) and had every switch it turns on act (a rung that
                cannot run here, or that the run never reached because it was
                stopped, is SKIP with its reason);
  breakdown     every rung that ran has a valid op breakdown (CUPTI's on
                CUDA, the profiler's operators on a CPU) whose device busy
                time fits in the step's dt (plus the allowed slack), with
                kernels (or operators) counted and categories summing to the
                span plus overlap.
Whether a switch acted is read from the rung's report (`switches.<name>`:
effective, and `applicable: false` with the reason where it is on but cannot
act in this step: a CUDA-only part on a CPU, a part waiting for a switch of a
later rung, as adamw-clip waits for fused-adamw on fused, flash and
vocab-pad; a peer's copy of a part that only ladder has, mechanism "none").
Such a switch is a note, not a failure, where the ladder's design
turned it on (a rung, a group's part, top, top-X); it fails where the cell
asks for it by name (fp32+adamw-clip: asked for and unable to act). A switch
that is on, applicable and not effective fails. A summary whose reports have
no switch section is judged on its `effective` map alone.
Each line is `PASS <check>`, `FAIL <check>: <why>` or `SKIP <check>: <why>`.
Exit 0 when no check failed, 1 otherwise. Standard library only: it runs
under any python3.
"""
import json
import os
import re
import sys


def num(x):
    """A number in 3 significant digits; anything else (None) as it is."""
    return f"{x:.3g}" if isinstance(x, (int, float)) else x


def read_report(run_dir, row):
    """The row's (first round's) report, or None."""
    try:
        with open(os.path.join(run_dir, row.get("report") or os.path.join(row["cell"], "report.json"))) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def named_in(row):
    """The switches a composite asks for by name after its base: fp32+adamw-clip -> {adamw-clip}."""
    rung = row.get("rung") or row["cell"].rsplit("/", 1)[-1]
    return set(rung.split("+")[1:])


def switch_problems(run_dir, row):
    """(failures, notes) of a rung's switches: on and not acting where it should, or waiting by design."""
    switches = (read_report(run_dir, row) or {}).get("switches")
    if not isinstance(switches, dict):  # no report to read: the summary's map, without the reasons
        return [f"{name} not effective" for name, on in (row.get("effective") or {}).items() if not on], []
    failed, notes, named = [], [], named_in(row)
    for name, s in switches.items():
        if not isinstance(s, dict) or not s.get("enabled") or s.get("effective"):
            continue
        reason = s.get("reason") or "no reason recorded"
        # A peer's copy of a ladder-only part (mechanism "none"): written
        # without `applicable` by peers before 2026-11-27's H100 check.
        inapplicable = s.get("applicable") is False or (row.get("peer") and s.get("mechanism") == "none")
        if not inapplicable:
            failed.append(f"{name} not effective: {reason}")
        elif name in named:
            failed.append(f"{name} asked for by name but cannot act here: {reason}")
        else:
            clause = re.split(r"[:;(]", reason)[0].strip()  # the reason's first clause, without the name
            notes.append((name, re.sub(rf"^{re.escape(name)} is ", "", clause)))
    # "cuda-graph, lt-epilogues not applicable: CUDA only": one note per reason.
    by_reason = {}
    for name, why in notes:
        by_reason.setdefault(why, []).append(name)
    return failed, [f"{', '.join(names)} not applicable: {why}" for why, names in by_reason.items()]


def smoke_problems(run_dir, row):
    """Why a rung fails the smoke (status, parity naming the failed quantity, switches), and its notes."""
    why = []
    if row["status"] != "ok":
        why.append(f"status {row['status']}: {(row.get('failure') or {}).get('reason', '')}")
    parity = row.get("parity") or {}
    if row.get("peer") and parity.get("status") == "not_checked":
        pass  # peers take no part in loss parity (their init and reduction order differ)
    elif parity.get("status") not in ("pass", "baseline"):
        quantities = [f"{label} {num(parity[key])}" for label, key in
                      (("loss max_rel_diff", "max_rel_diff"), ("grad_norm_max_rel_diff", "grad_norm_max_rel_diff"))
                      if parity.get(key) is not None]
        detail = parity.get("reason") or ", ".join(quantities)
        if detail and not parity.get("reason") and parity.get("rtol") is not None:
            detail += f", rtol {num(parity['rtol'])}"
        why.append(f"parity {parity.get('status')}" + (f": {detail}" if detail else ""))
    if row["status"] != "ok":
        return why, []
    failed, notes = switch_problems(run_dir, row)
    return why + failed, notes


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
    if not (b.get("kernel_launches_per_step") or b.get("ops_per_step")):  # CUDA kernels, or a CPU's operators
        why.append("op_breakdown counted no kernels or operators")
    if abs(b["sum_ms"] - b["overlap_ms"] - b["span_ms"]) > 0.01 * max(b["span_ms"], 1e-9):
        why.append(f"categories {b['sum_ms']:.2f} ms - overlap {b['overlap_ms']:.2f} ms "
                   f"!= span {b['span_ms']:.2f} ms")
    # The whole kernel table (op_breakdown.kernels, since 2026-12-02): each band but
    # idle/other (which also holds the idle time) is the sum of its rows.
    sums = {}
    for row in b.get("kernels") or []:
        sums[row["band"]] = sums.get(row["band"], 0.0) + row["ms"]
    for band, ms in sorted((b.get("categories_ms") or {}).items() if "kernels" in b else []):
        if band != "idle_other" and abs(sums.get(band, 0.0) - ms) > 0.01 * max(ms, 0.01):
            why.append(f"kernels' {band} rows sum to {sums.get(band, 0.0):.2f} ms, the band holds {ms:.2f} ms")
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
        if row["status"] in ("not_runnable", "missing", "skipped"):
            # Cannot run here, never ran (the run was stopped first: Ctrl-C, a time budget), or
            # a peer without its Python: nothing measured to judge.
            smoke_skipped += 1
            bd_skipped += 1
            why = row.get("reason") or (row.get("failure") or {}).get("reason") or ""
            if row["status"] == "missing":
                why = why or "not measured: the run stopped before this cell (interrupted, or out of time)"
            print(f"{cell:<14} {'SKIP':<6} {'SKIP':<10} {why}")
            continue
        smoke, notes = smoke_problems(run_dir, row)
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
        if notes and not smoke:
            why += f" ({'; '.join(notes)})"
        print(f"{cell:<14} {'FAIL' if smoke else 'PASS':<6} {bd_verdict:<10} {why}")
    print(f"(summary: {summary_path})")
    print(check_line("ladder-smoke", smoke_failed, smoke_skipped, len(rows)))
    print(check_line("breakdown", bd_failed, bd_skipped, len(rows)))
    return 1 if smoke_failed or bd_failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.splitlines()[2].strip())
    sys.exit(main(sys.argv[1]))
