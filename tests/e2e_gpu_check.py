#!/usr/bin/env python3
"""tests/e2e_gpu_check.py: scripts/gpu-smoke's check and its parts, on a CPU.

usage: e2e_gpu_check.py LADDER_BIN CASE

  verdict_on_cpu_run    scripts/gpu-smoke --verdict on a real CPU run of the
                        fused rung and fp32+adamw-clip: on fused, adamw-clip
                        waits for fused-adamw and the CUDA-only parts cannot
                        act on a CPU (notes, PASS); fp32+adamw-clip asks for
                        adamw-clip by name, which cannot act there (FAIL)
"""
import os
import pathlib
import re
import subprocess
import sys

from e2e_common import ROOT, run_case, run_ladder

LADDER = sys.argv[1]
BUILD = pathlib.Path(LADDER).resolve().parent
TINY_SHAPE = ["--preset", "tiny", "--threads", "1", "--steps", "3", "--warmup", "1"]


def script(name, *args, env=None):
    return subprocess.run([str(ROOT / "scripts" / name), *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "LADDER_BUILD_DIR": str(BUILD), **(env or {})})


def lines_of(text, pattern=r"^(PASS|FAIL|SKIP) ([\w-]+)(?:: (.*))?$"):
    return re.findall(pattern, text, re.M)


def verdict_on_cpu_run(d):
    run = d / "run"
    run_ladder(LADDER, ["run", "--device", "cpu", *TINY_SHAPE, "--repeat", "1", "--rungs", "fused,fp32+adamw-clip",
                        "--out", str(run), "--quiet"], check_code=0)
    p = script("gpu-smoke", "--verdict", run)
    print(p.stdout, p.stderr)
    rows = {m[0]: m for m in re.findall(r"^(\S+) +(PASS|FAIL|SKIP) +(PASS|FAIL|SKIP) +(.*)$", p.stdout, re.M)}
    fused = rows["fused"]
    assert fused[1] == "PASS", fused
    assert "adamw-clip not applicable: needs fused-adamw, off in this rung" in fused[3], fused
    assert re.search(r"cuda-graph, [a-z, -]*lt-epilogues not applicable: CUDA only", fused[3]), fused
    clip = rows["fp32+adamw-clip"]
    assert clip[1] == "FAIL", clip
    assert "adamw-clip asked for by name but cannot act here: needs flat-grads, fused-adamw" in clip[3], clip
    assert ("FAIL", "ladder-smoke", "1 of 3 rungs failed: fp32+adamw-clip") in lines_of(p.stdout), p.stdout
    assert p.returncode == 1


CASES = {f.__name__: f for f in (verdict_on_cpu_run,)}

if __name__ == "__main__":
    run_case(CASES, sys.argv[2])
