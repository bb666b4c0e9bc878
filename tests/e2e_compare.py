#!/usr/bin/env python3
"""tests/e2e_compare.py: `ladder compare` and `ladder export` on real runs.

usage: e2e_compare.py LADDER_BIN WORK_DIR CASE

The runs are made once per WORK_DIR (fixture case `make_runs`): two ladders
back to back on the tiny preset (the A/A pair), and a third run with only
fp32 (a rung missing). Every case then reads them.
"""
import json
import pathlib
import shutil
import subprocess
import sys

LADDER, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
TINY = ["--device", "cpu", "--preset", "tiny", "--steps", "20", "--warmup", "2", "--threads", "1", "--quiet"]
HERE = pathlib.Path(__file__).resolve().parent


def ladder(*args, code=0):
    p = subprocess.run([LADDER, *map(str, args)], capture_output=True, text=True)
    assert p.returncode == code, f"exit {p.returncode} != {code}: {args}\n{p.stdout}\n{p.stderr}"
    return p


def make_runs():
    """Four A runs and four B runs of the same build, interleaved (a1 b1 a2 b2
    ...) so that drift on the machine spreads over both sides."""
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    for i in range(1, 5):
        ladder("run", *TINY, "--out", WORK / f"a{i}")
        ladder("run", *TINY, "--out", WORK / f"b{i}")
    (WORK / "a").symlink_to("a1")
    (WORK / "b").symlink_to("b1")
    ladder("run", *TINY, "--rungs", "fp32", "--out", WORK / "only_fp32")


N_RUNGS = 9  # the whole ladder, fp32 to ddp


def group(side):
    return ",".join(str(WORK / f"{side}{i}") for i in range(1, 5))


def flagged(cmp):
    rungs = [r for r in cmp["rungs"] if r["inputs"][0]["status"] == "ok"]
    return rungs, [r["rung"] for r in rungs if r["vs_baseline"][1]["verdict"] != "within noise"]


def aa_comparison_gives_a_verdict_per_rung():
    # Per run: four processes a side, the U test over per-run medians.
    cmp = json.loads(ladder("compare", group("a"), group("b"), "--format", "json").stdout)
    rungs, per_run_flags = flagged(cmp)
    assert len(rungs) == N_RUNGS
    for r in rungs:
        v = r["vs_baseline"][1]
        assert v["sample_unit"] == "runs" and v["n"] == [4, 4], v
        assert v["verdict"] in ("faster", "slower", "within noise"), v
        # A verdict is practical and statistical at once: within noise unless both hold.
        big = abs(v["change_pct"]) >= v["noise_threshold_pct"]
        assert (v["verdict"] != "within noise") == (v["p_value"] < 0.05 and big), v
    print(f"A/A per run (4 vs 4 processes): {len(per_run_flags)} of {N_RUNGS} rungs flagged at alpha 0.05: {per_run_flags}")
    # Per step: one process a side.
    cmp = json.loads(ladder("compare", WORK / "a", WORK / "b", "--format", "json").stdout)
    assert cmp["kind"] == "ladder.comparison"
    rungs = [r for r in cmp["rungs"] if r["inputs"][0]["status"] == "ok"]
    assert len(rungs) == N_RUNGS, [r["rung"] for r in cmp["rungs"]]
    verdicts = [r["vs_baseline"][1]["verdict"] for r in rungs]
    assert all(v in ("faster", "slower", "within noise") for v in verdicts), verdicts
    _, per_step_flags = flagged(cmp)
    print(f"A/A per step (one process a side): {len(per_step_flags)} of {N_RUNGS} rungs flagged: {per_step_flags}")
    assert any("not independent" in w for w in cmp["warnings"])
    assert cmp["subject"] == {}, cmp["subject"]  # same machine, same build
    assert cmp["geomean"][1]["rungs"] == N_RUNGS
    text = ladder("compare", WORK / "a", WORK / "b").stdout
    assert "geomean" in text and "ladder shape" in text and "same environment" in text


def ab_comparison_is_significant():
    """Reports of different rungs need --force; a pair that truly differs is
    flagged. fp32 against bf16 on tiny is too close to call on this CPU (no
    AMX; it came out level under load), so the significant pair is fp32
    against grad-accum, which does 4 micro-steps per step."""
    a = WORK / "a" / "fp32" / "report.json"
    p = ladder("compare", a, WORK / "a" / "bf16" / "report.json", code=2)
    assert "config.switches.bf16" in p.stderr and "--force" in p.stderr, p.stderr
    b = WORK / "a" / "grad-accum" / "report.json"
    ladder("compare", a, b, code=2)
    cmp = json.loads(ladder("compare", a, b, "--force", "--format", "json").stdout)
    v = cmp["rungs"][0]["vs_baseline"][1]
    assert v["verdict"] == "slower", v
    assert v["p_value"] < 0.05
    assert any("switches.grad-accum" in d for d in cmp["forced_differences"])
    print(f"A/B fp32 vs grad-accum: {v['verdict']}, p = {v['p_value']:.2e}, dt ratio {v['ratio_dt_ms']:.2f}")


def refuses_different_shapes():
    other = WORK / "other_batch"
    if not other.exists():
        ladder("run", "--device", "cpu", "--preset", "tiny", "--batch", "2", "--steps", "5", "--rungs", "fp32", "--quiet", "--out", other)
    p = ladder("compare", WORK / "a", other, code=2)
    assert "config.batch is 4" in p.stderr and "--force" in p.stderr, p.stderr
    out = ladder("compare", WORK / "a", other, "--force").stdout
    assert "FORCED: rung 'fp32': config.batch" in out


def missing_rung_does_not_stop():
    cmp = json.loads(ladder("compare", WORK / "a", WORK / "only_fp32", "--format", "json").stdout)
    by = {r["rung"]: r for r in cmp["rungs"]}
    assert by["flash"]["inputs"][1]["status"] == "missing"
    assert by["flash"]["vs_baseline"][1]["verdict"] == "missing"
    assert by["fp32"]["vs_baseline"][1]["verdict"] != "missing"
    assert any("'flash': missing" in w for w in cmp["warnings"])


def formats():
    md = ladder("compare", WORK / "a", WORK / "b", "--format", "md").stdout
    assert "| rung | input |" in md and "| fp32 | A |" in md
    csv = ladder("compare", WORK / "a", WORK / "b", "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("rung,input,status,dt_ms_median")
    assert len(csv) == 1 + 2 * 9  # 9 rungs (ddp included) x 2 inputs
    ladder("compare", WORK / "a", WORK / "b", "--format", "yaml", code=2)


def bad_inputs():
    bad = WORK / "bad"
    bad.mkdir(exist_ok=True)
    report = json.loads((WORK / "a" / "fp32" / "report.json").read_text())

    def refused(path, *parts):
        p = ladder("compare", WORK / "a" / "fp32" / "report.json", path, code=2)
        for part in parts:
            assert part in p.stderr, f"{part!r} not in {p.stderr!r}"

    (bad / "other.json").write_text('{"hello": 1}')
    refused(bad / "other.json", "other.json", "not a ladder report")
    (bad / "newer.json").write_text(json.dumps({**report, "schema_version": 99}))
    refused(bad / "newer.json", "newer.json", "schema_version 99 is newer")
    (bad / "older.json").write_text(json.dumps({**report, "schema_version": 0}))
    refused(bad / "older.json", "older.json", "schema_version 0")
    text = (WORK / "a" / "fp32" / "report.json").read_text()
    (bad / "truncated.json").write_text(text[: len(text) // 2])
    refused(bad / "truncated.json", "truncated.json", "not valid JSON")
    (bad / "latin1.json").write_bytes(b'{"kind": "ladder.rung_report", "rung": "caf\xe9"}')
    refused(bad / "latin1.json", "latin1.json", "not valid JSON")
    refused(bad / "nowhere.json", "nowhere.json", "no such file")
    (bad / "empty_dir").mkdir(exist_ok=True)
    refused(bad / "empty_dir", "empty_dir", "not a run directory")
    # An "ok" report without a figure compare reads, or with a NaN (written as null).
    incomplete = {k: v for k, v in report.items() if k != "summary"}
    (bad / "incomplete.json").write_text(json.dumps(incomplete))
    refused(bad / "incomplete.json", "incomplete.json", "'summary.dt_ms.median' is missing")
    nan = json.loads(json.dumps(report))
    nan["steps"]["dt_ms"][1] = None
    (bad / "nan.json").write_text(json.dumps(nan))
    refused(bad / "nan.json", "nan.json", "'steps.dt_ms[1]' is null", "expected a finite number")
    ladder("compare", WORK / "a", code=2)


def gbench_export():
    out = WORK / "gbench.json"
    ladder("export", "--gbench", WORK / "a", "--out", out)
    j = json.loads(out.read_text())
    assert {"context", "benchmarks"} <= j.keys()
    ctx = j["context"]
    for key in ("date", "host_name", "executable", "num_cpus", "library_build_type"):
        assert key in ctx, key
    # Context facts come from what the run read on its host, never placeholders.
    env = json.loads((WORK / "a1" / "fp32" / "report.json").read_text())["environment"]
    assert ctx["library_build_type"] == env["build_type"].lower()
    for key in ("mhz_per_cpu", "caches", "load_avg", "cpu_scaling_enabled"):
        assert (key in ctx) == (key in env["cpu_host"]), key
        if key in ctx:
            assert ctx[key] == env["cpu_host"][key], key
    if "mhz_per_cpu" in ctx:
        assert ctx["mhz_per_cpu"] > 0
    for cache in ctx.get("caches", []):
        assert cache["size"] > 0 and cache["num_sharing"] >= 1 and cache["level"] >= 1, cache
    iters = [b for b in j["benchmarks"] if b["run_type"] == "iteration"]
    aggs = [b for b in j["benchmarks"] if b["run_type"] == "aggregate"]
    assert len(iters) == N_RUNGS * 20 and len(aggs) == N_RUNGS * 3
    b = iters[0]
    assert b["name"] == "ladder/fp32" and b["time_unit"] == "ms" and b["real_time"] > 0
    assert b["repetitions"] == 20 and "tokens_per_s" in b
    assert {a["aggregate_name"] for a in aggs} == {"mean", "median", "stddev"}
    ladder("export", WORK / "a", code=2)


def html_renders_in_a_browser():
    page, shot = WORK / "compare.html", WORK / "compare.png"
    ladder("compare", WORK / "a", WORK / "only_fp32", WORK / "b", "--html", page)
    p = subprocess.run([sys.executable, HERE / "check_html.py", page, shot], capture_output=True, text=True)
    print(p.stdout, p.stderr)
    assert p.returncode == 0


if __name__ == "__main__":
    globals()[sys.argv[3]]()
    print(f"{sys.argv[3]}: ok")
