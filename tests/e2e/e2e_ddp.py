#!/usr/bin/env python3
"""tests/e2e/e2e_ddp.py: the ddp rung on CPU, Gloo over loopback, tiny preset.

usage: e2e_ddp.py LADDER_BIN CASE     (CASE: one of the functions below)

Ranks are started the way torchrun starts them (RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), by `ladder run
--nproc-per-node`, or by the real torchrun from the venv.
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import torch
import torch.jit._pickle  # noqa: F401 (restore_type_tag, referenced by LibTorch's pickle_save)

from e2e_common import ROOT, load, run_case, validate

LADDER = sys.argv[1]
TINY = ["--device", "cpu", "--preset", "tiny", "--threads", "1", "--no-op-count", "--quiet"]
LAUNCHER_VARS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                 "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"]


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env.update(extra or {})
    return env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_ranks(args, world, extra_env=None, timeout=300):
    """Runs `ladder ARGS` as `world` ranks with torchrun's variables; returns the processes' results."""
    port = str(free_port())
    procs = []
    for r in range(world):
        env = clean_env({"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(world),
                         "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
                         **(extra_env or {})})
        procs.append(subprocess.Popen([LADDER, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        results.append((p.returncode, out, err))
    for r, (code, out, err) in enumerate(results):
        assert code == 0, f"rank {r} exited {code}\n{out}\n{err}"
    return results


def run(args, env=None, check_code=None, timeout=600):
    p = subprocess.run([LADDER, *args], capture_output=True, text=True, env=clean_env(env), timeout=timeout)
    if check_code is not None:
        assert p.returncode == check_code, f"exit {p.returncode} != {check_code}\n{p.stdout}\n{p.stderr}"
    return p



def load_weights(path):
    with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
        return torch.load(path, map_location="cpu", weights_only=True)


def assert_same_weights(a_path, b_path, atol=2e-6, rtol=1e-4):
    a, b = load_weights(a_path), load_weights(b_path)
    assert list(a.keys()) == list(b.keys())
    worst = 0.0
    for k in a:
        diff = (a[k] - b[k]).abs().max().item()
        worst = max(worst, diff)
        assert torch.allclose(a[k], b[k], atol=atol, rtol=rtol), f"{k}: max |diff| {diff}"
    print(f"max |param diff| over {len(a)} tensors: {worst:.3g}")
    return worst


def equivalence(d):
    """2 ranks at batch B end with the same parameters after 3 steps as 1 rank at batch 2B."""
    common = [*TINY, "--steps", "3", "--warmup", "0", "--seq", "64"]
    spawn_ranks(["measure", "--rung", "fp32+ddp", *common, "--batch", "4", "--out", str(d / "ddp"),
                 "--save-final", str(d / "ddp.pt")], world=2)
    run(["measure", "--rung", "fp32", *common, "--batch", "8", "--out", str(d / "one"),
         "--save-final", str(d / "one.pt")], check_code=0)
    assert_same_weights(d / "ddp.pt", d / "one.pt")
    a = validate(d / "ddp" / "fp32+ddp" / "report.json")
    b = validate(d / "one" / "fp32" / "report.json")
    assert a["world_size"] == 2 and b["world_size"] == 1
    # The reported loss is the mean over ranks: the loss of the 2B batch.
    for la, lb in zip(a["steps"]["loss"], b["steps"]["loss"]):
        assert abs(la - lb) <= 1e-5 * abs(lb), (la, lb)
    assert a["throughput"]["tokens_per_step"] * 2 == b["throughput"]["tokens_per_step"]
    assert len(a["ddp"]["per_rank"]) == 2 and [r["rank"] for r in a["ddp"]["per_rank"]] == [0, 1]
    assert not (d / "ddp" / "fp32+ddp.rank1").exists()


def accumulation(d):
    """DDP with accumulation (2 ranks x 2 micro-steps) equals one process with 4 micro-steps."""
    common = [*TINY, "--steps", "3", "--warmup", "0", "--batch", "4", "--seq", "64", "--total-batch", "1024"]
    spawn_ranks(["measure", "--rung", "fp32+grad-accum+ddp", *common, "--out", str(d / "ddp"),
                 "--save-final", str(d / "ddp.pt")], world=2)
    run(["measure", "--rung", "fp32+grad-accum", *common, "--out", str(d / "one"),
         "--save-final", str(d / "one.pt")], check_code=0)
    a = load(d / "ddp" / "fp32+grad-accum+ddp" / "report.json")
    b = load(d / "one" / "fp32+grad-accum" / "report.json")
    assert a["throughput"]["micro_steps"] == 2 and b["throughput"]["micro_steps"] == 4
    assert_same_weights(d / "ddp.pt", d / "one.pt")


def zero1(d):
    """ZeRO-1 is the ddp rung's maths: 2 ranks with the AdamW state sharded end
    with the same parameters, losses and grad norms as 2 ranks without, with
    the per-parameter and the fused AdamW; each rank keeps about half the
    state, and the report's estimate divides it by the ranks. At GPT-2's
    width (C 768, 12 heads; the tiny preset's 2 layers and V 1000)."""
    # One way to run each GEMM in both runs: the fused rung's CPU planner picks by timing, and two runs (or
    # two ranks) that pick oneDNN's matmul at different sites differ by its rounding (2e-6 in wte here).
    common = [*TINY, "--n-embd", "768", "--n-head", "12", "--steps", "3", "--warmup", "0", "--batch", "4",
              "--seq", "64", "--gemm-plan", "pytorch"]
    for base in ("fp32", "fused-adamw"):
        for rung in (f"{base}+ddp", f"{base}+ddp+zero1"):
            spawn_ranks(["measure", "--rung", rung, *common, "--out", str(d / rung),
                         "--save-final", str(d / f"{rung}.pt")], world=2)
        worst = assert_same_weights(d / f"{base}+ddp.pt", d / f"{base}+ddp+zero1.pt", atol=1e-7, rtol=1e-6)
        a = validate(d / f"{base}+ddp" / f"{base}+ddp" / "report.json")
        z = validate(d / f"{base}+ddp+zero1" / f"{base}+ddp+zero1" / "report.json")
        print(f"{base}: losses {a['steps']['loss']} / {z['steps']['loss']}, max |weight diff| {worst:.3g}")
        for key in ("loss", "grad_norm"):
            for la, lz in zip(a["steps"][key], z["steps"][key]):
                assert abs(la - lz) <= 1e-6 * abs(la), (base, key, la, lz)
        sw = z["switches"]["zero1"]
        assert sw["effective"] is True, sw
        sharding = sw["sharding"]
        assert sharding["ranks"] == 2 and [s["rank"] for s in sharding["shards"]] == [0, 1], sharding
        total = sharding["parameter_bytes_broadcast_per_step"]
        assert sum(s["parameter_bytes"] for s in sharding["shards"]) == total == 4 * z["model"]["n_params"], sharding
        mine = sharding["optimizer_state_bytes_this_rank"]
        assert mine == 2 * sharding["shards"][0]["parameter_bytes"], sharding
        half = (z["model"]["n_params"] + 1) // 2
        assert [s["elements"] for s in sharding["shards"]] == [half, z["model"]["n_params"] - half], sharding
        assert z["memory"]["estimate"]["optimizer_shards"] == 2 and a["memory"]["estimate"]["optimizer_shards"] == 1
        assert 2 * z["memory"]["estimate"]["optimizer_state_bytes"] == a["memory"]["estimate"]["optimizer_state_bytes"]
        if base == "fused-adamw":
            assert z["switches"]["fused-adamw"]["effective"] is True, z["switches"]["fused-adamw"]
        check_traffic(a, z)


def check_traffic(a, z):
    """What each rank sends per step, exactly (2 ranks): under ddp the gradients
    once (a ring all-reduce sends 2(R-1)/R of them) and the report's 4-byte loss;
    under zero1 also its own range of the parameters (ceil(N/2) of N), which its
    broadcast sends; every step gathers all the ranges."""
    n = a["model"]["n_params"]
    half = (n + 1) // 2
    for report, sent in ((a, 4 * n + 4), (z, 4 * n + 4 + 4 * half)):
        for pr in report["ddp"]["per_rank"]:
            assert pr["sent_bytes_ring"] == [sent] * len(pr["dt_ms"]), (report["rung"], pr["rank"], pr["sent_bytes_ring"], sent)
    assert "gather_ms" not in a["steps"] and "gather" not in a["ddp"]["traffic"], a["ddp"]["traffic"]
    assert z["steps"]["gather_bytes"] == [4 * 2 * half] * len(z["steps"]["dt_ms"]), z["steps"]["gather_bytes"]
    assert all(ms > 0 for pr in z["ddp"]["per_rank"] for ms in pr["gather_ms"]), z["ddp"]["per_rank"]
    print(f"sent per rank and step: ddp {4 * n + 4} B, ddp+zero1 {4 * n + 4 + 4 * half} B "
          f"({(4 * n + 4 + 4 * half) / (4 * n + 4):.3f}x); gather {statistics.median(z['steps']['gather_ms']):.2f} ms")


def overlap(d):
    """Bucket 0's all-reduce is launched while backward is still producing gradients."""
    spawn_ranks(["measure", "--rung", "fp32+ddp", *TINY, "--steps", "3", "--warmup", "1",
                 "--bucket-cap-mb", "0.05", "--out", str(d)], world=2)
    r = load(d / "fp32+ddp" / "report.json")
    sync = r["switches"]["ddp"]["grad_sync"]
    assert len(sync["buckets"]) >= 4, sync["buckets"]
    order = sync["first_sync_event_order"]
    launch0 = order.index("launch bucket 0")
    ready_after = [e for e in order[launch0 + 1:] if e.startswith("ready ")]
    # Gradients of later buckets were still being computed after the launch.
    assert ready_after, order
    assert any("(bucket 0)" not in e for e in ready_after)
    launches = [e for e in order if e.startswith("launch bucket")]
    assert launches == [f"launch bucket {i}" for i in range(len(sync["buckets"]))], launches
    assert order[-1].startswith("backward returned")
    # Every launch precedes the end of backward.
    assert max(order.index(e) for e in launches) < len(order) - 1
    for rank in r["ddp"]["per_rank"]:
        assert len(rank["allreduce_overlap_pct"]) == 3
        assert all(0 <= x <= 100 for x in rank["allreduce_overlap_pct"])


def torchrun_spawn(d):
    """The real torchrun --no-python starts 2 ranks of the same binary."""
    torchrun = ROOT / ".venv" / "bin" / "torchrun"
    assert torchrun.exists(), f"{torchrun} missing: run scripts/bootstrap"
    p = subprocess.run([str(torchrun), "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
                        "--master-port", str(free_port()), "--no-python", LADDER, "measure", "--rung", "ddp",
                        *TINY, "--steps", "2", "--warmup", "1", "--out", str(d)],
                       capture_output=True, text=True, env=clean_env(), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    # torchrun's agent serves the store; rank 0 joins it instead of binding the port again.
    assert "failed to bind" not in p.stderr, p.stderr
    r = load(d / "ddp" / "report.json")
    assert r["status"] == "ok" and r["world_size"] == 2
    assert r["ddp"]["launcher"] == "torchrun" and r["ddp"]["backend"] == "gloo"
    assert [x["rank"] for x in r["ddp"]["per_rank"]] == [0, 1]


def fault_kill(d):
    """Killing rank 1 mid-run ends rank 0 with an error naming rank 1; the matrix goes on."""
    t0 = time.time()
    p = run(["run", "--device", "cpu", "--preset", "tiny", "--threads", "1", "--steps", "50", "--warmup", "1", "--rungs", "ddp,tf32",
             "--nproc-per-node", "2", "--ddp-timeout", "10", "--out", str(d), "--quiet"],
            env={"LADDER_TEST_FAULT": "kill:1:3"}, check_code=1)
    elapsed = time.time() - t0
    rows = {r["cell"]: r for r in load(d / "summary.json")["rows"]}
    assert rows["ddp"]["status"] == "failed", rows["ddp"]
    assert rows["tf32"]["status"] == "ok", rows["tf32"]  # the matrix carried on
    f = validate(d / "ddp" / "report.json")["failure"]
    assert f["first_failed_rank"] == 1, f
    assert "rank 1 did not answer" in f["message"], f["message"]
    assert "killed by signal 9" in f["ranks"][1]["outcome"], f["ranks"]
    # Rank 0 noticed at once (the connection closed), then waited for the census.
    assert f["ranks"][0]["seconds"] - f["ranks"][1]["seconds"] < 10 + 5, f["ranks"]
    print(f"whole matrix {elapsed:.1f} s; rank 0: {f['message'][:300]}")


def fault_hang(d):
    """A hung rank (SIGSTOP) makes rank 0 fail within the steady-state timeout, naming it."""
    t0 = time.time()
    run(["run", "--device", "cpu", "--preset", "tiny", "--threads", "1", "--steps", "50", "--warmup", "1", "--rungs", "ddp",
         "--nproc-per-node", "2", "--ddp-timeout", "4", "--out", str(d), "--quiet"],
        env={"LADDER_TEST_FAULT": "hang:1:3"}, check_code=1)
    f = load(d / "ddp" / "report.json")["failure"]
    assert "rank 1 did not answer" in f["message"], f["message"]
    assert "exited with code 1" in f["ranks"][0]["outcome"], f["ranks"]
    assert "stopped after" in f["ranks"][1]["outcome"], f["ranks"]  # the runner ended the hung rank
    # Rank 0 gave up within the 4 s timeout plus the 2 s census of its last step,
    # not when the runner stopped rank 1.
    assert f["ranks"][0]["seconds"] < f["ranks"][1]["seconds"] - 10, f["ranks"]
    print(f"{time.time() - t0:.1f} s; rank 0: {f['message'][:300]}")


def bad_inputs(d):
    """Each bad input exits 2 with a message that names it."""
    def bad(args, env, *parts, timeout=120):
        t0 = time.time()
        p = run(args, env=env, timeout=timeout)
        assert p.returncode == 2, f"{args} {env}: exit {p.returncode}\n{p.stderr}"
        for part in parts:
            assert part in p.stderr, f"{part!r} not in {p.stderr!r}"
        return time.time() - t0
    bad(["run", "--device", "cpu", "--rungs", "ddp", "--nproc-per-node", "0", "--out", str(d / "x")], None,
        "--nproc-per-node: got 0, expected 1..256")
    bad(["measure", "--rung", "ddp", *TINY, "--out", str(d / "y")],
        {"RANK": "0", "WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "3",
         "MASTER_ADDR": "127.0.0.1"},
        "WORLD_SIZE=2 disagrees with OMPI_COMM_WORLD_SIZE=3")
    bad(["measure", "--rung", "fp32", *TINY, "--out", str(d / "y")],
        {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"},
        "only the ddp rung runs on several ranks")
    # Nobody listens on this port: rank 1 gives up after the connect timeout.
    secs = bad(["measure", "--rung", "ddp", *TINY, "--dist-connect-timeout", "2", "--out", str(d / "z")],
               {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(free_port())},
               "MASTER_ADDR=127.0.0.1", "--dist-connect-timeout 2 s")
    assert secs < 60, secs
    assert not (d / "z" / "ddp" / "report.json").exists()
    for value, part in [("x", "LADDER_TEST_SLOW_RANK: got 'x', expected RANK:P"),
                        ("1:2000", "LADDER_TEST_SLOW_RANK: got '1:2000', expected RANK:P"),
                        ("5:20", "LADDER_TEST_SLOW_RANK=5:20: no rank 5 in a job of 2 rank(s); expected 0 to 1")]:
        bad(["run", "--rungs", "ddp", "--device", "cpu", "--preset", "tiny", "--nproc-per-node", "2", "--out",
             str(d / "s")],
            {"LADDER_TEST_SLOW_RANK": value}, part)


def slow_rank(d):
    """Three ranks, the built-in launcher, rank 2's compute slowed 50 % inside its forward phase: the report names
    rank 2 and its phase, keeps every rank's phases and bands, and the run table prints its `ranks:` line. (The rate
    at 20 %, and of quiet runs naming none, is tests/e2e/slow_rank_acceptance.py's: minutes, not a test.)"""
    p = run(["run", "--rungs", "ddp", "--device", "cpu", "--preset", "tiny", "--threads", "1", "--repeat", "1",
             "--steps", "20", "--nproc-per-node", "3", "--total-batch", "768", "--out", str(d)],
            env={"LADDER_TEST_SLOW_RANK": "2:50"})
    assert p.returncode == 0, p.stdout + p.stderr
    r = validate(d / "ddp" / "report.json")
    assert r["timing"]["mode"] == "end_to_end" and set(r["steps"]["phase_ms"]) == {"data", "forward", "backward",
                                                                                    "optimizer"}
    ddp = r["ddp"]
    assert ddp["test_slow_rank"] == {"rank": 2, "pct": 50}, ddp["test_slow_rank"]
    v = ddp["slow_rank"]
    print(f"slow rank: {v['rank']} x{v['ratio']:.3f} [{v['lo']:.3f}, {v['hi']:.3f}] p {v['p_value']:.2g}, "
          f"+{v['extra_ms']:.2f} ms ({v['phase']}), others wait {v['others_wait_ms']:.2f} ms")
    assert v["resolved"] and v["rank"] == 2 and v["phase"] == "forward" and v["basis"] == "cpu_time", v
    assert v["steps"] == 20 and v["ranks"] == 3 and v["ratio"] > 1.2 and v["others_wait_ms"] > v["rank_wait_ms"], v
    for rk in ddp["per_rank"]:
        for key in ("phases_ms", "cpu_phases_ms"):
            assert all(len(rk[key][ph]) == 20 for ph in ("data", "forward", "backward", "optimizer", "communication"))
        assert rk["bands_ms"]["gemm"] > 0, rk["bands_ms"]
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("ranks:"))
    assert line.startswith("ranks: ddp: rank 2 slowest, +") and "per step (forward); the others wait" in line, line
    summary = validate(d / "summary.json")
    row = next(x for x in summary["rows"] if x["cell"] == "ddp")
    assert [s["rank"] for s in row["slow_rank"]] == [2], row["slow_rank"]
    # `ladder bands --ranks`: the phases table marks rank 2, the bands table has a column per rank.
    b = run(["bands", str(d), "--ranks"])
    assert b.returncode == 0, b.stdout + b.stderr
    assert "rank 2 (slowest)" in b.stdout and "ddp: each rank's op breakdown" in b.stdout, b.stdout
    assert next(ln for ln in b.stdout.splitlines() if ln.startswith("ranks:")) == line, b.stdout
    j = json.loads(run(["bands", str(d), "--ranks", "--format", "json"]).stdout)
    assert [r["rank"] for r in j["tables"][0]["rows"]] == [0, 1, 2], j["tables"][0]
    # The run page draws each rank's phases as a stacked bar, the slowest marked.
    page = d / "page.html"
    assert run(["export", str(d), "--format", "html", "--out", str(page)]).returncode == 0
    html = page.read_text()
    assert 'id="chart-ranks-ddp"' in html and "rank 2 (slowest)" in html
    # --ranks compares ranks, --peer peers: not both.
    n = run(["bands", str(d), "--ranks", "--peer", "eager"])
    assert n.returncode == 2 and "--peer and --ranks" in n.stderr, n.stderr


CASES = {f.__name__: f for f in [equivalence, accumulation, zero1, overlap, torchrun_spawn, fault_kill, fault_hang,
                                 bad_inputs, slow_rank]}

if __name__ == "__main__":
    run_case(CASES, sys.argv[2], prefix="ladder_ddp_")
