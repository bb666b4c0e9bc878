#!/usr/bin/env python3
"""tests/e2e/e2e_gpu_check.py: scripts/gpu-smoke's check and its parts, on a CPU.

usage: e2e_gpu_check.py LADDER_BIN CASE

  verdict_on_cpu_run    scripts/gpu-smoke --verdict on a real CPU run of the
                        fused rung and fp32+adamw-clip: on fused, adamw-clip
                        waits for fused-adamw and the CUDA-only parts cannot
                        act on a CPU (notes, PASS); fp32+adamw-clip asks for
                        adamw-clip by name, which cannot act there (FAIL)
  dry_run_every_stage   the whole check on the CPU (--device cpu, tiny preset):
                        every stage's line in order (gemm-sites: the 9 sites,
                        PyTorch's way only on a CPU), the results directory
                        (run directories without traces, README with the
                        device, torch, compiler, commit and every command,
                        checks.txt), qualification against a reference made
                        here four times slower (PASS), and the other way round
                        (FAIL, by how much), `ladder compare` on the results
  interrupt_keeps_the_results
                        Ctrl-C in the ladder run: exit 130, what was measured kept,
                        the README and checks.txt say interrupted, every stage's line
  band_table_on_recorded_h100
                        `ladder bands` on reports/results/2026-11-27-gpu/
                        h100-peers (two recorded peers' breakdowns from their
                        traces): the table of that README, to the digit, in
                        markdown and JSON; `ladder run`'s table and `ladder
                        compare` show the same
  verdict_on_recorded_h100
                        the verdict on the recorded H100 check's ladder: the
                        compile peer's copies of ladder-only parts are notes
  kernel_fallbacks      a failed test of a kernel with a fallback (fused-ln's
                        vector kernels, fused-ce's batched kernel) sends the
                        later runs to its option (--layer-norm-kernel row,
                        --cross-entropy-kernel online), which `ladder run` takes;
                        other failures, and an option the user gave, add none
  recorded_h100_runs    the 2026-11-27 H100 runs beside 2026-11-23's: `ladder
                        compare` reads them (refusing the different total
                        batch without --force); scripts/qualify picks the
                        recorded check's ladder (not its later ddp and
                        ablation runs) as the reference of a copy of it
                        (PASS), and finds the morning's run before the GEMM
                        planner slower than it (FAIL, by how much)
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

from e2e_common import ROOT, load, run_case, run_ladder

LADDER = sys.argv[1]
BUILD = pathlib.Path(LADDER).resolve().parent
RESULTS = ROOT / "reports" / "results"
TINY_SHAPE = ["--preset", "tiny", "--threads", "1", "--steps", "3", "--warmup", "1"]
BUDGET_MIN = 3  # the dry run's --time-budget: the check fills it (--repeat auto), whatever the machine
STAGES = ["build", "unit-tests", "nvtx-trees", "ladder-run", "ladder-smoke", "breakdown", "band-table",
          "speed-of-light", "qualification", "ddp", "gemm-sites", "kernels", "autotune-peer", "ablation"]


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


def make_reference(d, slowdown_pct):
    """A tiny ladder run of fp32 and flash made slower by the test hook, where qualification looks."""
    ref = d / "refs" / "2026-01-01-cpu" / "ladder"
    run_ladder(LADDER, ["run", "--device", "cpu", *TINY_SHAPE, "--rungs", "fp32,flash", "--repeat", "3",
                        "--out", str(ref), "--quiet"], env={"LADDER_TEST_SLOWDOWN_PCT": str(slowdown_pct)},
               check_code=0)
    return ref


def dry_run_every_stage(d):
    # --ablation's spelling is checked before anything runs: exit 2, naming the option and the value.
    bad = script("gpu-smoke", "--device", "cpu", "--ablation", "Fused LN")
    assert bad.returncode == 2 and "--ablation: got 'Fused LN', expected part names" in bad.stderr, bad.stderr
    ref = make_reference(d, 300)
    # Three rungs and the eager peer keep the ladder stage short; --repeat auto fills its share of the budget.
    # Two parts for the ablation, in the order given (a CUDA-only one, which a CPU cannot run, first).
    p = script("gpu-smoke", "--device", "cpu", "--time-budget", str(BUDGET_MIN), "--rungs", "fp32,flash,fused-adamw",
               "--ablation", "lt-epilogues,fused-ln", "--results-dir", d / "results", "--references", d / "refs",
               *TINY_SHAPE)
    print(p.stdout[-20000:], p.stderr[-5000:])
    status = every_stage_passes_or_is_out_of_time(p)
    out = next((d / "results").glob("*-cpu-*"))
    readme = results_directory_says_what_ran(out, status)
    readme_names_every_command_and_file(out, readme, status, p.stdout)
    qualification_both_ways(d, ref, out)


def every_stage_passes_or_is_out_of_time(p):
    """The check's stage lines, in order: which pass, which may skip, and why; returns {stage: (status, why)}."""
    found = lines_of(p.stdout)
    assert [s for _, s, _ in found] == STAGES, found
    status = {s: (st, why) for st, s, why in found}
    for s in ("build", "ladder-run", "ladder-smoke", "breakdown", "band-table", "speed-of-light", "qualification"):
        assert status[s][0] == "PASS", (s, status[s])
    # Without a GPU the CUDA unit tests skip (the breakdown's run); the NVTX trees run where NVTX was built.
    assert status["unit-tests"][0] in ("PASS", "SKIP") and status["nvtx-trees"][0] in ("PASS", "SKIP"), status
    # ddp and the ablation come last, in what the budget leaves: on a quiet machine they run (about 3 s a
    # process here); on a busy one the budget may end first, which the check says and keeps.
    for s in ("ddp", "gemm-sites", "kernels", "ablation"):
        assert status[s][0] == "PASS" or (status[s][0] == "SKIP" and "out of time" in status[s][1]), (s, status[s])
        if status[s][0] == "SKIP":
            print(f"note: {s} skipped by the time budget on a busy machine: {status[s][1]}")
    assert status["autotune-peer"] == ("SKIP", "CUDA only: max-autotune times Triton GEMM templates"), status
    assert "FAIL" not in [st for st, _, _ in found] and p.returncode == 0, p.returncode
    assert "fused-adamw against eager:" in status["band-table"][1], status["band-table"]
    # The top rung (the dry run's ladder: fp32, flash, fused-adamw) against its floors at this CPU's ceilings.
    assert re.match(r"fused-adamw: floor [\d.]+ ms of dt [\d.]+ ms; largest headroom \w+ [\d.]+ ms; bandwidth "
                    r"measured \(\d+ GB/s\); sol.md$", status["speed-of-light"][1]), status["speed-of-light"]
    assert status["ddp"][0] == "SKIP" or "c10d gloo" in status["ddp"][1].lower(), status["ddp"]
    assert re.search(rf"^gpu-smoke \[\d+:\d\d of {BUDGET_MIN}:00\] ladder-run: the rungs fp32,flash,fused-adamw",
                     p.stdout, re.M), "no progress lines"
    return status


def results_directory_says_what_ran(out, status):
    """The results directory: runs without traces, the lines, a README that says what and how; returns the README."""
    assert re.fullmatch(r"\d{4}-\d\d-\d\d-cpu-[a-z0-9-]+", out.name), out.name
    for run in ["ladder"] + [s for s in ("ddp", "ablation") if status[s][0] == "PASS"]:
        summary = load(out / run / "summary.json")
        assert summary["rows"] and all((out / run / r["report"]).is_file() for r in summary["rows"]
                                       if r.get("report") and r["status"] == "ok"), run
    assert not [f for f in out.rglob("*") if "trace" in f.name], [f for f in out.rglob("*") if "trace" in f.name]
    checks = (out / "checks.txt").read_text().splitlines()
    assert [l.split(":")[0].split()[1] for l in checks] == STAGES, checks
    readme = (out / "README.md").read_text()
    for field in ("**Device**: CPU", "**torch**: 2.", "**Compiler**:", "**Commit**:", "**ladder**:", "**Build**:",
                  "status: **finished: "):
        assert field in readme, field
    return readme


def readme_names_every_command_and_file(out, readme, status, stdout):
    """Each stage that ran: its commands in the README and its files beside it, the GEMM plan's and the
    GEMM sites' tables and the ablation's as they should read."""
    commands = ["scripts/build --for check --target ladder --target ladder_tests", "ladder_tests --gtest_filter=",
                "ladder run --device cpu", "scripts/qualify", "ladder bands"]
    commands.append("ladder sol ")
    files = ["verdict.txt", "band-table.md", "qualification.txt", "gemm-plan.md", "gemm-plan.json", "sol.md",
             "sol.json", "attention-plan.md"]
    # fused-adamw's attention: PyTorch's pick, flash, math and explicit timed on a CPU (flash-fp32 only in bf16),
    # cuDNN's and CUTLASS's CUDA only; each candidate that ran with its verdict.
    attention = (out / "attention-plan.md").read_text().splitlines()
    assert re.match(r"\*\*fused-adamw's attention plan \(--attention-plan auto; (measured|cache: .*)\)\*\*: ",
                    attention[0]), attention[0]
    rows = [l.split(" | ") for l in attention if l.startswith("| ")][1:]
    assert [r[0] for r in rows] == ["| pytorch", "| flash", "| cudnn", "| efficient", "| math", "| explicit",
                                    "| flash-fp32"], attention
    assert all(r[3] == "chosen" or r[3].startswith(("slower: ", "within the margin: ")) for r in rows if r[2] != "-"), \
        attention
    assert re.search(r"fused-adamw's attention plan: (pytorch|flash|math|explicit|flash-fp32) \(", stdout), stdout
    # The top rung's GEMM plan beside the band table: on a CPU every GEMM of the step a site (measured, or
    # from the plan cache), and a file that `ladder run --gemm-plan` takes.
    plan_md = (out / "gemm-plan.md").read_text().splitlines()
    assert re.match(r"\*\*fused-adamw's GEMM plan \(--gemm-plan auto; (measured|cache: .*)\)\*\*$", plan_md[0]), plan_md[0]
    assert len([l for l in plan_md if l.startswith(("| attn.", "| mlp.", "| lm_head/"))]) == 15, plan_md
    assert re.search(r"fused-adamw's GEMM plan: \d+ of 15 sites off PyTorch's ops", stdout), stdout
    plan = json.loads((out / "gemm-plan.json").read_text())
    assert plan["mode"] == "auto" and all(s["choice"] in ("pytorch", "into-grad", "onednn") for s in plan["sites"]), plan
    if status["ddp"][0] == "PASS":
        commands.append("--rungs ddp --nproc-per-node 1")
        files.append("ddp-verdict.txt")
    if status["gemm-sites"][0] == "PASS":
        commands.append("ladder bench --device cpu --preset tiny --threads 1 --benchmark_filter=^gemm_sites/")
        files.append("gemm-sites.md")
        assert "15 sites checked and timed" in status["gemm-sites"][1], status["gemm-sites"]
        table = (out / "gemm-sites.md").read_text().splitlines()
        # into-grad where the step runs fp32 (a CPU whose bf16 is slower than its fp32, as this one's);
        # oneDNN's matmul at the forward and input-gradient sites (the first site is c_attn's forward)
        assert table[0] in ("| site (layer/epilogue/m/n/k) | pytorch ms | onednn ms | into-grad ms | fastest |",
                            "| site (layer/epilogue/m/n/k) | pytorch ms | onednn ms | fastest |"), table
        assert len(table) == 2 + 15, table
    if status["kernels"][0] == "PASS":
        commands.append("--benchmark_filter=^(layernorm|cross_entropy)/")
        files.append("kernels.md")
    if status["ablation"][0] == "PASS":
        commands += ["--rungs top,top-fused,top-lt-epilogues,top-fused-ln --peers none", "scripts/ablation-table"]
        files += ["ablation-verdict.txt", "ablation-table.md"]
    for cmd in commands:
        assert cmd in readme, cmd
    for f in files:
        assert (out / f).stat().st_size > 0, f
    if status["ablation"][0] == "PASS":
        table = (out / "ablation-table.md").read_text()
        assert "| `fused-ln` |" in table and "not runnable (lt-epilogues is CUDA only)" in table, table


def qualification_both_ways(d, ref, out):
    """Qualification: this run against the 4x slower reference, per rung; the reverse fails, saying by how much."""
    qual = (out / "qualification.txt").read_text()
    assert f"reference: {ref}" in qual or "2026-01-01-cpu/ladder" in qual, qual
    # 4x faster than the slowed reference: tokens/s this over the reference well above 2 (faster, or
    # at worst unresolved with 3 against 2 processes), never slower.
    for rung in ("fp32", "flash"):
        m = re.search(rf"^{rung} +[\d.]+ +[\d.]+ +(\d+\.\d+)x", qual, re.M)
        assert m and float(m.group(1)) > 2 and "SLOWER" not in m.group(0), qual
    back = script("qualify", ref, "--reference", out / "ladder")
    print(back.stdout, back.stderr)
    m = re.search(r"^FAIL qualification: slower than ladder \(CPU .*\): (.*) \(dt\)$", back.stdout, re.M)
    slower = dict(re.findall(r"([\w-]+) by (\d+\.\d) %", m.group(1))) if m else {}
    # The reference is 4x slower by construction (+300 %); how much more the two runs differ depends on
    # the machine's load while each ran (873 % beside a compile), so only the floor is asserted. The test
    # is Welch's on 3 against 2 processes, Holm-adjusted over the rungs: on a busy machine a rung whose
    # processes spread too far is unresolved (fp32 at [0.015, 1.951] on 2026-11-27; both rungs in CI on
    # 2026-11-28, beside the second compiler's check), never faster and never within noise. Each rung is
    # slower by more than the floor or unresolved, in the right direction (the mirror of the forward
    # check's > 2x); the exit code follows: 1 when one is slower, 0 when none resolved.
    for rung in ("fp32", "flash"):
        line = re.search(rf"^{rung} +[\d.]+ +[\d.]+ +(\d+\.\d+)x.*$", back.stdout, re.M)
        assert line and float(line.group(1)) < 0.5, (rung, back.stdout)
        assert rung in slower or "within the reference's spread (unresolved" in line.group(0), (rung, back.stdout)
    assert all(float(x) > 150 for x in slower.values()), back.stdout
    assert back.returncode == (1 if slower else 0), (back.returncode, back.stdout)
    if not slower:
        print("note: the reverse qualification resolved no rung on this busy machine (the FAIL line is checked "
              "on the recorded H100 runs: recorded_h100_runs)")
    none = script("qualify", out / "ladder", "--references", d / "nothing-here")
    assert none.returncode == 3 and "SKIP qualification: no earlier ladder run of CPU" in none.stdout, none.stdout
    # A fresh clone reads the results as committed: ladder compare against the reference.
    cmp = run_ladder(LADDER, ["compare", str(ref), str(out / "ladder"), "--format", "json"], check_code=0)
    assert [r["rung"] for r in json.loads(cmp.stdout)["rungs"]][:2] == ["fp32", "flash"]


def interrupt_keeps_the_results(d):
    """Ctrl-C during the ladder run: the check stops at once (exit 130), the run directory keeps
    what was measured (its summary says interrupted), and the README and checks.txt say so, with
    every stage's line (those not reached: SKIP, interrupted)."""
    proc = subprocess.Popen([str(ROOT / "scripts" / "gpu-smoke"), "--device", "cpu", "--time-budget", "5", "--rungs",
                             "fp32,flash,fused-adamw", "--results-dir", str(d / "results"), "--references",
                             str(d / "refs"), *TINY_SHAPE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True, env={**os.environ, "LADDER_BUILD_DIR": str(BUILD)})
    t0 = time.monotonic()
    while not list((d / "results").glob("*/ladder/*/report.json")):
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() - t0 < 300, "no rung report within 300 s"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends the terminal's process group
    out, _ = proc.communicate(timeout=120)
    print(out[-5000:])
    assert proc.returncode == 130, proc.returncode
    res = next((d / "results").glob("*-cpu-*"))
    summary = load(res / "ladder" / "summary.json")
    assert summary["status"] == "interrupted" and summary["missing"], summary["status"]
    assert any(r["status"] == "ok" for r in summary["rows"]), "the measured rung was not kept"
    checks = (res / "checks.txt").read_text().splitlines()
    assert [l.split(":")[0].split()[1] for l in checks] == STAGES, checks
    assert "SKIP ablation: not reached: interrupted (SIGINT)" in checks, checks
    assert "status: **interrupted (SIGINT)**" in (res / "README.md").read_text()


BAND_TABLE_H100 = """**where fused-adamw's step time goes against each peer (each band the median of 3 processes' op breakdowns, ms per step)**

| band (ms per step) | ladder fused-adamw | peer compile | peer eager | fused-adamw - compile | fused-adamw - eager |
|---|---:|---:|---:|---:|---:|
| GEMM | 22.20 | 16.53 | 16.50 | +5.67 | +5.69 |
| attention | 4.52 | 4.52 | 4.50 | 0.00 | +0.02 |
| elementwise/norm | 6.24 | 6.88 | 9.42 | -0.65 | -3.19 |
| loss | 1.98 | 4.07 | 8.65 | -2.09 | -6.67 |
| optimizer | 1.73 | 1.93 | 1.92 | -0.20 | -0.20 |
| memcpy/memset | 1.53 | 1.31 | 12.16 | +0.22 | -10.63 |
| idle/other | 1.39 | 5.00 | 9.70 | -3.61 | -8.32 |
| sum | 39.58 | 40.25 | 62.87 | -0.67 | -23.29 |
| step dt (median) | 39.06 | 37.96 | 57.08 | +1.10 | -18.02 |

fused-adamw against compile: largest gap GEMM +5.67 ms per step (sum 39.58 vs 40.25 ms)

"""


def band_table_on_recorded_h100(d):
    peers = RESULTS / "2026-11-27-gpu" / "h100-peers"
    p = run_ladder(LADDER, ["bands", str(peers), "--format", "md"], check_code=0)
    assert p.stdout == BAND_TABLE_H100, p.stdout
    # As machines read it: each band's ms per source and the differences.
    j = json.loads(run_ladder(LADDER, ["bands", str(peers), "--format", "json"], check_code=0).stdout)
    gemm = next(r for r in j["tables"][0]["rows"] if r["band"] == "gemm")
    assert abs(gemm["ladder_fused-adamw_minus_peer_compile_ms"] - 5.67) < 0.005, gemm
    # --peer eager puts eager's difference first and judges against it.
    p = run_ladder(LADDER, ["bands", str(peers), "--peer", "eager"], check_code=0)
    assert "fused-adamw against eager: largest gap GEMM +5.69 ms per step" in p.stdout, p.stdout
    # The run's own table shows it (`ladder export` renders what `ladder run` printed at its end).
    p = run_ladder(LADDER, ["export", "--format", "text", str(peers)], check_code=0)
    assert "where fused-adamw's step time goes against each peer" in p.stdout, p.stdout
    assert re.search(r"^GEMM +22\.20 +16\.53 +16\.50 +\+5\.67 +\+5\.69$", p.stdout, re.M), p.stdout
    html = run_ladder(LADDER, ["export", "--format", "html", str(peers)], check_code=0).stdout
    assert "against each peer" in html and ">+5.67<" in html, "no band table in the HTML"
    # ladder compare of two inputs: the top rung band by band, each input against the baseline.
    cmp = run_ladder(LADDER, ["compare", str(RESULTS / "2026-11-27-gpu" / "h100-ladder"), str(peers), "--force"],
                     check_code=0).stdout
    assert "where fused-adamw's step time goes in each input" in cmp, cmp
    assert re.search(r"^GEMM +22\.22 +22\.24 +\+0\.02$", cmp, re.M), cmp
    # Its peers failed there: nothing to compare with (3), and said so.
    p = run_ladder(LADDER, ["bands", str(RESULTS / "2026-11-27-gpu" / "h100-ladder")], check_code=3)
    assert "no peer ran ok (peer eager: failed, peer compile: failed)" in p.stdout, p.stdout
    run_ladder(LADDER, ["bands", str(d / "nowhere")], check_code=2)
    run_ladder(LADDER, ["bands", str(peers), "--peer", "nonesuch"], check_code=3)


H100_CHECK = RESULTS / "2026-11-27-h100-80gb-hbm3"  # scripts/gpu-smoke on an H100, 2026-11-27 (its README)


def verdict_on_recorded_h100(d):
    """The recorded check's ladder, judged again: its torch.compile peer turns on the fused
    rung's parts, which only ladder has; they are notes, not failures (the check itself,
    before the fix, FAILed ladder-smoke on them: its checks.txt)."""
    assert "FAIL ladder-smoke: 1 of 11 rungs failed: peer-compile" in (H100_CHECK / "checks.txt").read_text()
    p = script("gpu-smoke", "--verdict", H100_CHECK / "ladder")
    print(p.stdout, p.stderr)
    rows = {m[0]: m for m in re.findall(r"^(\S+) +(PASS|FAIL|SKIP) +(PASS|FAIL|SKIP) +(.*)$", p.stdout, re.M)}
    compiled = rows["peer-compile"]
    assert compiled[1:3] == ("PASS", "PASS"), compiled
    assert re.search(r"adamw-clip, cuda-graph, [a-z, -]*lt-epilogues not applicable: ladder's own mechanism",
                     compiled[3]), compiled
    assert rows["ddp"][1] == "SKIP" and all(rows[r][1:3] == ("PASS", "PASS") for r in rows if r != "ddp"), rows
    assert p.returncode == 0 and "PASS ladder-smoke" in p.stdout, p.stdout


def recorded_h100_runs(d):
    old, new = RESULTS / "2026-11-23-gpu" / "h100-gpt2-124m-b16t1024", RESULTS / "2026-11-27-gpu" / "h100-ladder"
    refused = run_ladder(LADDER, ["compare", str(old), str(new)], check_code=2)
    assert "total_batch" in refused.stderr and "--force" in refused.stderr, refused.stderr
    cmp = json.loads(run_ladder(LADDER, ["compare", str(old), str(new), "--force", "--format", "json"],
                                check_code=0).stdout)
    by = {r["rung"]: r for r in cmp["rungs"]}
    assert by["fused-adamw"]["inputs"][1]["status"] == "ok" and by["fp32"]["inputs"][0]["status"] == "ok", by.keys()
    for run in ("h100-ladder", "h100-peers", "h100-ablation-partial"):
        run_ladder(LADDER, ["export", "--format", "csv", str(RESULTS / "2026-11-27-gpu" / run)], check_code=0)
    # A new H100 run of that shape is qualified against the H100 run sharing the most rungs with it
    # (ok in both), the newest among equals: the check's ladder/, not its ddp/ or ablation runs,
    # started later but sharing only fp32.
    node = d / "results" / "2099-01-01-h100-80gb-hbm3" / "ladder"
    shutil.copytree(H100_CHECK / "ladder", node)
    p = script("qualify", node, "--references", RESULTS)
    print(p.stdout, p.stderr)
    assert "reference: reports/results/2026-11-27-h100-80gb-hbm3/ladder" in p.stdout, p.stdout
    assert "device: NVIDIA H100 80GB HBM3; shape: gpt2-124m B16 T1024, total batch 65536" in p.stdout, p.stdout
    assert re.search(r"^fused-adamw +36\.00 +36\.00 .*within the reference's spread", p.stdout, re.M), p.stdout
    assert p.returncode == 0 and "PASS qualification: 10 rungs" in p.stdout, p.stdout
    # The morning's build on the same GPU model, before the GEMM planner: slower where the plan acts.
    node = d / "results" / "2099-01-02-h100-80gb-hbm3" / "ladder"
    shutil.copytree(new, node)
    p = script("qualify", node, "--references", RESULTS, "--exclude", node.parent.parent / "2099-01-01-h100-80gb-hbm3")
    print(p.stdout, p.stderr)
    assert "reference: reports/results/2026-11-27-h100-80gb-hbm3/ladder" in p.stdout, p.stdout
    # (two processes a rung in the morning: fused-adamw's +8.8 % is not resolved after Holm; flash's +4.8 % is)
    assert re.search(r"^flash +70\.88 +67\.65 .*SLOWER than the reference, dt \+4\.8 %", p.stdout, re.M), p.stdout
    assert p.returncode == 1 and "FAIL qualification: slower than ladder (NVIDIA H100 80GB HBM3): fused by 2.1 %, " \
                                 "flash by 4.8 % (dt)" in p.stdout, p.stdout


def kernel_fallbacks(d):
    import importlib.util
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    ln = "FusedAddLayerNorm.CudaVectorAndRowKernelsAgree"
    options, why = gpu_check.kernel_fallbacks([ln, "FusedLinear.CudaEveryLtWay"], ["--preset", "gpt2-124m"])
    assert options == ["--layer-norm-kernel", "row"], options
    assert why == ["fused-ln's vector kernels (--layer-norm-kernel row)"], why
    assert gpu_check.kernel_fallbacks(["FusedLinear.CudaEveryLtWay"], []) == ([], [])
    assert gpu_check.kernel_fallbacks([ln], ["--layer-norm-kernel=auto"]) == ([], [])  # the user's choice stands

    ce = "FusedCrossEntropy.CudaBatchedAndOnlineKernelsAgree"
    assert gpu_check.kernel_fallbacks([ce], []) == (["--cross-entropy-kernel", "online"],
                                                    ["fused-ce's batched kernel (--cross-entropy-kernel online)"])

    class FakeCheck:
        extra = ["--steps", "5"]
    tail = gpu_check.take_kernel_fallbacks(FakeCheck, [ln, ce])
    assert FakeCheck.extra == ["--steps", "5", "--layer-norm-kernel", "row", "--cross-entropy-kernel", "online"], \
        FakeCheck.extra
    assert tail == ("; the later runs go without fused-ln's vector kernels (--layer-norm-kernel row), "
                    "fused-ce's batched kernel (--cross-entropy-kernel online)"), tail
    # Every fallback's option is one `ladder run` takes (its plan, nothing run).
    for _, option, value, _ in gpu_check.KERNEL_FALLBACKS:
        p = run_ladder(LADDER, ["run", "--device", "cpu", *TINY_SHAPE, "--rungs", "fused", option, value,
                                "--out", str(d / "plan"), "--plan"], check_code=0)
        assert "fused" in p.stdout, p.stdout


CASES = {f.__name__: f for f in (verdict_on_cpu_run, dry_run_every_stage, interrupt_keeps_the_results,
                                  band_table_on_recorded_h100, verdict_on_recorded_h100, kernel_fallbacks,
                                  recorded_h100_runs)}

if __name__ == "__main__":
    run_case(CASES, sys.argv[2])
