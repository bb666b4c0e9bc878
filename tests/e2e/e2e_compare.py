#!/usr/bin/env python3
"""tests/e2e/e2e_compare.py: `ladder compare` and `ladder export` on real runs.

usage: e2e_compare.py LADDER_BIN WORK_DIR CASE

The runs are made once per WORK_DIR (fixture case `make_runs`, see there):
tiny ladders with --repeat 2 for the A/A comparison, fp32 with and without
a known 50 % slowdown for the A/B one, and a run with only fp32 (a rung
missing). Every case then reads them, but run_html_page: its WORK_DIR is
its own, for one tiny run whose page (`ladder run --format html`) it checks.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

LADDER, WORK = sys.argv[1], pathlib.Path(sys.argv[2])
TINY = ["--device", "cpu", "--preset", "tiny", "--steps", "20", "--warmup", "2", "--threads", "1", "--quiet"]
HERE = pathlib.Path(__file__).resolve().parent


def ladder(*args, code=0, env=None):
    p = subprocess.run([LADDER, *map(str, args)], capture_output=True, text=True, env=env)
    assert p.returncode == code, f"exit {p.returncode} != {code}: {args}\n{p.stdout}\n{p.stderr}"
    return p


def make_runs():
    """A/A: four tiny ladders, each with --repeat 2, interleaved as a1 b1 a2 b2
    so that drift on the machine spreads over both sides: 4 processes a side.
    A/B: fp32 alone, six runs with the test-only slowdown hook
    (LADDER_TEST_SLOWDOWN_PCT=50: every step waits 50 % of its time more)
    interleaved with six without it. And a run with only fp32 (a rung missing)."""
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    # One roofline for all 17 runs (ladder run --roofline), not a probe each.
    roof = WORK / "roofline.json"
    ladder("roofline", "--device", "cpu", "--threads", "1", "--out", roof, "--quiet")
    TINY.extend(["--roofline", str(roof)])
    # The A/B pairs first and back to back: right after a whole ladder this
    # VM's next process ran up to 40 % slower, which buried a 10 % change.
    slow_env = {**os.environ, "LADDER_TEST_SLOWDOWN_PCT": str(SLOWDOWN_PCT)}
    # One process per run (--repeat 1), the runs joined by commas: six processes a side.
    for i in range(1, AB_PROCESSES + 1):
        ladder("run", *TINY, "--rungs", "fp32", "--repeat", 1, "--out", WORK / f"fast{i}")
        ladder("run", *TINY, "--rungs", "fp32", "--repeat", 1, "--out", WORK / f"slow{i}", env=slow_env)
    for i in range(1, 3):
        ladder("run", *TINY, "--repeat", 2, "--out", WORK / f"a{i}")
        ladder("run", *TINY, "--repeat", 2, "--out", WORK / f"b{i}")
    (WORK / "a").symlink_to("a1")
    (WORK / "b").symlink_to("b1")
    ladder("run", *TINY, "--rungs", "fp32", "--repeat", 1, "--out", WORK / "only_fp32")


N_RUNGS = 9  # the whole ladder, fp32 to ddp
# The A/B difference: every step waits 50 % of its time more. 20 % was
# detected on a quiet host (+26 %, p = 0.003), but this VM's process-to-process
# spread of a tiny fp32 step can itself reach +-20 % with nothing else running
# (per-process medians 7.1 to 10.5 ms on 2026-11-23), and 20 % then failed
# three times in one day (p = 0.05 to 0.24), so it tested the host, not compare.
SLOWDOWN_PCT = 50
AB_PROCESSES = 6  # processes a side


def group(side, n=2):
    return ",".join(str(WORK / f"{side}{i}") for i in range(1, n + 1))


def flagged(cmp):
    """The ok rungs, and those called faster or slower (a finding)."""
    rungs = [r for r in cmp["rungs"] if r["inputs"][0]["status"] == "ok"]
    return rungs, [r["rung"] for r in rungs if r["vs_baseline"][1]["verdict"] in ("faster", "slower")]


def aa_with_repeat_gives_no_verdict():
    """Two interleaved pairs of --repeat 2 runs of one build: 4 processes a
    side, Welch's t over per-process medians. alpha 0.001 keeps the family of
    9 rungs below a 1 % false alarm rate, while judging the steps of one
    process as independent samples (the defect this guards against) gives
    p < 1e-6 for the run-to-run differences of this VM, so the test can fail."""
    cmp = json.loads(ladder("compare", group("a"), group("b"), "--alpha", "0.001", "--format", "json").stdout)
    rungs, flags = flagged(cmp)
    assert len(rungs) == N_RUNGS, [r["rung"] for r in cmp["rungs"]]
    for r in rungs:
        v = r["vs_baseline"][1]
        assert v["sample_unit"] == "processes" and v["n"] == [4, 4] and v["method"] == "welch_t_on_log_dt", v
        assert r["inputs"][0]["sample"] == "median of 4 per-process medians", r["inputs"][0]
        # Every ratio with its interval; a finding is practical and statistical at once.
        lo, hi = v["ratio_tokens_per_s_interval"]
        assert lo <= v["ratio_tokens_per_s"] <= hi, v
        big = abs(v["change_pct"]) >= v["noise_threshold_pct"]
        assert v["verdict"] not in ("faster", "slower") or (v["p_holm"] < 0.001 and big), v
        assert v["verdict"] in ("faster", "slower", "within noise", "unresolved"), v
    changes = {r["rung"]: round(r["vs_baseline"][1]["change_pct"], 2) for r in rungs}
    print(f"A/A (4 vs 4 processes): dt change % {changes}; flagged: {flags}")
    assert flags == [], f"an A/A comparison flagged {flags}"
    assert not any("one process per rung" in w for w in cmp["warnings"]), cmp["warnings"]
    assert cmp["subject"] == {}, cmp["subject"]  # same machine, same build
    assert cmp["geomean"][1]["rungs"] == N_RUNGS
    text = ladder("compare", group("a"), group("b")).stdout
    assert "geomean" in text and "ladder shape" in text and "same environment" in text
    assert "4 processes per rung: medians of per-process medians" in text, text
    # One --repeat 2 run a side is read as its two processes.
    one = json.loads(ladder("compare", WORK / "a1", WORK / "b1", "--format", "json").stdout)
    assert one["rungs"][0]["vs_baseline"][1]["n"] == [2, 2], one["rungs"][0]
    # One process a side: no verdict, the difference shown, and why.
    steps = json.loads(ladder("compare", WORK / "a1" / "fp32" / "report.json", WORK / "b1" / "fp32" / "report.json",
                              "--format", "json").stdout)
    v = steps["rungs"][0]["vs_baseline"][1]
    assert v["verdict"] == "cannot judge" and v["p_value"] is None and "change_pct" in v, v
    assert any("one process per rung" in w for w in steps["warnings"]), steps["warnings"]


def ab_small_real_difference_is_detected():
    """fp32 with every step made 50 % longer (the test-only hook), six
    processes a side, interleaved: slower, by about 50 %; and the other way
    round, faster. (On a quiet host 10 % was detected, +12.2 % at p = 0.009;
    see SLOWDOWN_PCT for why the test asks for more.)"""
    cmp = json.loads(ladder("compare", group("fast", AB_PROCESSES), group("slow", AB_PROCESSES), "--format",
                            "json").stdout)
    v = cmp["rungs"][0]["vs_baseline"][1]
    print(f"A/B +{SLOWDOWN_PCT} %: {v['verdict']}, dt {v['change_pct']:+.2f} %, p = {v['p_value']:.2e}")
    assert v["sample_unit"] == "processes" and v["n"] == [AB_PROCESSES, AB_PROCESSES], v
    assert v["verdict"] == "slower", v
    # At least half the hook's 50 %; at most four times it: beside a busy second process the hook's busy
    # wait (a share of the step's own wall time, which the contention stretches) grew to +137 % on
    # 2026-11-27, interleaved runs and all. A sign or scale error in compare would still fall outside.
    assert SLOWDOWN_PCT / 2 <= v["change_pct"] <= SLOWDOWN_PCT * 4, v
    assert any("test-only slowdown hook" in w and "input B" in w for w in cmp["warnings"]), cmp["warnings"]
    assert cmp["subject"] == {"timing.test_slowdown_pct": [None, SLOWDOWN_PCT]}, cmp["subject"]  # not an A/A pair
    back = json.loads(ladder("compare", group("slow", AB_PROCESSES), group("fast", AB_PROCESSES), "--format",
                             "json").stdout)
    assert back["rungs"][0]["vs_baseline"][1]["verdict"] == "faster"
    report = json.loads((WORK / "slow1" / "fp32" / "report.json").read_text())
    assert report["timing"]["test_slowdown_pct"] == SLOWDOWN_PCT
    assert json.loads((WORK / "fast1" / "fp32" / "report.json").read_text())["timing"]["test_slowdown_pct"] is None
    # Different rungs are different things: refused without --force.
    a = WORK / "a" / "fp32" / "report.json"
    p = ladder("compare", a, WORK / "a" / "bf16" / "report.json", code=2)
    assert "config.switches.bf16" in p.stderr and "--force" in p.stderr, p.stderr


def ab_in_one_run():
    """--ab: both sides of every rung in one run, interleaved (A B, then B A),
    B over A paired by round, AB_PROCESSES rounds (four were too few: one
    round's host burst, B/A 0.95 beside 0.55-0.62, left the interval at
    [0.41, 1.03] on 2026-11-27, in CI and here). Side B made 50 % slower by the test hook is
    called slower; `ladder compare RUN` reads the run's two sides; an A/A
    (--ab same) records both sides and its ratio with an interval."""
    out = WORK / "ab"
    shutil.rmtree(out, ignore_errors=True)
    p = ladder("run", *TINY, "--rungs", "fp32", "--repeat", AB_PROCESSES, "--ab",
               f"env:LADDER_TEST_SLOWDOWN_PCT={SLOWDOWN_PCT}",
               "--out", out, "--format", "json")
    summary = json.loads((out / "summary.json").read_text())
    rows = {r["cell"]: r for r in summary["rows"]}
    assert set(rows) == {"A/fp32", "B/fp32"}, list(rows)
    b = rows["B/fp32"]
    assert b["rounds"] == list(range(1, AB_PROCESSES + 1)) and b["b_over_a_against"] == "fp32", b
    lo, hi = b["b_over_a_interval"]
    print(f"A/B in one run +{SLOWDOWN_PCT} %: B/A tok/s {b['b_over_a']:.3f} [{lo:.3f}, {hi:.3f}]")
    # Expected 1/1.5; the bounds are loose on the slow side: the hook's extra time runs beside the suite's
    # other tests on 2 cores, and one suite run read 0.497 (2026-11-28) where the lower bound was 1/2.
    assert hi < 1 and 1 / (1 + 3 * SLOWDOWN_PCT / 100) < b["b_over_a"] < 1 / (1 + SLOWDOWN_PCT / 200), b
    assert json.loads((out / "A" / "fp32" / "report.json").read_text())["timing"]["test_slowdown_pct"] is None
    assert json.loads((out / "B" / "fp32" / "repeat3" / "report.json").read_text())["timing"]["test_slowdown_pct"] \
        == SLOWDOWN_PCT
    plan = [j["side"] for j in json.loads((out / "plan.json").read_text())["jobs"]]
    assert plan == ["A", "B", "B", "A"] * (AB_PROCESSES // 2), plan  # neither side always first
    # Every process ran the speed probe; the run says what its rounds resolve.
    probe = json.loads((out / "B" / "fp32" / "repeat2" / "report.json").read_text())["timing"]["noise"]["probe"]
    assert probe["workload"].startswith("cpu fp32 gemm 512 + sweep 64 MiB, 9 reps, ") and probe["speed_index_per_s"] > 0, probe
    assert len(probe["before"]["gemm_reps_ms"]) == len(probe["after"]["sweep_reps_ms"]) == 9, probe
    assert len(b["probe"]["speed_index_per_s"]) == AB_PROCESSES and "explains_dt_spread" in b["probe"], b["probe"]
    res = summary["resolution"]
    assert res["rounds"] == AB_PROCESSES and res["ratios"] == 1 and res["change_pct"] >= 1.0, res
    table = ladder("export", out, "--format", "text").stdout
    assert "A/B in one run" in table and "slower" in table, table
    assert f"resolution: with this noise, this run ({AB_PROCESSES} rounds) resolves changes of +-{res['change_pct']:.1f} %" in table
    # `ladder compare RUN`: the run's two sides as the inputs, paired by round.
    cmp = json.loads(ladder("compare", out, "--format", "json").stdout)
    v = cmp["rungs"][0]["vs_baseline"][1]
    assert v["method"] == "paired_t_on_log_dt" and v["verdict"] == "slower", v
    assert [i["label"] for i in cmp["inputs"]] == ["A", "B"], cmp["inputs"]
    ladder("compare", WORK / "a1", code=2)  # one input that is not an A/B run
    same = WORK / "aa-ab"
    shutil.rmtree(same, ignore_errors=True)
    ladder("run", *TINY, "--rungs", "fp32", "--repeat", 3, "--ab", "same", "--out", same)
    aa = {r["cell"]: r for r in json.loads((same / "summary.json").read_text())["rows"]}
    assert aa["B/fp32"]["b_over_a_interval"] is not None, aa["B/fp32"]


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
    p = ladder("compare", WORK / "a", WORK / "b", "--format", "yaml", code=2)
    assert "--format: 'yaml'" in p.stderr and "text, csv, html, json, markdown" in p.stderr, p.stderr
    # --out writes what stdout would show; the run table in the run's formats (ladder export).
    out = WORK / "compare.csv"
    ladder("compare", WORK / "a", WORK / "b", "--format", "csv", "--out", out)
    assert out.read_text().splitlines()[0] == csv[0]
    table = ladder("export", "--format", "csv", WORK / "a").stdout.splitlines()
    assert table[0].startswith("rung,status,dt_ms_median") and len(table) == 1 + N_RUNGS
    # HTML renders a run too: its table and its charts.
    page = ladder("export", "--format", "html", WORK / "a").stdout
    assert '<table class="doc">' in page and 'id="chart-tokens"' in page and 'id="chart-speedup"' in page, page[:2000]


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
    # A rung report names its rung and its status (it once compared as a rung named '?').
    (bad / "bare.json").write_text('{"kind":"ladder.rung_report","schema_version":1}')
    refused(bad / "bare.json", "bare.json", "field 'rung' is missing")
    (bad / "no_status.json").write_text(json.dumps({k: v for k, v in report.items() if k != "status"}))
    refused(bad / "no_status.json", "no_status.json", "field 'status' is missing")
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
    # A --repeat 2 run: the repetitions are its two processes' medians.
    assert len(iters) == N_RUNGS * 2 and len(aggs) == N_RUNGS * 3
    assert ctx["ladder_repetition_unit"].startswith("process (2 per rung")
    b = iters[0]
    assert b["name"] == "ladder/fp32" and b["time_unit"] == "ms" and b["real_time"] > 0
    assert b["repetitions"] == 2 and "tokens_per_s" in b
    summary = json.loads((WORK / "a1" / "summary.json").read_text())
    medians = next(r for r in summary["rows"] if r["cell"] == "fp32")["dt_ms_process_medians"]
    assert [i["real_time"] for i in iters[:2]] == medians
    # One process: its steps.
    steps = json.loads(ladder("export", "--gbench", WORK / "only_fp32").stdout)
    assert len([b for b in steps["benchmarks"] if b["run_type"] == "iteration"]) == 20
    assert steps["context"]["ladder_repetition_unit"].startswith("step")
    assert {a["aggregate_name"] for a in aggs} == {"mean", "median", "stddev"}
    ladder("export", WORK / "a", code=2)


def html_renders_in_a_browser():
    page, shot = WORK / "compare.html", WORK / "compare.png"
    ladder("compare", WORK / "a", WORK / "only_fp32", WORK / "b", "--html", page)
    p = subprocess.run([sys.executable, HERE / "check_html.py", page, shot], capture_output=True, text=True)
    print(p.stdout, p.stderr)
    assert p.returncode == 0
    # Under the breakdown chart, what makes up each band: the CPU operators.
    text = page.read_text()
    assert "What makes up each band" in text and "<code>aten::mm</code>" in text, text[-4000:]


def run_html_page():
    """`ladder run --format html` prints the run's page: its table, and its
    tokens/s, speedup and peak-memory charts and the top rung's speed-of-light
    bars drawn in a real browser. Its own tiny run (WORK is its own
    directory, not make_runs's)."""
    WORK.mkdir(parents=True, exist_ok=True)
    run_dir, page, shot = WORK / "run", WORK / "run.html", WORK / "run.png"
    shutil.rmtree(run_dir, ignore_errors=True)
    p = ladder("run", "--device", "cpu", "--preset", "tiny", "--rungs", "fp32,flash", "--steps", "3", "--warmup", "1",
               "--threads", "1", "--out", run_dir, "--format", "html")
    page.write_text(p.stdout)
    assert p.stdout.startswith("<!DOCTYPE html>") and "<td>flash</td>" in p.stdout, p.stdout[:2000]
    c = subprocess.run([sys.executable, HERE / "check_html.py", "--charts",
                        "chart-tokens,chart-speedup,chart-memory,chart-sol-flash", page, shot], capture_output=True, text=True)
    print(c.stdout, c.stderr)
    assert c.returncode == 0


def kernels_aa():
    """--kernels on the A/A pair (two interleaved --repeat 2 runs a side, 4
    processes): every rung's whole kernel tables, matched by family; at most
    5 % of the families flagged (the issue's bound; Holm keeps it near 0)."""
    cmp = json.loads(ladder("compare", group("a"), group("b"), "--kernels", "--format", "json").stdout)
    k = cmp["kernels"]
    assert k["method"] == "welch" and len(k["rungs"]) >= N_RUNGS - 1, [r["rung"] for r in k["rungs"]]
    flagged = sum(r["families_flagged"] for r in k["rungs"])
    compared = sum(r["families_compared"] for r in k["rungs"])
    print(f"A/A --kernels: {flagged} of {compared} families flagged")
    assert compared > 50 * (N_RUNGS - 1) and flagged <= 0.05 * compared, [
        (r["rung"], f["family"], f["vs_baseline"][1]) for r in k["rungs"] for f in r["families"]
        if f["vs_baseline"][1] and f["vs_baseline"][1]["flagged"]]
    for r in k["rungs"]:
        assert r["sources"] == ["kernels", "kernels"], r["sources"]
        assert all(len(f["inputs"][0]["ms_per_process"]) == 4 for f in r["families"]), r["rung"]
    text = ladder("compare", group("a"), group("b"), "--kernels").stdout
    assert "fp32: kernels (CUDA) or operators (CPU) by family" in text and "B against A:" in text, text[-3000:]
    md = ladder("compare", group("a"), group("b"), "--kernels", "--format", "md").stdout
    assert "| aten::mm | gemm |" in md, md[-3000:]
    p = ladder("compare", WORK / "a", WORK / "b", "--kernels", "--kernel-threshold", "-1", code=2)
    assert "--kernel-threshold: got -1" in p.stderr, p.stderr


SLOW_OP = "aten::gelu"  # the fp32 rung's GELU: an elementwise operator of its own
# How much slower, and over how many rounds. At +300 % over 6 rounds the
# family was found (0.2 -> 0.8 ms a step at tiny), but its band (every
# elementwise and norm operator) grew +0.63 ms with a 95 % interval of
# +-0.27 ms, and CI (2026-12-03) left the band unflagged: this VM pauses a
# process for 2-3 ms now and then, inside whichever operator runs, and one
# such pause in one round's band outweighs the effect. At +1000 % the band
# grows ~2.2 ms; over 6 rounds one pause in an A band still hid it (1 run of
# 4), over 10 rounds it was flagged in 6 of 6 (band p_holm <= 1e-5).
SLOW_PCT = 1000  # the hook's largest
SLOW_OP_ROUNDS = 10


def kernels_slow_operator():
    """One operator made SLOW_PCT % slower (LADDER_TEST_SLOW_OP) on side B of an
    A/B run: compare --kernels flags that family, in its band, and no other
    family or band by more than 5 % of that change; the page draws the rung's
    largest differences."""
    out = WORK / "slow-op"
    shutil.rmtree(out, ignore_errors=True)
    ladder("run", *TINY, "--rungs", "fp32", "--repeat", SLOW_OP_ROUNDS, "--ab",
           f"env:LADDER_TEST_SLOW_OP={SLOW_OP}:{SLOW_PCT}",
           "--out", out)
    assert json.loads((out / "B" / "fp32" / "report.json").read_text())["op_breakdown"]["test_slow_op"] == \
        f"{SLOW_OP}:{SLOW_PCT}"
    cmp = json.loads(ladder("compare", out, "--kernels", "--format", "json").stdout)
    rung = cmp["kernels"]["rungs"][0]
    assert cmp["kernels"]["method"] == "paired", cmp["kernels"]["method"]
    flagged = {(f["band"], f["family"]): f["vs_baseline"][1] for f in rung["families"] if f["vs_baseline"][1]["flagged"]}
    bands = {b["band"]: b["vs_baseline"][1] for b in rung["bands"] if b["vs_baseline"][1]["flagged"]}
    print(f"{SLOW_OP} +{SLOW_PCT} %: flagged families {sorted(flagged)}, bands {sorted(bands)}")
    slowed = flagged.pop(("elementwise_norm", SLOW_OP), None)
    assert slowed and slowed["verdict"] == "slower", flagged
    band = bands.pop("elementwise_norm", None)
    assert band and band["verdict"] == "slower", bands
    # Holm holds the chance of any false flag to 5 % a run, not to 0: another
    # family or band may be flagged by chance (idle_other's `forward`,
    # +0.038 ms [0.023, 0.053], p_holm 0.044, in one clean-clone suite of
    # 2026-12-03), but none by more than a sliver of the slowed family's
    # change: the slowdown does not leak into other families or bands.
    leak_ms = 0.05 * slowed["diff_ms"]
    assert all(abs(v["diff_ms"]) < leak_ms for v in [*flagged.values(), *bands.values()]), (flagged, bands)
    assert any(SLOW_OP in w and "LADDER_TEST_SLOW_OP" in w for w in cmp["warnings"]), cmp["warnings"]
    page, shot = WORK / "kernels.html", WORK / "kernels.png"
    ladder("compare", out, "--kernels", "--html", page)
    c = subprocess.run([sys.executable, HERE / "check_html.py", "--charts", "chart-kernels-fp32", page, shot],
                       capture_output=True, text=True)
    print(c.stdout, c.stderr)
    assert c.returncode == 0
    # A malformed hook stops the run before it starts, naming the variable.
    p = ladder("run", *TINY, "--rungs", "fp32", "--out", WORK / "slow-op-bad", code=2,
               env={**os.environ, "LADDER_TEST_SLOW_OP": "aten::gelu"})
    assert "LADDER_TEST_SLOW_OP: got 'aten::gelu', expected OPERATOR:P" in p.stderr, p.stderr


if __name__ == "__main__":
    globals()[sys.argv[3]]()
    print(f"{sys.argv[3]}: ok")
