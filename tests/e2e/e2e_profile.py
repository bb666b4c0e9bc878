#!/usr/bin/env python3
"""tests/e2e/e2e_profile.py: traces, the report's profiler sections and scripts/nsys, end to end.

usage: e2e_profile.py LADDER_BIN CASE [WORLD_SIZE]   (CASE: one of the functions below)
Exit 0 when the case passed, SKIP_CODE when a tool it needs is missing.

Each case runs the real `ladder` binary (or scripts/nsys) in a temporary
directory. The trace case takes the world size: every rank must write its own
valid Chrome-trace JSON. One rank runs `ladder measure`; a world size above one
needs the data-parallel launcher, whose command line goes in launch().
"""
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile

from e2e_common import ROOT, load, validate

LADDER = sys.argv[1]
# 5 steps (0..4) with --profile 1,1,2: wait step 0, warm up at 1, record 2 and 3;
# the trace is written after step 3.
RECORDED_STEPS, TRACE_STEP = [2, 3], 3
STEP_RANGES = {"data", "forward", "backward", "optimizer"}
SKIP_CODE = 77  # tests/CMakeLists.txt: SKIP_RETURN_CODE


def rung_for(world_size):
    """fp32 on one rank; fp32 plus data parallelism on several."""
    return "fp32" if world_size == 1 else "fp32+ddp"


def traced(schedule="1,1,2", rung="fp32"):
    return ["--device", "cpu", "--rung", rung, "--preset", "tiny", "--steps", "4", "--warmup", "1", "--threads", "1",
            "--profile", schedule, "--quiet"]


def run(cmd, env=None, check_code=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check_code is not None:
        assert p.returncode == check_code, f"{cmd}: exit {p.returncode} != {check_code}\n{p.stdout}\n{p.stderr}"
    return p




def launch(world_size, out):
    """The command that runs the traced rung on `world_size` ranks."""
    if world_size == 1:
        return [LADDER, "measure", *traced(), "--out", str(out)]
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return [str(ROOT / ".venv" / "bin" / "torchrun"), "--nproc-per-node", str(world_size), "--master-addr",
            "127.0.0.1", "--master-port", str(port), "--no-python", LADDER, "measure",
            *traced(rung=rung_for(world_size)), "--out", str(out)]


def check_trace(path, rank, world_size):
    """One rank's trace: valid Chrome-trace JSON with ranges, step markers and rank metadata."""
    trace = load(path)  # json.loads raises on anything but complete, valid JSON
    events = trace["traceEvents"]
    assert isinstance(events, list) and events, path
    for e in events:
        assert "ph" in e and "name" in e, e
    info = trace.get("distributedInfo")
    assert info is not None, f"{path}: no distributedInfo: {sorted(trace)}"
    assert info["rank"] == rank and info["world_size"] == world_size, info
    rung = rung_for(world_size)
    names = {e["name"] for e in events if e.get("ph") == "X"}
    annotations = {e["name"] for e in events if e.get("cat") == "user_annotation"}
    markers = sorted(n for n in annotations if n.startswith("ProfilerStep#"))
    assert markers == [f"ProfilerStep#{s}" for s in RECORDED_STEPS], markers
    expected = STEP_RANGES | {f"step {rung}"}
    if world_size > 1:  # one range per gradient bucket; tiny's 0.7 MB fit in one
        assert info["backend"] == "gloo", info
        expected |= {"all-reduce bucket 0"}
    assert expected <= annotations, f"missing ranges {expected - annotations} in {path}"
    assert any(n.startswith("aten::") for n in names), "no operators in the trace"
    # record_shapes: operators carry their input dimensions.
    assert any("Input Dims" in e.get("args", {}) for e in events if e.get("cat") == "cpu_op"), "no input shapes"
    # Each marker holds one whole step: forward and optimizer ranges fall inside it.
    steps = [e for e in events if e["name"].startswith("ProfilerStep#") and e.get("ph") == "X"]
    for s in steps:
        inside = {e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                  and e.get("tid") == s.get("tid") and s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]}
        assert {"forward", "optimizer"} <= inside, (s["name"], inside)
    return trace


def traces_per_rank(d, world_size=1):
    """A traced run writes one valid trace per rank at the fixed path, and the report says so."""
    run(launch(world_size, d), check_code=0)
    rung = rung_for(world_size)
    trace_dir = d / rung / "traces"
    expected = sorted(f"rank{r}_step{TRACE_STEP}.json" for r in range(world_size))
    assert sorted(p.name for p in trace_dir.iterdir()) == expected, list(trace_dir.iterdir())
    for r in range(world_size):
        check_trace(trace_dir / f"rank{r}_step{TRACE_STEP}.json", r, world_size)
    report = validate(d / rung / "report.json")  # rank 0's report
    prof = report["profile"]
    assert prof["schedule"] == {"wait": 1, "warmup": 1, "active": 2, "repeat": 1}, prof
    assert prof["recorded_steps"] == RECORDED_STEPS, prof
    (t,) = prof["traces"]
    assert pathlib.Path(t["path"]) == trace_dir / f"rank0_step{TRACE_STEP}.json", t
    assert (t["first_step"], t["last_step"]) == (RECORDED_STEPS[0], TRACE_STEP), t
    assert t["bytes"] == (trace_dir / f"rank0_step{TRACE_STEP}.json").stat().st_size, t
    assert t["dump_ms"] >= 0 and t["stop_ms"] >= 0 and prof["dump_ms_total"] == t["dump_ms"], t
    assert report["config"]["profile"] == "1,1,2"


def hta_loads_every_rank(d):
    r"""HolisticTraceAnalysis 0.5.0 opens the two ranks' traces of the ddp rung as ranks 0 and 1.

    HTA finds a file's rank with the regex `"rank":\s+(\d+)` and files every
    trace it cannot match as rank 0, so a folder of `{"rank":1,...}` traces
    loads as one rank. Its temporal breakdown (idle / compute / non-compute
    time) is computed from GPU kernels only: on these CPU traces, which have
    no device events, it raises. So per rank this asserts the strongest thing
    HTA does compute on a CPU trace: the rank came from its own file, HTA
    found a profiler step, and inside that step the phase ranges (and the
    gradient all-reduce) HTA parsed nest and do not add up to more than the step.
    """
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"  # keep sub-microsecond events (memsets) apart
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as e:
        print(f"SKIP: HolisticTraceAnalysis not importable ({e}); scripts/bootstrap pip-installs it")
        sys.exit(SKIP_CODE)
    run(launch(2, d), check_code=0)
    check_hta(TraceAnalysis, d / rung_for(2) / "traces")


def check_hta(TraceAnalysis, trace_dir):
    """HTA on a folder of two ranks' CPU traces (see hta_loads_every_rank)."""
    analysis = TraceAnalysis(trace_dir=str(trace_dir))
    trace = analysis.t
    assert sorted(trace.get_ranks()) == [0, 1], f"HTA loaded ranks {trace.get_ranks()}: {trace.trace_files}"
    for r in (0, 1):
        assert pathlib.Path(trace.trace_files[r]).name == f"rank{r}_step{TRACE_STEP}.json", trace.trace_files
    names = trace.symbol_table.get_sym_table()  # HTA stores names and categories as symbol ids
    try:
        temporal = analysis.get_temporal_breakdown(visualize=False)
    except (IndexError, ValueError, KeyError) as e:  # no GPU kernels to break down
        assert all(trace.get_trace(r)["stream"].eq(-1).all() for r in (0, 1)), f"GPU events, yet: {e!r}"
        temporal = None
    if temporal is not None:
        assert sorted(temporal["rank"]) == [0, 1] and (temporal["kernel_time(us)"] > 0).all(), temporal
    for r in (0, 1):
        df = trace.get_trace(r)
        name = df["name"].map(names.__getitem__)
        steps = df[name.str.startswith("ProfilerStep#")]
        assert len(steps) >= 1, f"rank {r}: HTA found no profiler step"
        step = steps.iloc[0]
        inside = df[(df["tid"] == step["tid"]) & (df["ts"] >= step["ts"])
                    & (df["ts"] + df["dur"] <= step["ts"] + step["dur"]) & (df.index != step.name)]
        phase_us = {n: inside[name[inside.index] == n]["dur"].sum() for n in STEP_RANGES | {"all-reduce bucket 0"}}
        assert all(us > 0 for us in phase_us.values()), (r, phase_us)
        phases = sum(phase_us[n] for n in STEP_RANGES)
        assert phases <= step["dur"] * (1 + 1e-6), f"rank {r}: phases {phases} us > step {step['dur']} us"
        print(f"rank {r}: {names[step['name']]} {step['dur']:.0f} us, phases "
              + ", ".join(f"{n} {us:.0f}" for n, us in sorted(phase_us.items())))


def hta_trace_diff_agrees_with_kernels(d):
    """`ladder compare --kernels` and HTA 0.5.0's TraceDiff.ops_diff name the same operators added and removed.

    Two rungs whose operators differ (fp32 and flash: SDPA and the fused ops
    come in, the explicit attention and the composite LayerNorm go; flash
    and fused-adamw: the fused optimizer comes in), each traced
    (--profile) beside its report. HTA diffs the CPU operators of the
    traces' first profiler step; --kernels diffs the reports' whole kernel
    tables (the op breakdown's two profiled steps) by family. The names of
    --kernels' added families must be HTA's added, and its removed HTA's
    deleted, exactly. (A family present on both sides but in another band
    is "moved" there, as HTA, which has no bands, has it unchanged.)"""
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    try:
        from hta.trace_diff import DeviceType, TraceDiff
    except ImportError as e:
        print(f"SKIP: HolisticTraceAnalysis not importable ({e}); scripts/bootstrap pip-installs it")
        sys.exit(SKIP_CODE)
    for rung in ("fp32", "flash", "fused-adamw"):
        run([LADDER, "measure", *traced(rung=rung), "--out", str(d / rung)], check_code=0)
    for a, b in (("fp32", "flash"), ("flash", "fused-adamw")):
        hta = TraceDiff.ops_diff(str(d / a / a / "traces"), str(d / b / b / "traces"), device_type=DeviceType.CPU)
        p = run([LADDER, "compare", d / a / a / "report.json", d / b / b / "report.json", "--kernels", "--force",
                 "--format", "json"], check_code=0)
        (rung_kernels,) = json.loads(p.stdout)["kernels"]["rungs"]
        mine = {"added": set(), "removed": set()}
        for f in rung_kernels["families"]:
            v = f["vs_baseline"][1]
            if v and v["verdict"] in mine:
                mine[v["verdict"]] |= set(f["inputs"][1 if v["verdict"] == "added" else 0]["names"])
        print(f"{a} -> {b}: --kernels added {len(mine['added'])}, removed {len(mine['removed'])}; "
              f"HTA added {len(hta['added'])}, deleted {len(hta['deleted'])}")
        assert mine["added"] == set(hta["added"]), (sorted(mine["added"] ^ set(hta["added"])), a, b)
        assert mine["removed"] == set(hta["deleted"]), (sorted(mine["removed"] ^ set(hta["deleted"])), a, b)
        assert mine["added"] or mine["removed"], (a, b)


def hta_annotation_breakdown_agrees_with_phases(d):
    """Each phase's host time in a step, from the trace's own ranges, as ladder and HTA 0.5.0 read it.

    `profile.traces[].phases_ms` is ladder's reading of the trace it wrote,
    one per recorded step (the operators inside each phase range of its
    ProfilerStep#N range); HTA's user-annotation breakdown on the CPU
    (use_gpu_annotation=False) sums each range's duration over the
    iterations it keeps. For the same step they must agree within 2 % per
    phase, on the explicit-attention fp32 rung and on
    fused-adamw; and the phases must account for at least 97 % of the
    step's busy time (op_breakdown.phases_pct_of_busy)."""
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as e:
        print(f"SKIP: HolisticTraceAnalysis not importable ({e}); scripts/bootstrap pip-installs it")
        sys.exit(SKIP_CODE)
    for rung in ("fp32", "fused-adamw"):
        run([LADDER, "measure", *traced(rung=rung), "--out", str(d / rung)], check_code=0)
        report = validate(d / rung / rung / "report.json")
        (trace,) = report["profile"]["traces"]
        assert len(trace["phases_ms"]) == trace["last_step"] - trace["first_step"] + 1, trace
        df = TraceAnalysis(trace_dir=str(d / rung / rung / "traces")).get_gpu_user_annotation_breakdown(
            use_gpu_annotation=False, visualize=False, num_kernels=100000)
        hta = {row["name"]: row["sum (us)"] / 1000 for _, row in df.iterrows()}
        # HTA keeps the trace's complete iterations (here the first: it drops the last); compare that step.
        (hta_step,) = [int(n.split("#")[1]) for n in hta if n.startswith("ProfilerStep#")]
        mine = trace["phases_ms"][hta_step - trace["first_step"]]
        for phase in ("data", "forward", "backward", "optimizer"):
            print(f"{rung} {phase}: ladder {mine[phase]:.3f} ms, HTA {hta[phase]:.3f} ms per step")
            assert abs(mine[phase] - hta[phase]) <= 0.02 * hta[phase], (rung, phase, mine[phase], hta[phase])
        b = report["op_breakdown"]
        assert b["phases_pct_of_busy"] >= 97, (rung, b["phases_pct_of_busy"], b["phases_ms"], b["busy_ms"])
        assert abs(sum(b["phases_ms"].values()) - b["busy_ms"]) <= 1e-3 * b["busy_ms"], (b["phases_ms"], b["busy_ms"])


def repeated_cycles(d):
    """--profile 0,1,1,2 over 5 steps: two cycles, traces after steps 1 and 3; no temp files left."""
    run([LADDER, "measure", *traced("0,1,1,2"), "--out", str(d)], check_code=0)
    trace_dir = d / "fp32" / "traces"
    assert sorted(p.name for p in trace_dir.iterdir()) == ["rank0_step1.json", "rank0_step3.json"], \
        list(trace_dir.iterdir())
    for name in ("rank0_step1.json", "rank0_step3.json"):
        load(trace_dir / name)
    report = validate(d / "fp32" / "report.json")
    assert report["profile"]["recorded_steps"] == [1, 3], report["profile"]


def report_has_breakdown_and_memory(d):
    """Every report: op_breakdown over the categories, op counts, and the memory monitor per step."""
    run([LADDER, "measure", "--device", "cpu", "--rung", "fp32", "--preset", "tiny", "--steps", "3", "--warmup", "1",
         "--threads", "1", "--quiet", "--out", str(d)], check_code=0)
    report = validate(d / "fp32" / "report.json")
    b = report["op_breakdown"]
    assert b["source"] == "kineto: CPU operators" and b["unavailable"] is None, b
    assert set(b["categories_ms"]) == {"gemm", "attention", "elementwise_norm", "softmax_loss", "optimizer",
                                       "communication", "memcpy_memset", "idle_other"}, b
    assert abs(sum(b["categories_ms"].values()) - b["sum_ms"]) < 1e-6 * max(1.0, b["sum_ms"])
    assert b["ops_per_step"] == report["op_counts"]["cpu_ops_per_step"] > 0, b
    # Each category names its largest operators; fp32's GEMMs are aten::mm / addmm.
    assert set(b["top_by_category"]) == set(b["categories_ms"]), b["top_by_category"]
    assert {r["name"] for r in b["top_by_category"]["gemm"]} & {"aten::mm", "aten::addmm"}, b["top_by_category"]
    steps = report["steps"]
    assert len(steps["peak_rss_bytes"]) == len(steps["dt_ms"]) == 3, steps
    mem = report["memory"]["measured"]
    assert mem["peak_rss_bytes"] == max(steps["peak_rss_bytes"]), (mem, steps["peak_rss_bytes"])
    assert report["profile"] is None


def nsys_explains_itself(d):
    """scripts/nsys --help says what it does and how to use it."""
    p = run([str(ROOT / "scripts" / "nsys"), "--help"], check_code=0)
    for part in ("Nsight Systems", "--capture-range=nvtx", "measured steps", "cublas", "nsys stats", "NSYS="):
        assert part in p.stdout, (part, p.stdout)


def nsys_absent_fails_clearly(d):
    """Without nsys, scripts/nsys exits 2 and says how to get it; it never starts a run."""
    p = run([str(ROOT / "scripts" / "nsys"), "--rung", "fp32"], env={"NSYS": str(d / "no-such-nsys")}, check_code=2)
    assert "NSYS=" in p.stderr and "not an executable" in p.stderr, p.stderr
    searched = [pathlib.Path("/usr/local/cuda/bin/nsys"), *pathlib.Path("/").glob("opt/nvidia/nsight-systems/*/bin/nsys")]
    if not any(c.exists() for c in searched):
        env = {k: v for k, v in os.environ.items() if k != "NSYS"}
        env["PATH"] = "/usr/bin:/bin"
        p = subprocess.run([str(ROOT / "scripts" / "nsys"), "--rung", "fp32"], capture_output=True, text=True, env=env)
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert "Nsight Systems (nsys) not found" in p.stderr and "NSYS=/path/to/nsys" in p.stderr, p.stderr
    assert not (ROOT / "runs" / "nsys" / "fp32.run").exists()


def nsys_import_reads_a_documented_export(d):
    """ladder nsys-import on an export made to NVIDIA's documented schema
    (tests/e2e/make_nsys_export.py), two processes (ranks): each one's bands,
    phases (the autograd thread's kernels in the main thread's backward) and
    layers per step are the figures built into the file, its kernel rows add
    up to its bands, the kernel after the steps is left out and said so; a
    ladder report goes beside as a column; bad inputs exit 2 naming the file."""
    sys.path.insert(0, str(ROOT / "tests" / "e2e"))
    import make_nsys_export
    export = d / "two.sqlite"
    run([sys.executable, str(ROOT / "tests" / "e2e" / "make_nsys_export.py"), str(export), "--pids", "2"], check_code=0)
    doc = json.loads(run([LADDER, "nsys-import", str(export), "--format", "json"], check_code=0).stdout)
    assert [i["label"] for i in doc["inputs"]] == ["two:4000", "two:4001"], doc["inputs"]
    for k, inp in enumerate(doc["inputs"]):
        want, b = make_nsys_export.expected(k), inp["op_breakdown"]
        assert inp["rung"] == "ddp" and b["steps_profiled"] == 2, inp
        for band, ms in want["bands"].items():
            assert abs(b["categories_ms"][band] - ms) < 1e-9, (k, band, b["categories_ms"])
        for phase, ms in want["phases"].items():
            assert abs(b["phases_ms"][phase] - ms) < 1e-9, (k, phase, b["phases_ms"])
        assert b["layers_ms"].keys() == want["layers"].keys(), b["layers_ms"]
        for layer, ms in want["layers"].items():
            assert abs(b["layers_ms"][layer] - ms) < 1e-9, (k, layer, b["layers_ms"])
        assert abs(b["step_dt_ms"] - want["dt"]) < 1e-9, b["step_dt_ms"]
        for band, ms in b["categories_ms"].items():
            if band != "idle_other":
                rows = sum(r["ms"] for r in b["kernels"] if r["band"] == band)
                assert abs(rows - ms) < 1e-9, (band, rows, ms)
        assert any("1 activities launched outside every step range are left out" in n for n in inp["notes"]), inp
    text = run([LADDER, "nsys-import", str(export)], check_code=0).stdout
    for part in ("bands, ms per step", "phases, ms per step", "backward/layer 1", "kernels by family",
                 "ncclDevKernel_AllReduce_Sum_f32_RING_LL"):
        assert part in text, (part, text)
    # Beside a ladder report of its own (a CPU one here: its operators).
    run([LADDER, "measure", "--device", "cpu", "--rung", "fp32", "--preset", "tiny", "--steps", "2", "--warmup", "1",
         "--threads", "1", "--quiet", "--out", str(d / "cpu")], check_code=0)
    side = json.loads(run([LADDER, "nsys-import", str(export), "--report", str(d / "cpu" / "fp32" / "report.json"),
                           "--format", "json"], check_code=0).stdout)
    assert side["tables"][0]["rows"][0].keys() >= {"two_4000_ms", "two_4001_ms", "ladder_fp32_ms"}, side["tables"][0]
    # Bad inputs: exit 2, naming the file and what was expected.
    (d / "not.sqlite").write_text("not a database")
    p = run([LADDER, "nsys-import", str(d / "not.sqlite")], check_code=2)
    assert "not.sqlite" in p.stderr and "nsys export --type sqlite" in p.stderr, p.stderr
    import sqlite3
    db = sqlite3.connect(d / "no-nvtx.sqlite")
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    db.commit()
    db.close()
    p = run([LADDER, "nsys-import", str(d / "no-nvtx.sqlite")], check_code=2)
    assert "no-nvtx.sqlite: no table CUPTI_ACTIVITY_KIND_KERNEL" in p.stderr and "--trace=cuda,nvtx" in p.stderr, p.stderr
    p = run([LADDER, "nsys-import", str(d / "absent.sqlite")], check_code=2)
    assert "absent.sqlite: no such file" in p.stderr, p.stderr
    p = run([LADDER, "nsys-import", str(export), "--kernels", "-1"], check_code=2)
    assert "--kernels: got -1" in p.stderr, p.stderr
    run([LADDER, "measure", "--device", "cpu", "--rung", "fp32", "--preset", "tiny", "--steps", "2", "--warmup", "1",
         "--threads", "1", "--quiet", "--no-op-count", "--out", str(d / "noops")], check_code=0)
    p = run([LADDER, "nsys-import", str(export), "--report", str(d / "noops" / "fp32" / "report.json")], check_code=2)
    assert "no op_breakdown" in p.stderr, p.stderr


if __name__ == "__main__":
    case = sys.argv[2]
    extra = [int(a) for a in sys.argv[3:]]
    with tempfile.TemporaryDirectory(prefix=f"ladder_{case}_") as tmp:
        globals()[case](pathlib.Path(tmp), *extra)
    print(f"{case}: ok")
