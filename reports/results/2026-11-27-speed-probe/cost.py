"""What the speed probe costs a run: the probes' own wall time (both readings
of every process, timing.noise.probe.{before,after}.wall_ms) against the
run's wall time (summary.json started_at to finished_at).

    .venv/bin/python reports/results/2026-11-27-speed-probe/cost.py RUN_DIR...
"""
import datetime
import json
import sys
from pathlib import Path


def when(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


for run in sys.argv[1:]:
    s = json.loads((Path(run) / "summary.json").read_text())
    wall_s = (when(s["finished_at"]) - when(s["started_at"])).total_seconds()
    probe_ms, processes = 0.0, 0
    for f in Path(run).rglob("report.json"):
        p = ((json.loads(f.read_text()).get("timing") or {}).get("noise") or {}).get("probe") or {}
        if "before" in p:
            probe_ms += p["before"]["wall_ms"] + p["after"]["wall_ms"]
            processes += 1
    print(f"{run}: {processes} processes, probes {probe_ms / 1e3:.1f} s of {wall_s:.0f} s "
          f"= {100 * probe_ms / 1e3 / wall_s:.2f} % ({probe_ms / max(processes, 1):.0f} ms a process)")
