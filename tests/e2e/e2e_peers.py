#!/usr/bin/env python3
"""tests/e2e/e2e_peers.py: the PyTorch peers of a run (`ladder run --peers`), on the tiny preset.

usage: e2e_peers.py LADDER_BIN CASE     (CASE: one of the functions below)

Each case runs the real `ladder` binary (and, through it, scripts/peer.py) in
a temporary directory, on the CPU, and asserts on exit codes, reports,
summary.json, the table and `ladder compare`. Run by ctest, one test per case.
"""
import json
import math
import re
import statistics
import os
import signal
import subprocess
import sys
import time

from e2e_common import ROOT, TINY, load, run_case, run_ladder, validate
from e2e_common import summary_rows as rows

LADDER = sys.argv[1]


def run(args, env=None, check_code=None):
    return run_ladder(LADDER, args, env, check_code)


# What a run that went well prints on stderr, line by line: ladder's own lines,
# the roofline's, each job as it starts ("[2/3] fp32 #1 (cpu)") and the
# progress lines of rungs and peers ("[peer:eager #1] step 3/4 | dt ...").
CLEAN_STDERR_LINE = re.compile(r"ladder: |\[roofline\] |\[\d+/\d+\] |\[[^\]]+\] step +\d+/\d+ ")


def assert_clean_run_output(p, d, peers):
    """A run with peers that went well prints nothing of the peers but their
    progress lines: their own output (PyTorch's warnings, the profiler's
    errors) is in each peer cell's output.log, and the table on stdout is the
    table."""
    bad = [line for line in p.stderr.splitlines() if not CLEAN_STDERR_LINE.match(line)]
    assert not bad, f"stderr lines that are neither ladder's nor progress: {bad}\n{p.stderr}"
    for name in peers:
        assert re.search(rf"^\[peer:{name} #1\] step +\d+/\d+ ", p.stderr, re.M), p.stderr
        log = d / f"peer-{name}" / "output.log"
        assert log.is_file(), list((d / f"peer-{name}").iterdir())
        # Prevented at its source: one profiling cycle keeps its events (acc_events).
        assert "Profiler clears events" not in log.read_text(errors="replace"), log.read_text(errors="replace")
    for said in ("Warning:", "ERROR:", "Traceback", "peer.py: "):  # what the peers' own lines hold
        assert said not in p.stdout, f"{said!r} on stdout:\n{p.stdout}"


def eager_peer_in_the_run(d):
    """--peers eager: a schema-valid report marked as a peer, MFU by ladder's
    formula against the run's roofline, its losses recorded, and the peer in
    summary.json, the table and `ladder compare` (text, JSON, HTML); nothing
    of the peer's own output on the terminal."""
    p = run(["run", *TINY, "--rungs", "fp32,fused-adamw", "--peers", "eager", "--out", str(d)], check_code=0)
    assert_clean_run_output(p, d, ["eager"])
    report = validate(d / "peer-eager" / "report.json")
    eager_report_is_a_peer(d, report)
    eager_mfu_by_ladder(d, report)
    eager_op_breakdown(d, report)
    ratio = eager_in_the_summary(d)
    eager_in_the_table(d, p.stdout, report, ratio)
    eager_in_compare(d)


def eager_report_is_a_peer(d, report):
    """The peer's report: marked as a peer, the top rung's switches, its steps, memory and losses."""
    assert report["status"] == "ok" and report["rung"] == "peer-eager", report.get("failure")
    peer = report["peer"]
    assert peer["name"] == "eager" and peer["program"] == "scripts/peer.py" and peer["torch_version"], peer
    # The switches of the top single-process rung; no fusion in eager.
    sw = report["config"]["switches"]
    rung_sw = load(d / "fused-adamw" / "report.json")["config"]["switches"]
    # fused and each of its parts off: every switch but the ladder's other rungs
    others = ("tf32", "bf16", "flash", "vocab-pad", "fused-adamw", "grad-accum", "ddp")
    assert sw == {k: (v if k in others else False) for k, v in rung_sw.items()}, sw
    assert report["switches"]["fused-adamw"]["effective"] and report["switches"]["flash"]["effective"]
    assert report["model"]["model_vocab"] == 1024 and report["switches"]["vocab-pad"]["effective"]
    assert report["timing"]["measured_steps"] == 3 and len(report["steps"]["dt_ms"]) == 3
    assert report["timing"]["warmup"]["steps_run"] == 1 and report["timing"]["warmup"]["stopped"] == "fixed"
    assert report["memory"]["measured"]["peak_kind"] == "cpu_peak_rss" and report["memory"]["measured"]["peak_bytes"] > 0
    # Losses recorded (not compared): finite, near ln V at the start.
    losses = report["warmup_steps"]["loss"] + report["steps"]["loss"]
    assert len(losses) == 4 and all(abs(l - math.log(1000)) < 0.5 for l in losses), losses
    assert report["parity"]["status"] == "not_checked" and "loss parity" in report["parity"]["reason"]


def eager_mfu_by_ladder(d, report):
    """MFU: filled in by ladder from the peer's dt, with the run's roofline and bench/mfu's formula."""
    mfu = report["mfu"]
    # The peer computes in the precision its rung does here: bf16, or fp32 where
    # this CPU emulates bf16 (--cpu-bf16 auto), as the rung's report says.
    rung_bf16 = load(d / "fused-adamw" / "report.json")["switches"]["bf16"]["effective"]
    assert report["switches"]["bf16"]["effective"] == rung_bf16, report["switches"]["bf16"]
    precision = "bf16" if rung_bf16 else "fp32"
    assert mfu["precision"] == precision and mfu["measured_roofline"]["source"]["file"] == str(d / "roofline.json"), mfu
    roof = load(d / "roofline.json")["precisions"][precision]["matmul_tflops"]
    tok_s = report["summary"]["tokens_per_s"]["median"]
    fpt = report["flops"]["flops_per_token"]
    assert fpt == load(d / "fused-adamw" / "report.json")["flops"]["flops_per_token"]
    assert math.isclose(mfu["measured_roofline"]["mfu_pct"], 100 * tok_s * fpt / (roof * 1e12), rel_tol=1e-9)
    assert not (d / "peer-eager" / "peer_partial.json").exists()


def eager_op_breakdown(d, report):
    """Its op breakdown: the Kineto trace of two profiled steps, categorised by
    ladder as a rung's, summing to the step, AdamW under optimizer."""
    b = report["op_breakdown"]
    assert b["source"] == "kineto trace of scripts/peer.py: CPU operators" and b["valid"], b
    assert b["steps_profiled"] == 2 and (d / "peer-eager" / "peer_breakdown.trace.json").is_file(), b
    # The categories partition the profiled steps' span (plus any overlap), and sum_pct_of_dt is that over the median
    # step dt, exactly. Its value is not: the peer's dt is the median of its unprofiled steps, so a busy machine moves
    # the ratio (107 % in CI beside the second compiler's check); two steps counted as one would read about 200 %.
    assert math.isclose(sum(b["categories_ms"].values()), b["sum_ms"], rel_tol=1e-6), b
    assert math.isclose(b["sum_ms"], b["span_ms"] + b["overlap_ms"], rel_tol=1e-6), b
    assert math.isclose(b["sum_pct_of_dt"], 100 * b["sum_ms"] / b["step_dt_ms"], rel_tol=1e-6), b
    assert 60 < b["sum_pct_of_dt"] < 150, b
    for key in ("gemm", "attention", "elementwise_norm", "softmax_loss", "optimizer"):
        assert b["categories_ms"][key] > 0, (key, b["categories_ms"])
    assert "aten::_fused_adamw_" in {r["name"] for r in b["top_by_category"]["optimizer"]}, b["top_by_category"]
    assert report["op_counts"]["cpu_ops_per_step"] == round(b["ops_per_step"]) > 0, report["op_counts"]


def eager_in_the_summary(d):
    """summary.json: the peer after the rungs, and the top rung's speed relative to it; returns that ratio."""
    summary = validate(d / "summary.json")
    assert summary["peers"]["names"] == ["eager"] and summary["peers"]["source"] == "--peers", summary["peers"]
    assert "loss parity" in summary["peers"]["loss_parity"]
    r = rows(d)
    assert list(r) == ["fp32", "fused-adamw", "peer-eager"], list(r)  # peers after the rungs
    row = r["peer-eager"]
    assert row["status"] == "ok" and row["peer"]["name"] == "eager" and row["parity"]["status"] == "not_checked"
    ratio = row["ladder_vs_peer"]
    assert ratio["rung"] == "fused-adamw"
    # The rounds are blocks: the ratio is the geometric mean of the per-round ratios.
    def by_round(x):
        return dict(zip(x["rounds"], x["per_process"]["tokens_per_s_median"]))
    ladder_r, peer_r = by_round(r["fused-adamw"]), by_round(row)
    assert sorted(ladder_r) == sorted(peer_r) == [1, 2], (ladder_r, peer_r)
    per_round = [math.log(ladder_r[k] / peer_r[k]) for k in ladder_r]
    assert math.isclose(ratio["tokens_per_s_ratio"], math.exp(sum(per_round) / len(per_round)), rel_tol=1e-9), ratio
    lo, hi = ratio["tokens_per_s_interval"]
    assert lo < ratio["tokens_per_s_ratio"] < hi, ratio
    assert row["speedup_vs_previous"] is None and row["speedup_vs_fp32"] > 0
    return ratio


def eager_in_the_table(d, stdout, report, ratio):
    """The table: a peers section, the peer marked, and the top rung relative to it."""
    assert "-- peers:" in stdout and "peer:eager" in stdout, stdout
    assert "not checked (peer)" in stdout, stdout
    assert f"ladder fused-adamw {ratio['tokens_per_s_ratio']:.2f}x of eager" in stdout, stdout
    # Where the top rung's time goes against the peer, band by band: each band the median of the
    # cell's processes' breakdowns (every round's report, reports/render/sections/band_tables.h).
    rows = {r["cell"]: r for r in load(d / "summary.json")["rows"]}

    def gemm_median(cell):
        files = rows[cell]["repeats"]["reports"]
        assert len(files) == 2, files
        return statistics.median(load(d / f)["op_breakdown"]["categories_ms"]["gemm"] for f in files)

    assert report["op_breakdown"]["categories_ms"]["gemm"] > 0, report["op_breakdown"]
    assert "where fused-adamw's step time goes against each peer (each band the median of 2 processes'" in stdout, \
        stdout
    gemm = re.search(r"^GEMM +([\d.]+) +([\d.]+) +([+-][\d.]+|0\.00)$", stdout, re.M)
    assert gemm and gemm.group(1) == f"{gemm_median('fused-adamw'):.2f}" and \
        gemm.group(2) == f"{gemm_median('peer-eager'):.2f}", stdout
    assert re.search(r"^fused-adamw against eager: (largest gap|no band slower; closest) ", stdout, re.M), stdout


def eager_in_compare(d):
    """ladder compare: the peer beside the rungs, marked, outside the geomean."""
    text = run(["compare", str(d), str(d)], check_code=0).stdout
    assert "peer:eager" in text and "a PyTorch peer" in text, text
    cmp = json.loads(run(["compare", str(d), str(d), "--format", "json"], check_code=0).stdout)
    names = [row["rung"] for row in cmp["rungs"]]
    assert names == ["fp32", "fused-adamw", "peer:eager"], names
    assert [row["peer"] for row in cmp["rungs"]] == [False, False, True]
    assert cmp["geomean"][1]["rungs"] == 2, cmp["geomean"]
    page = d / "compare.html"
    run(["compare", str(d), str(d), "--html", str(page)], check_code=0)
    html = page.read_text()
    assert "peer:eager" in html and "a PyTorch peer" in html and '<tr class="peer">' in html
    # The breakdown chart has the peer's bars beside the rungs'.
    chart = html[html.index('id="chart-breakdown"'):]
    chart = chart[:chart.index("</svg>")]
    assert "peer:eager · elementwise/norm" in chart, chart[-3000:]


def peers_default_and_bad_values(d):
    """No peers by default on CPU (recorded why); bad --peers values exit 2,
    naming the option, the value and the valid names, and write nothing."""
    run(["run", *TINY, "--rungs", "fp32", "--out", str(d / "default"), "--quiet"], check_code=0)
    summary = validate(d / "default" / "summary.json")
    assert summary["peers"]["names"] == [] and "default on CPU" in summary["peers"]["source"], summary["peers"]
    assert load(d / "default" / "matrix.json")["peers"]["names"] == []
    assert not any(c["role"] == "peer" for c in load(d / "default" / "matrix.json")["cells"])
    for value, part in (("turbo", "'turbo'"), ("eager,jit", "'jit' is not a peer"), ("eager,eager", "named twice"),
                        ("eager,", "'' is not a peer"), ("", "got ''")):
        out = d / "bad"
        p = run(["run", *TINY, "--rungs", "fp32", "--peers", value, "--out", str(out)], check_code=2)
        for want in ("--peers", part, "none", "eager, compile") if "twice" not in part else ("--peers", part):
            assert want in p.stderr, f"{want!r} not in: {p.stderr}"
        assert not out.exists() or not list(out.rglob("*.json")), list(out.rglob("*"))
    # --peers none is explicit: no peer cells.
    run(["run", *TINY, "--rungs", "fp32", "--peers", "none", "--out", str(d / "none"), "--quiet"], check_code=0)
    peers = validate(d / "none" / "summary.json")["peers"]
    assert peers["names"] == [] and peers["source"] == "--peers", peers


def failing_peer_is_recorded(d):
    """A peer whose Python fails is 'failed' with the reason and the run
    carries on (exit 1); a peer that raises in its step says why; a Python
    that is not there is 'skipped' and does not fail the run."""
    fake = d / "fake-python"
    fake.write_text("#!/bin/sh\necho 'fake python: no' >&2\nexit 1\n")
    fake.chmod(0o755)
    out = d / "fails"
    p = run(["run", *TINY, "--rungs", "fp32,flash", "--peers", "eager", "--out", str(out)],
            env={"LADDER_PYTHON": str(fake)}, check_code=1)
    r = rows(out)
    assert r["fp32"]["status"] == "ok" and r["flash"]["status"] == "ok", r
    assert r["peer-eager"]["status"] == "failed", r["peer-eager"]
    assert "exited with code 1 without a report" in r["peer-eager"]["failure"]["reason"], r["peer-eager"]
    assert validate(out / "summary.json")["status"] == "complete"
    assert validate(out / "peer-eager" / "report.json")["peer"]["name"] == "eager"
    assert "the matrix carries on" in p.stderr, p.stderr
    # Its output went to the cell's log, which a failure shows (its tail and its path).
    log = out / "peer-eager" / "output.log"
    assert log.read_text() == "fake python: no\n", log.read_text()
    assert f"[peer:eager #1] its output, the last 20 lines at most of {log}:\n  | fake python: no\n" in p.stderr, \
        p.stderr

    # The real peer.py, failing inside its step (test hook): its own message.
    out = d / "raises"
    run(["run", *TINY, "--rungs", "fp32", "--peers", "eager", "--out", str(out), "--quiet"],
        env={"LADDER_TEST_PEER_FAIL": "eager"}, check_code=1)
    rep = validate(out / "peer-eager" / "report.json")
    assert rep["status"] == "failed" and "LADDER_TEST_PEER_FAIL" in rep["failure"]["message"], rep["failure"]
    assert rep["failure"]["phase"] == "step" and rep["failure"]["exit_code"] == 1, rep["failure"]

    # No Python: skipped, with the reason; the run is still good.
    out = d / "skipped"
    run(["run", *TINY, "--rungs", "fp32", "--peers", "eager", "--out", str(out), "--quiet"],
        env={"LADDER_PYTHON": str(d / "no-such-python")}, check_code=0)
    row = rows(out)["peer-eager"]
    assert row["status"] == "skipped" and "no-such-python" in row["failure"]["reason"], row
    validate(out / "peer-eager" / "report.json")
    validate(out / "summary.json")


def interrupt_and_resume_peer(d):
    """Ctrl-C while the peer runs: exit 130, the rungs' reports kept, the peer
    listed missing; --resume runs only the peer and completes the run."""
    args = [LADDER, "run", *TINY, "--steps", "400", "--rungs", "fp32", "--peers", "eager", "--out", str(d),
            "--quiet"]
    proc = subprocess.Popen(args, start_new_session=True)
    t0 = time.time()
    while not (d / "peer-eager" / "config.json").exists():
        assert proc.poll() is None, f"ladder exited early: {proc.returncode}"
        assert time.time() - t0 < 300, "the peer never started"
        time.sleep(0.05)
    time.sleep(2.0)  # inside peer.py (importing torch, or stepping)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    summary = validate(d / "summary.json")
    assert summary["status"] == "interrupted" and "peer-eager" in summary["missing"], summary
    assert not (d / "peer-eager" / "report.json").exists() and not (d / "peer-eager" / "peer_partial.json").exists()
    first = load(d / "fp32" / "report.json")
    run(["run", "--resume", str(d), "--quiet"], check_code=0)
    assert load(d / "fp32" / "report.json")["started_at"] == first["started_at"], "fp32 was re-run"
    r = rows(d)
    assert r["peer-eager"]["status"] == "ok", r["peer-eager"]
    assert validate(d / "summary.json")["status"] == "complete"
    assert not list(d.rglob("*.tmp.*")), "a half-written file was left behind"


def compile_peer_on_cpu(d):
    """--peers compile on the CPU: torch.compile's first step compiles for about
    45 s on 2 cores (cold inductor cache; the whole case about a minute), so this
    runs only with LADDER_SLOW_TESTS=1 (else skipped, 77). With both peers the
    terminal shows nothing of theirs but progress lines."""
    if os.environ.get("LADDER_SLOW_TESTS") != "1":
        print("compile_peer_on_cpu: skipped (set LADDER_SLOW_TESTS=1; torch.compile takes about a minute here)")
        sys.exit(77)
    p = run(["run", *TINY, "--rungs", "fp32,fused-adamw", "--peers", "eager,compile", "--out", str(d),
             "--rung-timeout", "1800"], check_code=0)
    assert_clean_run_output(p, d, ["eager", "compile"])
    rep = validate(d / "peer-compile" / "report.json")
    assert rep["peer"]["name"] == "compile" and rep["switches"]["fused"]["effective"], rep["switches"]["fused"]
    eager = load(d / "peer-eager" / "report.json")
    # Same model, data and init: eager and compiled losses agree closely (bf16).
    for a, b in zip(eager["warmup_steps"]["loss"] + eager["steps"]["loss"],
                    rep["warmup_steps"]["loss"] + rep["steps"]["loss"]):
        assert abs(a - b) / abs(a) < 1e-2, (a, b)
    assert rows(d)["peer-compile"]["ladder_vs_peer"]["tokens_per_s_ratio"] > 0


def cuda_device_without_a_gpu(d):
    """The peer's CUDA device as ladder names it ("cuda", "cuda:1") becomes an
    index for torch.cuda.set_device, which torch 2.11 requires ("cuda" alone
    raised ValueError, so both peers failed on every GPU, 2026-11-27). No GPU
    needed: torch's own set_device checks its argument, and only the driver
    call it makes then (torch._C._cuda_setDevice) is replaced by a recorder."""
    import importlib.util
    import torch
    spec = importlib.util.spec_from_file_location("peer", ROOT / "scripts" / "peer.py")
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    calls = []
    real = torch._C._cuda_setDevice
    torch._C._cuda_setDevice = calls.append
    try:
        for name, index in (("cuda", 0), ("cuda:0", 0), ("cuda:1", 1), ("cuda:3", 3)):
            calls.clear()
            got = peer.use_cuda_device(torch, torch.device(name))
            assert calls == [index] and got == torch.device("cuda", index), (name, calls, got)
    finally:
        torch._C._cuda_setDevice = real


def tf32_settings_without_a_gpu(d):
    """scripts/peer.py's tf32 as ladder sets it (variants/config/precision.cpp), each branch reached without a GPU:
    on CUDA the per-backend flags and the probe's verdict both ways (the probe matmul stubbed, the one call
    that needs the device); on a CPU the real probe, which leaves oneDNN's precision at 'none' where no
    mode takes effect, or names the mode that did."""
    import importlib.util
    import torch
    spec = importlib.util.spec_from_file_location("peer", ROOT / "scripts" / "peer.py")
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    real = peer.matmul_error
    try:
        for err, effective in ((1e-3, True), (1e-7, False)):
            peer.matmul_error = lambda torch_, device, err=err: err
            got = peer.set_tf32(torch, torch.device("cuda"))
            assert torch.backends.cuda.matmul.fp32_precision == "tf32", torch.backends.cuda.matmul.fp32_precision
            assert torch.backends.cudnn.conv.fp32_precision == "tf32", torch.backends.cudnn.conv.fp32_precision
            assert got["enabled"] and got["effective"] == effective, got
            assert ("TF32 tensor cores" in got["reason"]) == effective, got
    finally:
        peer.matmul_error = real
        torch.backends.cuda.matmul.fp32_precision = "ieee"
    got = peer.set_cpu_fp32_math(torch)
    mode = torch.backends.mkldnn.matmul.fp32_precision
    if got["effective"]:
        assert f"'{mode}'" in got["mechanism"], (mode, got)
    else:
        assert mode == "none" and "no reduced-precision fp32 matmul mode took effect" in got["reason"], (mode, got)
    torch.backends.mkldnn.matmul.fp32_precision = "none"


def each_peer_declared_once(d):
    """A peer is one declaration (bench/run/peers.cpp, `ladder peers --json`) and one measuring function
    in scripts/peer.py (@peer): the two lists name the same peers, and peer.py names no peer
    elsewhere; a name only one side has is refused before anything runs."""
    import importlib.util
    import re
    listed = json.loads(subprocess.run([LADDER, "peers", "--json"], capture_output=True, text=True,
                                       check=True).stdout)
    declared = [p["name"] for p in listed["peers"]]
    spec = importlib.util.spec_from_file_location("peer", ROOT / "scripts" / "peer.py")
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    assert sorted(peer.MEASURING) == sorted(declared), (peer.MEASURING, declared)
    source = (ROOT / "scripts" / "peer.py").read_text()
    for name in declared:
        uses = [m.start() for m in re.finditer(rf'"{re.escape(name)}"', source)]
        assert len(uses) == 1 and source[uses[0] - 6:uses[0]] == "@peer(", (name, len(uses))
    # A declared name without a function, and an undeclared one: exit 2 before any report.
    cfg = d / "config.json"
    cfg.write_text(json.dumps({"rung": "peer-x", "device": "cpu", "model": {}, "switches": {}, "train": {},
                               "batch": 1, "seq": 1, "steps": 1, "warmup": 1, "seed": 1, "threads": 1,
                               "fixed_batch": False}))
    for name, said in (("nonesuch", "expected one of: " + ", ".join(declared)),):
        p = subprocess.run([sys.executable, str(ROOT / "scripts" / "peer.py"), "--peer", name, "--ladder", LADDER,
                            "--config", str(cfg), "--out", str(d / "out.json")], capture_output=True, text=True)
        assert p.returncode == 2 and said in p.stderr and not (d / "out.json").exists(), p.stderr
    peer.MEASURING.pop("eager")
    assert "has no measuring function" in peer.read_declaration(
        type("Args", (), {"ladder": LADDER, "peer": "eager"})(), "cpu")


CASES = {f.__name__: f for f in (each_peer_declared_once, tf32_settings_without_a_gpu, eager_peer_in_the_run, peers_default_and_bad_values, failing_peer_is_recorded,
                                  interrupt_and_resume_peer, compile_peer_on_cpu, cuda_device_without_a_gpu)}

if __name__ == "__main__":
    run_case(CASES, sys.argv[2])
