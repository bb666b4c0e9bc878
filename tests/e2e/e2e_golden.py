#!/usr/bin/env python3
"""tests/e2e/e2e_golden.py: what ladder prints for the shipped reports/results
directories, byte for byte against tests/fixtures/golden/ but for the last
digits of numbers printed at full precision (same_up_to_last_digits: LAPACK's
last bits differ between CPUs).

usage: e2e_golden.py LADDER_BIN CASE

  run_tables   `ladder export --format F RUN` (the run table as `ladder run`
               prints it, in text, csv, markdown, json and html) for an H100
               check's ladder (peers, band table, GEMM plan), a 2026-11-23
               H100 run, and a CPU ladder and ablation
  comparisons  `ladder compare A B --format F` (text, json, html) for two
               H100 builds of one day, an H100 against an H200, and a CPU A/A
               pair
  bands        `ladder bands` (text, markdown, json) on the H100 check
  sol          `ladder sol` (text, markdown, json) on the H100 check and its
               ablation at the top

The recorded runs never change, so any difference is a change in what ladder
makes of the same inputs: the guard of a refactor of the run table, compare,
the ratios or the HTML, whose outputs must stay the same. A change that
means to alter an output regenerates the files, which the commit then shows
as its visible effect:

  LADDER_UPDATE_GOLDEN=1 .venv/bin/python tests/e2e/e2e_golden.py build/ladder CASE

Paths are given relative to the tree's root (ladder runs there), so the files
hold no machine's paths.
"""
import difflib
import os
import re
import subprocess
import sys

from e2e_common import ROOT, run_case

LADDER = os.path.abspath(sys.argv[1])
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
R = "reports/results"
RUNS = {
    "h100-check": f"{R}/2026-11-27-h100-80gb-hbm3/ladder",
    "h100-ablation": f"{R}/2026-11-27-h100-80gb-hbm3/ablation-top-2rounds",
    "h100-1123": f"{R}/2026-11-23-gpu/h100-gpt2-124m-b16t1024",
    "cpu-ladder": f"{R}/2026-11-25-cpu-trust/d1",
}
PAIRS = {
    "h100-builds": (f"{R}/2026-11-27-gpu/h100-ladder", f"{R}/2026-11-27-h100-80gb-hbm3/ladder", []),
    "h100-h200": (f"{R}/2026-11-23-gpu/h100-gpt2-124m-b16t1024", f"{R}/2026-11-23-gpu/h200-gpt2-124m-b16t1024", []),
    "cpu-aa": (f"{R}/2026-11-25-cpu-trust/d1", f"{R}/2026-11-25-cpu-trust/d4", []),
    # The 2026-11-27 H100 check against the 2026-11-29 H200's top rung and compile peer: the band table
    # every format shows is fused-adamw's, the top ladder rung in both, not the compile peer's.
    "h100-h200-check": (f"{R}/2026-11-27-h100-80gb-hbm3/ladder", f"{R}/2026-11-29-h200/top-2rounds", []),
}
EXT = {"text": "txt", "csv": "csv", "markdown": "md", "json": "json", "html": "html"}


def ladder(*args):
    p = subprocess.run([LADDER, *args], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode in (0, 1), f"ladder {' '.join(args)}: exit {p.returncode}\n{p.stderr}"
    return p.stdout


# A number as ladder prints one at full precision (JSON, CSV, the HTML's data).
NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def same_up_to_last_digits(want, produced):
    """The same text, and every full-precision number within 1e-12 of its golden value (relative).
    The block design's fit (reports/stats/block_design.cpp) runs through LibTorch's LAPACK, whose last bits differ
    between CPUs (an Intel Xeon's AVX-512 path against the AMD EPYC's that wrote these files: 2.0795498302591513
    for 2.079549830259181); what ladder prints is otherwise the same. A number printed to fewer digits (the
    tables' 1.06 [1.05, 1.07]) must match exactly: a change there is a change in what a reader sees."""
    if NUMBER.sub("#", want) != NUMBER.sub("#", produced):
        return False
    for a, b in zip(NUMBER.findall(want), NUMBER.findall(produced)):
        if a == b:
            continue
        if len(a.split(".")[1].split("e")[0].split("E")[0]) < 12:
            return False
        x, y = float(a), float(b)
        if abs(x - y) > 1e-12 * max(abs(x), abs(y)):
            return False
    return True


def check(name, produced):
    """produced against GOLDEN/name (written instead with LADDER_UPDATE_GOLDEN=1); a list of problems."""
    path = GOLDEN / name
    if os.environ.get("LADDER_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(produced)
        print(f"wrote {path.relative_to(ROOT)} ({len(produced)} bytes)")
        return []
    if not path.is_file():
        return [f"{path.relative_to(ROOT)} is missing (make it with LADDER_UPDATE_GOLDEN=1)"]
    want = path.read_text()
    if produced == want or same_up_to_last_digits(want, produced):
        return []
    diff = "".join(list(difflib.unified_diff(want.splitlines(True), produced.splitlines(True),
                                             f"golden/{name}", "now", n=1))[:40])
    return [f"{name} differs from {path.relative_to(ROOT)}:\n{diff}"]


def assert_none(problems):
    assert not problems, "\n".join(problems)


def run_tables(_):
    problems = []
    for name, run in RUNS.items():
        for fmt, ext in EXT.items():
            problems += check(f"run-{name}.{ext}", ladder("export", "--format", fmt, run))
    assert_none(problems)


def comparisons(_):
    problems = []
    for name, (a, b, extra) in PAIRS.items():
        for fmt in ("text", "json", "html"):
            problems += check(f"compare-{name}.{EXT[fmt]}", ladder("compare", a, b, "--format", fmt, *extra))
    text = ladder("compare", *PAIRS["h100-h200-check"][:2])
    assert "where fused-adamw's step time goes in each input" in text, text
    assert_none(problems)


def bands(_):
    problems = []
    for fmt in ("text", "markdown", "json"):
        problems += check(f"bands-h100-check.{EXT[fmt]}", ladder("bands", RUNS["h100-check"], "--format", fmt))
    assert_none(problems)


def sol(_):
    """`ladder sol` on the recorded H100 check (every rung; the datasheet's bandwidth, not measured there) and its
    ablation at the top, part by part."""
    problems = []
    for name in ("h100-check", "h100-ablation"):
        for fmt in ("text", "markdown", "json"):
            problems += check(f"sol-{name}.{EXT[fmt]}", ladder("sol", RUNS[name], "--format", fmt))
    assert_none(problems)


CASES = {f.__name__: f for f in (run_tables, comparisons, bands, sol)}

if __name__ == "__main__":
    run_case(CASES, sys.argv[2])
