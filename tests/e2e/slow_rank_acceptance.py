#!/usr/bin/env python3
"""tests/e2e/slow_rank_acceptance.py: how often ddp.slow_rank names the slowed rank, and no rank without one.

usage: slow_rank_acceptance.py LADDER_BIN [--runs N] [--pct P] [--steps S] [--sizes 2,3] [--launchers builtin,torchrun]

Not part of the suite (minutes, and a rate rather than a pass/fail of one run):
the acceptance of the slow-rank verdict (reports/model/report/slow_rank.h). For each
job size and launcher it runs N ddp jobs of the tiny preset on the CPU with
the last rank's compute slowed by P % (LADDER_TEST_SLOW_RANK) and N without,
and prints how many named the slowed rank and how many named none. Exit 1
when fewer than N of N slowed runs name the rank, or fewer than 9 in 10 quiet
runs name none. Every run's verdict is printed, so the tally can be checked.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--device", "cpu", "--preset", "tiny", "--threads", "1", "--quiet"]
LAUNCHER_VARS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_job(ladder, launcher, world, slow, out, roofline, steps):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env.pop("LADDER_TEST_SLOW_RANK", None)
    if slow:
        env["LADDER_TEST_SLOW_RANK"] = slow
    job = ["--total-batch", str(4 * 64 * world), "--steps", str(steps)]  # one micro-step of tiny's B 4, T 64 a rank
    if launcher == "builtin":
        cmd = [ladder, "run", "--rungs", "ddp", "--repeat", "1", "--nproc-per-node", str(world), "--roofline",
               str(roofline), "--out", str(out), *TINY, *job]
        report = out / "ddp" / "report.json"
    else:
        cmd = [str(ROOT / ".venv" / "bin" / "torchrun"), "--nproc-per-node", str(world), "--master-addr", "127.0.0.1",
               "--master-port", str(free_port()), "--no-python", ladder, "measure", "--rung", "ddp", "--out",
               str(out), *TINY, *job]
        report = out / "ddp" / "report.json"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode not in (0, 1) or not report.exists():
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return json.loads(report.read_text())["ddp"]["slow_rank"]


def main():
    a = argparse.ArgumentParser()
    a.add_argument("ladder")
    a.add_argument("--runs", type=int, default=10)
    a.add_argument("--pct", type=float, default=20)
    a.add_argument("--steps", type=int, default=20, help="measured steps per job (the verdict's samples)")
    a.add_argument("--sizes", default="2,3")
    a.add_argument("--launchers", default="builtin,torchrun")
    args = a.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        roofline = tmp / "roofline.json"
        subprocess.run([args.ladder, "roofline", "--device", "cpu", "--threads", "1", "--out", str(roofline)],
                       check=True, capture_output=True)
        for world in [int(s) for s in args.sizes.split(",")]:
            for launcher in args.launchers.split(","):
                slowed = world - 1
                named = quiet = 0
                for i in range(args.runs):
                    for slow in (f"{slowed}:{args.pct:g}", ""):
                        v = one_job(args.ladder, launcher, world, slow, tmp / f"{launcher}-{world}-{i}-{bool(slow)}",
                                    roofline, args.steps)
                        said = f"rank {v['rank']} x{v['ratio']:.3f} [{v['lo']:.3f}, {v['hi']:.3f}] p {v['p_value']:.2g}"
                        print(f"{launcher} {world} ranks run {i + 1} {'slowed' if slow else 'quiet '}: "
                              f"{'named' if v['resolved'] else 'none '} {said}", flush=True)
                        if slow:
                            named += v["resolved"] and v["rank"] == slowed
                        else:
                            quiet += not v["resolved"]
                print(f"== {launcher}, {world} ranks: slowed rank {slowed} named in {named}/{args.runs}; "
                      f"no rank named in {quiet}/{args.runs} quiet runs", flush=True)
                ok = ok and named == args.runs and quiet >= 0.9 * args.runs
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
