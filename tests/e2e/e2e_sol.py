#!/usr/bin/env python3
"""tests/e2e/e2e_sol.py: the speed-of-light table end to end (bench/measure/roofline/speed_of_light.h).

usage: e2e_sol.py LADDER_BIN CASE

  recorded_runs   `ladder sol` on every run kept in reports/results (H100,
                  H200 and CPU ladders, ablations, ddp): no band's floor above
                  its measured time in any rung (a floor above its measurement
                  means the work model or a ceiling is wrong), and each table's
                  sums hold
  cpu_run         a tiny CPU ladder with the ddp rung on 2 ranks: every
                  report's speed_of_light section validates against the schema,
                  has the run's measured ceilings (the matmul roofline, the
                  memory bandwidth ladder, the all-reduce's bus bandwidth for
                  ddp), no floor above its measurement; `ladder run`'s table
                  ends with the top rung's table; `ladder sol RUN` prints one
                  table per rung; the section the report builder made (from
                  its config, its step's plan and the roofline it read once)
                  is the one `ladder sol` computes from the report alone
  bad_inputs      no run, an unknown rung, a bad format: exit 2 naming it
"""
import json
import shutil
import sys

from e2e_common import ROOT, TINY, load, run_case, run_ladder, validate

LADDER = sys.argv[1]


def check_section(rung, s):
    """The section's own sums: band floors add up to the step's, headroom = measured - floor; none above."""
    above = [(b["band"], b["floor_ms"], b["measured_ms"]) for b in s["bands"] if b["floor_above_measured"]]
    assert not above, (rung, above)
    total = sum(b["floor_ms"] for b in s["bands"])
    assert abs(total - s["step"]["floor_ms"]) <= 1e-9 * max(1.0, total), (rung, total, s["step"])
    for b in s["bands"]:
        assert abs(b["measured_ms"] - b["floor_ms"] - b["headroom_ms"]) <= 1e-9 * max(1.0, b["measured_ms"]), b
        assert abs(sum(x["floor_ms"] for x in b["sites"]) - b["floor_ms"]) <= 1e-9 * max(1.0, b["floor_ms"]), b
    idle = [b for b in s["bands"] if b["band"] == "idle_other"]
    assert not idle or idle[0]["floor_ms"] == 0 and not idle[0]["sites"], idle


def sol_json(run):
    p = run_ladder(LADDER, ["sol", str(run), "--format", "json"])
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def recorded_runs(_):
    runs = sorted({p.parent for p in (ROOT / "reports" / "results").rglob("summary.json")})
    checked = 0
    for run in runs:
        for rung, s in sol_json(run)["rungs"].items():
            check_section(f"{run.relative_to(ROOT)}:{rung}", s)
            checked += 1
    assert checked >= 100, checked  # the H100, H200 and CPU runs kept there: 140 rungs on 2026-11-29
    print(f"{checked} rungs of {len(runs)} recorded runs: no floor above its measurement")


def cpu_run(d):
    out = d / "run"
    p = run_ladder(LADDER, ["run", *TINY, "--rungs", "fp32,fused-adamw,ddp", "--repeat", "1", "--out", str(out)],
                   check_code=0)
    assert "speed of light: ddp" in p.stdout and "largest headroom:" in p.stdout, p.stdout
    for rung in ("fp32", "fused-adamw", "ddp"):
        r = validate(out / rung / "report.json")
        s = r["speed_of_light"]
        assert "unavailable" not in s, (rung, s)
        check_section(rung, s)
        c = s["ceilings"]
        assert c["memory_measured"] and c["memory_gbps"] > 0 and c["matmul_tflops"] > 0, c
        assert c["matmul_tflops"] == r["mfu"]["measured_roofline"]["peak_tflops"], c
        bands = {b["band"]: b for b in s["bands"]}
        assert bands["gemm"]["floor_ms"] > 0 and bands["gemm"]["binds"] == "compute", bands["gemm"]
    ddp = load(out / "ddp" / "report.json")["speed_of_light"]
    comm = {b["band"]: b for b in ddp["bands"]}["communication"]
    assert ddp["ceilings"]["link_gbps"] > 0 and comm["binds"] == "link" and comm["floor_ms"] > 0, (ddp["ceilings"], comm)
    # The link ceiling is the run's all-reduce micro-benchmark, or what the step's own collectives reached
    # where they moved their bytes faster than it (bench/measure/roofline/speed_of_light.cpp, link_at_least_achieved).
    busbw = load(out / "roofline.json")["interconnect"]["busbw_gbps"]
    link, basis = ddp["ceilings"]["link_gbps"], ddp["ceilings"]["link_basis"]
    assert link == busbw or (link > busbw and "raised to" in basis and "communication reached" in basis), (busbw, link,
                                                                                                          basis)
    p = run_ladder(LADDER, ["sol", str(out)], check_code=0)
    assert p.stdout.count("speed of light:") == 3, p.stdout
    # Two paths, one answer: the builder's section against the reader's, from a copy whose reports lack it.
    bare = d / "bare"
    shutil.copytree(out, bare)
    for rung in ("fp32", "fused-adamw", "ddp"):
        report = load(bare / rung / "report.json")
        del report["speed_of_light"]
        (bare / rung / "report.json").write_text(json.dumps(report))
    recomputed = sol_json(bare)["rungs"]
    for rung in ("fp32", "fused-adamw", "ddp"):
        assert recomputed[rung] == load(out / rung / "report.json")["speed_of_light"], rung
    # The pages draw each table as bars: per band, measured beside its floor (issue 68).
    sol_page = run_ladder(LADDER, ["sol", str(out), "--format", "html"], check_code=0).stdout
    run_page = run_ladder(LADDER, ["export", str(out), "--format", "html"], check_code=0).stdout
    for page, rungs in ((sol_page, ("fp32", "fused-adamw", "ddp")), (run_page, ("ddp",))):
        for rung in rungs:
            chart = page.split(f'id="chart-sol-{rung}"')[1].split("</svg>")[0]
            bands_of = load(out / rung / "report.json")["speed_of_light"]["bands"]
            assert chart.count("<title>measured · ") == chart.count("<title>floor · ") == len(bands_of), chart
            for b in bands_of:
                assert f": measured {b['measured_ms']:.2f} ms" in chart, (rung, b, chart)
                assert f": floor {b['floor_ms']:.2f} ms" in chart, (rung, b, chart)


def bad_inputs(d):
    p = run_ladder(LADDER, ["sol", str(d / "nowhere")], check_code=2)
    assert "nowhere" in p.stderr and "summary.json" in p.stderr, p.stderr
    run = ROOT / "reports" / "results" / "2026-11-27-h100-80gb-hbm3" / "ladder"
    p = run_ladder(LADDER, ["sol", str(run), "--rung", "nope"], check_code=2)
    assert "--rung 'nope'" in p.stderr, p.stderr
    p = run_ladder(LADDER, ["sol", str(run), "--format", "yaml"], check_code=2)
    assert "--format 'yaml'" in p.stderr, p.stderr


CASES = {f.__name__: f for f in (recorded_runs, cpu_run, bad_inputs)}

if __name__ == "__main__":
    run_case(CASES, sys.argv[2])
