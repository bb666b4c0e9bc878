#!/usr/bin/env python3
"""tests/e2e/e2e_launch.py: the ddp rung started by real launchers, across two
(namespaced) hosts, and what a lost host or a cut link does to it.

usage: e2e_launch.py LADDER_BIN SHARED_DIR CASE     (CASE: one of the functions below)
Exit 0 when the case passed, 77 (printing "SKIP: <reason>") when a tool it
needs is missing and cannot be had here (scripts/bootstrap installs them).

The ddp rung on CPU (Gloo, tiny preset, 2 ranks, one thread each):
- builtin_reference (the fixture of the others, in SHARED_DIR/ref): the
  built-in launcher, `ladder run --nproc-per-node 2`, with per-rank traces;
  its ddp report passes parity against one process. Then the same cell's
  config run again with --save-final, for the weights after the steps.
- torchrun / mpirun / srun: the same work under each real launcher (srun on a
  one-host Slurm cluster this case starts and stops itself, inside an salloc
  allocation as on a cluster). Each report must equal the built-in's: world
  size, the config, the losses and gradient norms step by step, rank 0's
  report only, per-rank traces, parity with one process, and the weights.
- twohost_torchrun: one rank on each of two hosts (network namespaces joined
  by a veth pair), torchrun on each, MASTER_ADDR the first host's address,
  Gloo bound by GLOO_SOCKET_IFNAME: the same report and weights as one host.
- twohost_mpirun: the same with one mpirun on the first host starting both
  ranks (-H with both addresses; an rsh agent that enters the other host's
  namespace stands in for ssh).
- twohost_link_cut / twohost_host_lost: the link is cut (ip link set down),
  or every process of the second host is killed, mid-run: each surviving
  rank fails within the documented timeouts with a message naming the rank
  and the cause, rank 0's report records it, and no process is left.
- ladder_run_link_cut: `ladder run` with the ddp rung and a rung after it,
  its loopback cut mid-run: the ddp rung is recorded as failed, naming the
  cause, the run goes on, and the summary and every completed report are
  intact.
- twohost_bandwidth: scripts/net-sweep at one setting (1 Gbit/s, 1 ms), ddp
  and ddp+zero1: its table has the all-reduce figures, per-bucket times,
  zero1's gather and the bytes sent (ring model and measured) of both ranks.
"""
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from e2e_common import ROOT, load, validate
from e2e_ddp import assert_same_weights, clean_env
from launch_cluster import (SKIP_CODE, SLURM_TOOLS, SlurmCluster, TwoHosts, can_make_namespaces, die_with_parent,
                            free_port, missing_tools, reap_stale_namespaces, wait_for)

LADDER = sys.argv[1]
SHARED = pathlib.Path(sys.argv[2])
REF = SHARED / "ref"
TORCHRUN = ROOT / ".venv" / "bin" / "torchrun"
# The work every launcher runs: 1 warm-up step and 3 measured (0..3), traces of steps 2 and 3.
WORK = ["--device", "cpu", "--preset", "tiny", "--steps", "3", "--warmup", "1", "--threads", "1",
        "--profile", "1,1,2"]
TRACE_STEP = 3
MEASURE = ["measure", "--rung", "ddp", *WORK]
# The fault cases: many steps (the fault comes first), short collective timeouts.
FAULT_TIMEOUT_S = 4
FAULT_WORK = ["--device", "cpu", "--preset", "tiny", "--steps", "400", "--warmup", "1", "--threads", "1",
              "--ddp-timeout", str(FAULT_TIMEOUT_S), "--ddp-first-timeout", "60"]
# After a collective's timeout the census waits up to min(5, timeout/2) s,
# plus 2 s when the store does not answer (variants/ddp/process_group.cpp).
FAULT_BOUND_S = FAULT_TIMEOUT_S + min(5, FAULT_TIMEOUT_S / 2) + 2
SLACK_S = 4  # scheduling on a loaded 2-core machine (ctest -j 2)


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP_CODE)


def require(*tools, why):
    missing = missing_tools(*tools)
    if missing:
        skip(f"{', '.join(missing)} not installed ({why}; scripts/bootstrap apt-installs it)")


def require_namespaces():
    why = can_make_namespaces()
    if why:
        skip(why)


def require_torchrun():
    assert TORCHRUN.exists(), f"{TORCHRUN} missing: run scripts/bootstrap"


def show(cmd):
    return " ".join(str(c) for c in cmd)


def run(cmd, env=None, timeout=300, check=True):
    """Runs cmd (printed first, as variants/README.md shows it); asserts exit 0 when check."""
    print(f"$ {show(cmd)}", flush=True)
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env or clean_env(),
                       timeout=timeout)
    if check:
        assert p.returncode == 0, f"{show(cmd)}: exit {p.returncode}\n{p.stdout[-4000:]}\n{p.stderr[-6000:]}"
    return p


# ---- what every launcher's report must share with the built-in's ----------------


def check_traces(report, run_dir):
    """One valid Chrome trace per rank, named by rank, with its rank and the bucket's all-reduce range."""
    trace_dir = pathlib.Path(run_dir) / "ddp" / "traces"
    names = sorted(p.name for p in trace_dir.iterdir())
    assert names == [f"rank{r}_step{TRACE_STEP}.json" for r in range(2)], names
    for r in range(2):
        trace = load(trace_dir / f"rank{r}_step{TRACE_STEP}.json")
        info = trace["distributedInfo"]
        assert (info["rank"], info["world_size"], info["backend"]) == (r, 2, "gloo"), info
        annotations = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"}
        assert {"all-reduce bucket 0", "gloo:all_reduce", "backward"} <= annotations, sorted(annotations)[:40]
    (t,) = report["profile"]["traces"]
    assert pathlib.Path(t["path"]).name == f"rank0_step{TRACE_STEP}.json", t


def check_like_builtin(run_dir, launcher, weights, local_ranks=(0, 1), hosts=None):
    """run_dir's ddp report (rank 0's) against the built-in launcher's (REF)."""
    run_dir = pathlib.Path(run_dir)
    ref = load(REF / "builtin" / "ddp" / "report.json")
    r = validate(run_dir / "ddp" / "report.json")
    # Rank 0 wrote the only report; the other rank wrote its trace only.
    assert sorted(p.name for p in run_dir.iterdir()) == ["ddp"], sorted(run_dir.iterdir())
    assert sorted(p.name for p in (run_dir / "ddp").iterdir()) == ["report.json", "traces"]
    assert r["status"] == "ok", r.get("failure")
    assert r["world_size"] == ref["world_size"] == 2 and r["ddp"]["world_size"] == 2
    assert r["ddp"]["launcher"] == launcher, r["ddp"]["launcher"]
    assert r["ddp"]["backend"] == ref["ddp"]["backend"] == "gloo"
    assert r["config"] == ref["config"], {k: (v, ref["config"].get(k)) for k, v in r["config"].items()
                                          if v != ref["config"].get(k)}
    per_rank = r["ddp"]["per_rank"]
    assert [x["rank"] for x in per_rank] == [0, 1], per_rank
    assert tuple(x["local_rank"] for x in per_rank) == tuple(local_ranks), per_rank
    if hosts:
        assert tuple(x["host"] for x in per_rank) == tuple(hosts), [x["host"] for x in per_rank]
    assert r["throughput"]["tokens_per_step"] == ref["throughput"]["tokens_per_step"]
    # The same numbers as the built-in launcher's run, step by step.
    worst = 0.0
    for q in ("loss", "grad_norm"):
        for a, b in zip(r["steps"][q], ref["steps"][q], strict=True):
            worst = max(worst, abs(a - b) / abs(b))
    assert worst <= 1e-6, f"loss/grad norm differ from the built-in launcher's by {worst:.3g}"
    # Parity as the built-in launcher's run checked it: the losses of one process
    # reading the same rows (the parity reference), within the rung's tolerance.
    parity = ref["parity"]
    assert parity["status"] == "pass", parity
    ref_losses = parity["reference_losses"][-len(r["steps"]["loss"]):]
    parity_diff = max(abs(a - b) / abs(b) for a, b in zip(r["steps"]["loss"], ref_losses))
    assert parity_diff <= parity["rtol"], (parity_diff, parity["rtol"])
    check_traces(r, run_dir)
    w = assert_same_weights(weights, REF / "weights.pt")
    print(f"{launcher}: world size 2, config, losses and grad norms equal to the built-in launcher's "
          f"(max rel diff {worst:.2g}); parity with one process {parity_diff:.2g} <= {parity['rtol']}; "
          f"traces of both ranks; weights max |diff| {w:.2g}")
    return r


# ---- the cases ---------------------------------------------------------------------


def builtin_reference(d):
    """The built-in launcher's run (ladder run --nproc-per-node 2), and its cell's weights after the steps."""
    shutil.rmtree(REF, ignore_errors=True)
    REF.mkdir(parents=True)
    run([LADDER, "run", "--rungs", "ddp", "--nproc-per-node", "2", *WORK, "--out", REF / "builtin", "--quiet"])
    rows = {row["cell"]: row for row in load(REF / "builtin" / "summary.json")["rows"]}
    assert rows["ddp"]["status"] == "ok", rows["ddp"]
    ref = validate(REF / "builtin" / "ddp" / "report.json")
    assert ref["parity"]["status"] == "pass", ref["parity"]
    assert ref["ddp"]["launcher"] == "torchrun" and ref["world_size"] == 2  # ladder run sets torchrun's variables
    check_traces(ref, REF / "builtin")
    # The same cell again, as ladder run's own ranks run it, saving the weights.
    port = str(free_port())
    procs = []
    for r in range(2):
        env = clean_env({"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                         "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
        procs.append(subprocess.Popen([LADDER, "measure", "--config", str(REF / "builtin" / "ddp" / "config.json"),
                                       "--report", str(REF / "weights-run" / "report.json"), "--save-final",
                                       str(REF / "weights.pt"), "--quiet"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for r, p in enumerate(procs):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, f"rank {r}: exit {p.returncode}\n{out}\n{err}"
    again = load(REF / "weights-run" / "report.json")
    assert again["steps"]["loss"] == ref["steps"]["loss"], (again["steps"]["loss"], ref["steps"]["loss"])


def torchrun(d):
    """torchrun --no-python starts the 2 ranks: the built-in launcher's report."""
    require_torchrun()
    run([TORCHRUN, "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", free_port(),
         "--no-python", LADDER, *MEASURE, "--out", d / "run", "--save-final", d / "w.pt", "--quiet"])
    check_like_builtin(d / "run", "torchrun", d / "w.pt")


def mpirun(d):
    """Open MPI's mpirun starts the 2 ranks (OMPI_COMM_WORLD_*): the built-in launcher's report."""
    require("mpirun", why="Open MPI, Debian's openmpi-bin")
    run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "MASTER_ADDR=127.0.0.1",
         "-x", f"MASTER_PORT={free_port()}", LADDER, *MEASURE, "--out", d / "run", "--save-final", d / "w.pt",
         "--quiet"], timeout=300)
    check_like_builtin(d / "run", "openmpi", d / "w.pt")


def srun(d):
    """srun starts the 2 ranks (SLURM_PROCID) on a one-host Slurm cluster started and stopped here."""
    require(*SLURM_TOOLS, "salloc", why="Slurm and munge, Debian's slurmctld, slurmd, slurm-client and munge")
    if os.geteuid() != 0:
        skip("the test's own Slurm cluster runs its daemons as root (SlurmUser=root); run as root")
    cluster = SlurmCluster(d / "slurm")
    try:
        socket.getaddrinfo(cluster.host, None)
    except OSError as e:
        skip(f"this host's name {cluster.host!r} does not resolve ({e}): a Slurm job names its rendezvous "
             f"by the first node's name")
    with cluster:
        t0 = time.time()
        # As on a cluster: inside an allocation, the first node's name is the rendezvous.
        job = (f'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) '
               f'MASTER_PORT={free_port()}; '
               f'srun --ntasks 2 {LADDER} {show(MEASURE)} --out {d / "run"} --save-final {d / "w.pt"} --quiet')
        env = {**clean_env(), "SLURM_CONF": str(cluster.conf)}
        env = {k: v for k, v in env.items() if k == "SLURM_CONF" or not k.startswith(("SLURM_", "SALLOC_", "SRUN_"))}
        run(["salloc", "--ntasks", "2", "--time", "5", "sh", "-c", job], env=env, timeout=300)
        check_like_builtin(d / "run", "slurm", d / "w.pt")
        assert not cluster.stray_steps(), cluster.stray_steps()
        print(f"slurm cluster up, job and checks in {time.time() - t0:.1f} s")
    left = [p for p in cluster.procs.values() if p.poll() is None]
    assert not left, f"Slurm daemons left running: {left}"


def torchrun_on_two_hosts(hosts, d, extra, out, log_to=None):
    """Starts torchrun on each host (node rank = host), one rank each; returns the two processes."""
    port = free_port()
    procs = []
    for i in range(2):
        cmd = ["env", f"GLOO_SOCKET_IFNAME={hosts.ifname}", TORCHRUN, "--nnodes", "2", "--node-rank", i,
               "--nproc-per-node", "1", "--master-addr", hosts.addr[0], "--master-port", port, "--no-python",
               LADDER, *extra, "--out", out]
        print(f"host{i}$ {show(cmd)}", flush=True)
        log = open(log_to[i], "w") if log_to else subprocess.PIPE
        procs.append(hosts.popen(i, cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=clean_env()))
        if log_to:
            log.close()
    return procs


def twohost_torchrun(d):
    """One rank on each of two hosts: the one-host report and weights."""
    require_torchrun()
    require_namespaces()
    with TwoHosts() as hosts:
        procs = torchrun_on_two_hosts(hosts, d, [*MEASURE, "--save-final", d / "w.pt", "--quiet"], d / "run")
        for i, p in enumerate(procs):
            out, _ = p.communicate(timeout=300)
            assert p.returncode == 0, f"host{i}: exit {p.returncode}\n{out[-6000:]}"
        r = check_like_builtin(d / "run", "torchrun", d / "w.pt", local_ranks=(0, 0), hosts=("host0", "host1"))
        assert r["ddp"]["master"].startswith(hosts.addr[0] + ":"), r["ddp"]["master"]
        assert not hosts.pids(0) and not hosts.pids(1), (hosts.pids(0), hosts.pids(1))


def twohost_zero1(d):
    """ddp+zero1 with one rank on each of two hosts under torchrun: each keeps
    half the AdamW state (counted: its tensors' peak is the built-in ddp's less
    that half), the ranges travel over the link (the bytes out of each host's
    interface), and the weights, losses and grad norms are the built-in
    launcher's ddp rung's."""
    require_torchrun()
    require_namespaces()
    with TwoHosts() as hosts:
        work = ["measure", "--rung", "ddp+zero1", *WORK, "--save-final", d / "w.pt", "--quiet"]
        procs = torchrun_on_two_hosts(hosts, d, work, d / "run")
        for i, p in enumerate(procs):
            out, _ = p.communicate(timeout=300)
            assert p.returncode == 0, f"host{i}: exit {p.returncode}\n{out[-6000:]}"
    ref = load(REF / "builtin" / "ddp" / "report.json")
    r = validate(d / "run" / "ddp+zero1" / "report.json")
    assert [x["host"] for x in r["ddp"]["per_rank"]] == ["host0", "host1"], r["ddp"]["per_rank"]
    for q in ("loss", "grad_norm"):
        for a, b in zip(r["steps"][q], ref["steps"][q], strict=True):
            assert abs(a - b) <= 1e-6 * abs(b), (q, a, b)
    sharding = r["switches"]["zero1"]["sharding"]
    assert r["switches"]["zero1"]["effective"] is True and sharding["ranks"] == 2, r["switches"]["zero1"]
    assert 2 * sharding["optimizer_state_bytes_this_rank"] in (sharding["optimizer_state_bytes_unsharded"],
                                                              sharding["optimizer_state_bytes_unsharded"] + 8)
    w = assert_same_weights(d / "w.pt", REF / "weights.pt", atol=1e-7, rtol=1e-6)
    # Each rank's tensors: the built-in ddp's (same work, one thread per rank) less the half of
    # AdamW's state it no longer keeps.
    saved = sharding["optimizer_state_bytes_unsharded"] - sharding["optimizer_state_bytes_this_rank"]
    for a, z in zip(ref["ddp"]["per_rank"], r["ddp"]["per_rank"], strict=True):
        assert 0.75 * saved <= a["peak_allocated_bytes"] - z["peak_allocated_bytes"] <= 1.25 * saved, (a, z, saved)
    # One rank per host: the host's interfaces carry exactly that rank's traffic, the ring model's
    # bytes plus TCP/IP's headers and acknowledgements.
    for pr in r["ddp"]["per_rank"]:
        for sent, tx in zip(pr["sent_bytes_ring"], pr["net_tx_bytes"], strict=True):
            assert sent <= tx <= 1.1 * sent + 65536, (pr["rank"], sent, tx)
    print(f"zero1 on two hosts: losses and grad norms equal to the built-in ddp's; weights max |diff| {w:.2g}; "
          f"AdamW state {sharding['optimizer_state_bytes_this_rank']} of {sharding['optimizer_state_bytes_unsharded']} "
          f"bytes on rank 0; sent per step {r['ddp']['per_rank'][0]['median']['sent_bytes_ring']:.0f} B (ring model), "
          f"{r['ddp']['per_rank'][0]['median']['net_tx_bytes']:.0f} B out of host0's interface")


def twohost_mpirun(d):
    """mpirun on the first host starts one rank on each host (an rsh agent stands in for ssh)."""
    require("mpirun", why="Open MPI, Debian's openmpi-bin")
    require_namespaces()
    with TwoHosts() as hosts:
        agent = hosts.rsh_agent(d / "rsh-agent")
        cmd = ["mpirun", "--allow-run-as-root", "-np", "2", "-H", f"{hosts.addr[0]},{hosts.addr[1]}",
               "--mca", "plm_rsh_agent", agent, "--mca", "oob_tcp_if_include", hosts.ifname,
               "-x", f"MASTER_ADDR={hosts.addr[0]}", "-x", f"MASTER_PORT={free_port()}",
               "-x", f"GLOO_SOCKET_IFNAME={hosts.ifname}",
               LADDER, *MEASURE, "--out", d / "run", "--save-final", d / "w.pt", "--quiet"]
        print(f"host0$ {show(cmd)}", flush=True)
        p = hosts.popen(0, cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=clean_env())
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, f"exit {p.returncode}\n{out[-6000:]}"
        r = check_like_builtin(d / "run", "openmpi", d / "w.pt", local_ranks=(0, 0), hosts=("host0", "host1"))
        assert r["ddp"]["master"].startswith(hosts.addr[0] + ":"), r["ddp"]["master"]
        wait_for("every process of both hosts to end", lambda: not hosts.pids(0) and not hosts.pids(1), 20)


def steady(log):
    """True once the log shows a measured (not warm-up) step of the ddp rung."""
    lines = [x for x in pathlib.Path(log).read_text(errors="replace").splitlines()
             if x.startswith(("[ddp] step", "[ddp #1] step"))]
    return bool(lines) and "(warmup)" not in lines[-1]


def gloo_timed_out(message):
    """Gloo names a timeout one of two ways, by which of its waits ran out first: the socket's
    ("Operation timed out") or its recv's ("Timed out waiting 4000ms for recv operation")."""
    return "Operation timed out" in message or "Timed out waiting" in message


def two_host_fault(d, fault):
    require_torchrun()
    require_namespaces()
    logs = [d / "host0.log", d / "host1.log"]
    with TwoHosts() as hosts:
        procs = torchrun_on_two_hosts(hosts, d, ["measure", "--rung", "ddp", *FAULT_WORK], d / "run", logs)
        wait_for("a measured step on host0", lambda: steady(logs[0]) or any(p.poll() is not None for p in procs),
                 120)
        assert all(p.poll() is None for p in procs), [x.read_text()[-3000:] for x in logs]
        t_fault = time.time()
        if fault == "cut":
            hosts.link(0, up=False)
        else:  # the second host is lost: every process on it dies at once
            for pid in hosts.pids(1):
                os.kill(pid, 9)
        # When each host's rank said it failed (its log line), and when each torchrun exited.
        said, ended = {}, {}
        deadline = time.time() + FAULT_BOUND_S + 30
        while len(ended) < 2 and time.time() < deadline:
            for i, p in enumerate(procs):
                if i not in said and f"ladder: run failed: rank {i} of 2" in logs[i].read_text(errors="replace"):
                    said[i] = time.time() - t_fault
                if i not in ended and p.poll() is not None:
                    ended[i] = time.time() - t_fault
            time.sleep(0.05)
        text = [x.read_text(errors="replace") for x in logs]
        assert len(ended) == 2, f"still running {FAULT_BOUND_S + 30} s after the fault: " \
                                f"{[i for i in range(2) if i not in ended]}\n{text[0][-3000:]}\n{text[1][-3000:]}"
        report = validate(d / "run" / "ddp" / "report.json")
        f = report["failure"]
        print(f"fault ({fault}) at t=0; " + "; ".join(
            f"host{i}: rank {i} reported its failure at {said[i]:.1f} s" if i in said else f"host{i}: no report"
            for i in range(2)) + f"; torchrun exited {procs[0].returncode} at {ended[0]:.1f} s on host0, "
              f"{procs[1].returncode} at {ended[1]:.1f} s on host1 (bound {FAULT_BOUND_S:g} s)")
        print(f"rank 0's report: status {report['status']}, failure {json.dumps(f)}")
        assert report["status"] == "failed" and f["rank"] == 0 and f["reason"] == "exception", report["status"]
        assert procs[0].returncode != 0 and procs[1].returncode != 0
        # Rank 0 names rank 1 and the transport's reason, within the timeout and census.
        assert "rank 1 did not answer" in f["message"], f["message"]
        assert said[0] <= FAULT_BOUND_S + SLACK_S, (said[0], FAULT_BOUND_S)
        assert ended[0] <= FAULT_BOUND_S + 15, (ended[0], FAULT_BOUND_S)
        if fault == "cut":
            assert gloo_timed_out(f["message"]), f["message"]
            # Rank 1, cut off from the store on host0, says so and exits too.
            rank1 = [x for x in text[1].splitlines() if x.startswith("ladder: run failed: rank 1 of 2")]
            assert rank1, text[1][-3000:]
            print(f"rank 1 (host1): {rank1[0]}")
            assert f"rendezvous store at {hosts.addr[0]}" in rank1[0] and "did not answer" in rank1[0], rank1
            assert said[1] <= FAULT_BOUND_S + SLACK_S and ended[1] <= FAULT_BOUND_S + 15, (said[1], ended[1])
        else:
            assert "Connection closed by peer" in f["message"] or "Connection reset" in f["message"], f["message"]
            assert procs[1].returncode == -9 or procs[1].returncode == 137, procs[1].returncode
        wait_for("every process of both hosts to end", lambda: not hosts.pids(0) and not hosts.pids(1), 20)
        assert sorted(p.name for p in (d / "run" / "ddp").iterdir()) == ["report.json"]


def twohost_link_cut(d):
    """The link between the hosts is cut mid-run: both ranks fail within the timeouts, naming the cause."""
    two_host_fault(d, "cut")


def twohost_host_lost(d):
    """The second host's processes all die mid-run: rank 0 fails at once, naming rank 1."""
    two_host_fault(d, "kill")


def ladder_run_link_cut(d):
    """ladder run's loopback is cut during the ddp rung: the rung is failed, the next rung runs, all intact."""
    require_namespaces()
    reap_stale_namespaces()
    ns = f"ladder{os.getpid()}lo"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    log = d / "run.log"
    p = None
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        cmd = ["ip", "netns", "exec", ns, LADDER, "run", "--rungs", "ddp,tf32", "--nproc-per-node", "2", "--repeat", "1",
               *FAULT_WORK, "--out", d / "run"]
        print(f"$ {show(cmd)}", flush=True)
        with open(log, "w") as f:
            p = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT, env=clean_env(),
                                 start_new_session=True, preexec_fn=die_with_parent)
        wait_for("a measured ddp step", lambda: steady(log) or p.poll() is not None, 180)
        assert p.poll() is None, log.read_text()[-4000:]
        t_cut = time.time()
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "down"], check=True)
        failed_at = wait_for("the ddp rung to be recorded as failed",
                             lambda: "[ddp #1] failed" in log.read_text() and time.time() - t_cut, FAULT_BOUND_S + 30)
        p.wait(timeout=240)
        text = log.read_text()
        assert p.returncode == 1, f"exit {p.returncode}\n{text[-4000:]}"
        rows = {r["cell"]: r for r in validate(d / "run" / "summary.json")["rows"]}
        assert rows["ddp"]["status"] == "failed" and rows["tf32"]["status"] == "ok", rows
        assert rows["fp32"]["status"] == "ok", rows["fp32"]
        f = validate(d / "run" / "ddp" / "report.json")["failure"]
        print(f"ddp recorded failed {failed_at:.1f} s after the cut: {f['message']}")
        print(f"ranks: {f['ranks']}")
        assert gloo_timed_out(f["message"]) and "did not answer" in f["message"], f["message"]
        assert all("exited with code 1" in x["outcome"] for x in f["ranks"]), f["ranks"]
        assert failed_at <= FAULT_BOUND_S + SLACK_S + 5, failed_at  # + both ranks' exit, then the runner
        for cell in ("fp32", "tf32", "ddp.parity-single"):
            assert validate(d / "run" / cell / "report.json")["status"] == "ok", cell
        left = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        assert not left, f"processes left in the namespace: {left}"
    finally:
        if p is not None and p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait(timeout=10)
        for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
            os.kill(int(pid), 9)
        subprocess.run(["ip", "netns", "del", ns])


def twohost_bandwidth(d):
    """scripts/net-sweep at one setting writes the table with every rank's all-reduce figures, for
    ddp and ddp+zero1 on the same link; zero1 sends more than ddp (its parameter gather), and the
    bytes out of each host's interface are at least the ring model's."""
    require_torchrun()
    require_namespaces()
    run([sys.executable, ROOT / "scripts" / "net-sweep", "--ladder", LADDER, "--out", d / "sweep",
         "--settings", "1000:1", "--steps", "3", "--warmup", "1", "--preset", "tiny", "--bucket-cap-mb", "0.1"],
        timeout=300)
    data = load(d / "sweep" / "sweep.json")
    ddp, zero1 = data["rows"]
    assert (ddp["rung"], zero1["rung"]) == ("ddp", "ddp+zero1"), [r["rung"] for r in data["rows"]]
    for row in (ddp, zero1):
        assert row["rate_mbit"] == 1000 and row["delay_ms"] == 1.0, row
        assert 2.0 <= row["rtt_ms"] <= 20, row  # 2 x 1 ms, plus the user-space delay line's own time
        for r in (0, 1):
            m = row["ranks"][r]
            assert m["allreduce_ms"] > 0 and 0 <= m["allreduce_overlap_pct"] <= 100, m
            assert m["allreduce_exposed_ms"] <= m["allreduce_ms"] + 1e-6, m
            assert m["sent_bytes_ring"] <= m["net_tx_bytes"] <= 1.1 * m["sent_bytes_ring"] + 65536, m
        assert len(row["buckets"]) >= 3, row["buckets"]
        for b in row["buckets"]:
            assert b["bytes"] > 0 and b["in_flight_ms"] > 0, b
    for r in (0, 1):
        assert ddp["ranks"][r]["gather_ms"] is None and zero1["ranks"][r]["gather_ms"] > 0, (ddp, zero1)
        assert zero1["ranks"][r]["sent_bytes_ring"] > ddp["ranks"][r]["sent_bytes_ring"], (ddp, zero1)
    table = (d / "sweep" / "table.md").read_text()
    assert "| 1 Gbit/s | 1 ms |" in table and "| ddp+zero1 |" in table, table
    print(table)


# ---- scripts/nsys, one report per rank under each launcher ---------------------------
# There is no Nsight here: tests/e2e/fake_nsys.py stands in for `nsys profile`
# (it logs what it was asked, writes the report files and runs the command),
# so these check what scripts/nsys does around nsys. A real capture is the
# GPU issue's.

NSYS_WORK = ["--device", "cpu", "--preset", "tiny", "--steps", "3", "--warmup", "1", "--threads", "1", "--quiet"]


def nsys_env(d):
    export = d / "fixture.sqlite"
    subprocess.run([sys.executable, str(ROOT / "tests" / "e2e" / "make_nsys_export.py"), str(export)], check=True)
    return clean_env({"NSYS": str(ROOT / "tests" / "e2e" / "fake_nsys.py"), "FAKE_NSYS_LOG": str(d / "nsys.log"),
                      "FAKE_NSYS_EXPORT": str(export), "LADDER_BUILD_DIR": str(pathlib.Path(LADDER).parent)})


def check_nsys_ranks(d, launcher):
    """Two ranks, each its own report named by rank, the ddp rung, the run's report; nsys-import reads both."""
    out = d / "nsys" / "ddp"
    lines = [json.loads(line) for line in (d / "nsys.log").read_text().splitlines()]
    assert len(lines) == 2, lines
    outputs = sorted(line["options"]["output"] for line in lines)
    assert outputs == [f"{out}.rank0", f"{out}.rank1"], outputs
    for line in lines:
        o = line["options"]
        assert o["trace"] == "cuda,nvtx,cublas,cudnn" and o["capture-range"] == "nvtx", o
        assert o["nvtx-capture"] == "measured steps" and o["export"] == "sqlite", o
        cmd = line["command"]
        assert cmd[1:3] == ["measure", "--no-op-count"] and cmd[cmd.index("--rung") + 1] == "ddp", cmd
        assert cmd[cmd.index("--out") + 1] == f"{out}.run", cmd
    for k in (0, 1):
        assert (d / "nsys" / f"ddp.rank{k}.nsys-rep").exists() and (d / "nsys" / f"ddp.rank{k}.sqlite").exists()
    r = validate(d / "nsys" / "ddp.run" / "ddp" / "report.json")
    assert r["world_size"] == 2 and r["ddp"]["launcher"] == launcher, (r["world_size"], r["ddp"]["launcher"])
    p = run([LADDER, "nsys-import", d / "nsys" / "ddp.rank0.sqlite", d / "nsys" / "ddp.rank1.sqlite",
             "--format", "json"])
    labels = [i["label"] for i in json.loads(p.stdout)["inputs"]]
    assert labels == ["ddp.rank0", "ddp.rank1"], labels
    print(f"{launcher}: ranks 0 and 1 each profiled into their own report: {outputs}")


def nsys_builtin(d):
    """scripts/nsys --nproc-per-node 2: its own launcher starts both ranks (torchrun's variables)."""
    env = nsys_env(d)
    run([ROOT / "scripts" / "nsys", "--nproc-per-node", "2", *NSYS_WORK, "--out", d / "nsys" / "ddp"], env=env)
    check_nsys_ranks(d, "torchrun")


def nsys_torchrun(d):
    """torchrun --no-python scripts/nsys: each rank profiles itself."""
    require_torchrun()
    env = nsys_env(d)
    run([TORCHRUN, "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", free_port(), "--no-python",
         ROOT / "scripts" / "nsys", *NSYS_WORK, "--out", d / "nsys" / "ddp"], env=env)
    check_nsys_ranks(d, "torchrun")


def nsys_mpirun(d):
    """mpirun scripts/nsys: each rank profiles itself (OMPI_COMM_WORLD_RANK names it)."""
    require("mpirun", why="Open MPI, Debian's openmpi-bin")
    env = nsys_env(d)
    run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x", "MASTER_ADDR=127.0.0.1",
         "-x", f"MASTER_PORT={free_port()}", "-x", "NSYS", "-x", "FAKE_NSYS_LOG", "-x", "FAKE_NSYS_EXPORT",
         "-x", "LADDER_BUILD_DIR", ROOT / "scripts" / "nsys", *NSYS_WORK, "--out", d / "nsys" / "ddp"], env=env)
    check_nsys_ranks(d, "openmpi")


def nsys_srun(d):
    """srun scripts/nsys on a one-host Slurm cluster: each rank profiles itself (SLURM_PROCID names it)."""
    require(*SLURM_TOOLS, "salloc", why="Slurm and munge, Debian's slurmctld, slurmd, slurm-client and munge")
    if os.geteuid() != 0:
        skip("the test's own Slurm cluster runs its daemons as root (SlurmUser=root); run as root")
    cluster = SlurmCluster(d / "slurm")
    env = nsys_env(d)
    with cluster:
        job = (f'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) '
               f'MASTER_PORT={free_port()}; '
               f'srun --ntasks 2 {ROOT / "scripts" / "nsys"} {show(NSYS_WORK)} --out {d / "nsys" / "ddp"}')
        env = {**env, "SLURM_CONF": str(cluster.conf)}
        env = {k: v for k, v in env.items() if k == "SLURM_CONF" or not k.startswith(("SLURM_", "SALLOC_", "SRUN_"))}
        run(["salloc", "--ntasks", "2", "--time", "5", "sh", "-c", job], env=env, timeout=300)
        check_nsys_ranks(d, "slurm")
        assert not cluster.stray_steps(), cluster.stray_steps()


CASES = {f.__name__: f for f in [builtin_reference, torchrun, mpirun, srun, twohost_torchrun, twohost_zero1,
                                 twohost_mpirun,
                                 twohost_link_cut,
                                 twohost_host_lost, ladder_run_link_cut, twohost_bandwidth, nsys_builtin,
                                 nsys_torchrun, nsys_mpirun, nsys_srun]}

if __name__ == "__main__":
    case = CASES[sys.argv[3]]
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix=f"ladder_launch_{case.__name__}_") as tmp:
        case(pathlib.Path(tmp))
    print(f"{case.__name__}: ok ({time.time() - t0:.1f} s)")
