#!/usr/bin/env python3
"""tests/e2e/e2e_micro.py: the micro-benchmarks (`ladder bench`, `ladder-micro`)
end to end, on the tiny preset with a minimal time, on the CPU.

usage: e2e_micro.py LADDER_BIN LADDER_MICRO_BIN WORK_DIR CASE

No timing is asserted: only that the JSON is produced, that every family ran
on the CPU with its correctness check passed before it was timed, that no
benchmark reached more than 100 % of its ceiling, that a failed check fails
the run, and that bad input exits 2.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

LADDER, MICRO, WORK = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
TINY = ["--preset", "tiny", "--device", "cpu", "--threads", "2", "--benchmark_min_time=0.001"]

# Benchmarks per family on the CPU for the tiny preset (C=64, H=2, T=64, V=1000):
# matmul 5 GEMMs x 3 precisions; attention T=128 x 2 kinds x 2 precisions;
# cross_entropy V 1000/1024 x 2 precisions; adamw torch/fused; mlp 2 kinds x 2
# precisions; gemm_sites: on a CPU every GEMM of the step (variants/planners/gemm_sites.h step_sites: 15),
# PyTorch's way and oneDNN's at each (planner 5 offers oneDNN at the weight gradients too), and into-grad
# at the 5 weight gradients where the step runs fp32: 35 in fp32, 30 in bf16;
# layernorm composite/fused x fp32/bf16;
# allreduce: 1 to 3 DDP bucket sizes.
FAMILIES = {"matmul": 15, "attention": 4, "cross_entropy": 4, "adamw": 2, "mlp": 4, "gemm_sites": 35, "layernorm": 4,
            "allreduce": None}
FLOP_FAMILIES = {"matmul", "attention", "cross_entropy", "mlp", "gemm_sites"}


def run(binary, *args, code=0, env=None):
    p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    assert p.returncode == code, f"exit {p.returncode} != {code}: {args}\n{p.stdout}\n{p.stderr}"
    return p


def fresh(name):
    d = WORK / name
    if d.exists():
        shutil.rmtree(d)
    return d


def smoke_every_family_checked():
    out = fresh("smoke")
    p = run(LADDER, "bench", *TINY, "--out", out)
    doc = json.loads((out / "micro.json").read_text())
    ctx = doc["context"]
    library_build_said_plainly(p.stderr, ctx)
    # The environment fields of the reports, and the config.
    for key in ("ladder.environment.host", "ladder.environment.cpu_model", "ladder.environment.versions.libtorch",
                "ladder.environment.threads.intra_op", "ladder.environment.device.name", "ladder.run_id"):
        assert ctx.get(key), f"context lacks {key}: {sorted(ctx)}"
    assert ctx["ladder.preset"] == "tiny" and ctx["ladder.devices"] == "cpu", ctx
    # Every family the binary registered (the build globs them), each of those below among them.
    registered = ctx["ladder.families"].split(",")
    assert set(FAMILIES) <= set(registered), f"families registered: {registered}; expected among them {sorted(FAMILIES)}"
    assert ctx["ladder.environment.threads.intra_op"] == "2", ctx
    benches = doc["benchmarks"]
    by_family = {}
    for b in benches:
        assert not b.get("error_occurred"), f"{b['name']}: {b.get('error_message')}"
        family = b["name"].split("/")[0]
        assert family in registered, f"{b['name']}: not in the families the binary registered, {registered}"
        assert "/cpu/" in b["name"], b["name"]
        # The correctness check ran before timing, and passed within its tolerance.
        assert b["check_passed"] == 1 and b["check_rel_err"] <= b["check_tolerance"], b
        assert b["label"].startswith("checked "), b
        assert b["iterations"] >= 1 and b["time_unit"] == "ms", b
        if family in FLOP_FAMILIES:
            assert b["flop_per_s"] > 0 and b["peak_tflops"] > 0 and "pct_of_peak" in b, b
            assert "peak: measured roofline" in b["label"], b
            # A ceiling is what no benchmark passes: the peak is the best call of
            # the roofline's shapes at the benchmark's own precision (bench/micro/harness.cpp).
            assert b["pct_of_peak"] <= 100, f"{b['name']}: {b['pct_of_peak']:.1f} % of {b['label']}"
        else:
            assert b["bytes_per_s"] > 0, b
        by_family.setdefault(family, []).append(b["name"])
    for family in registered:  # a family the counts above do not know (a new op's) must run at least once
        count = FAMILIES.get(family)
        got = len(by_family.get(family, []))
        assert got >= 1, f"family {family} did not run"
        if family == "gemm_sites" and not any(b["name"].startswith("gemm_sites/") and "fp32 inputs" in b["label"]
                                              for b in benches):
            count = 30  # the step computes in bf16 on this CPU (bf16 at least as fast): into-grad is fp32's only
        assert count is None or got == count, f"{family}: {got} benchmarks, expected {count}: {by_family[family]}"
    print(f"{len(benches)} benchmarks in {len(by_family)} families, every check passed")


def library_build_said_plainly(stderr, ctx):
    """google/benchmark's "built as DEBUG" warning (Debian's library is built
    without NDEBUG, with its own -O2) is replaced by one plain line, and the
    JSON context says what library_build_type means for the library linked."""
    assert "***WARNING*** Library was built as DEBUG" not in stderr, stderr
    lib = {k.removeprefix("ladder.gbench_library."): v for k, v in ctx.items()
           if k.startswith("ladder.gbench_library.")}
    assert set(lib) == {"path", "cmake_configuration", "ndebug", "note"}, lib
    notes = [line for line in stderr.splitlines() if line.startswith("ladder bench: google/benchmark calls itself")]
    if ctx["library_build_type"] == "debug":
        assert lib["ndebug"] == "false" and "without NDEBUG" in lib["note"], lib
        assert len(notes) == 1, stderr
        assert f"DEBUG because {lib['path']} was compiled without NDEBUG (CMake configuration " \
               f"{lib['cmake_configuration']}: " in notes[0], notes
        assert "No time below is affected" in notes[0] and "UseManualTime" in notes[0], notes
    else:
        assert lib["ndebug"] == "true" and not notes, (lib, notes)


def failed_check_fails_the_run():
    out = fresh("perturbed")
    p = run(LADDER, "bench", *TINY, "--out", out, "--benchmark_filter=^(mlp|layernorm)/", code=1,
            env={"LADDER_MICRO_PERTURB": "mlp"})
    assert "correctness check failed" in p.stderr, p.stderr
    benches = json.loads((out / "micro.json").read_text())["benchmarks"]
    mlp = [b for b in benches if b["name"].startswith("mlp/")]
    assert len(mlp) == 4 and all(b["error_occurred"] for b in mlp), mlp
    assert all("correctness check failed" in b["error_message"] for b in mlp), mlp
    # The other family still ran and passed.
    ln = [b for b in benches if b["name"].startswith("layernorm/")]
    assert len(ln) == 4 and all(not b.get("error_occurred") and b["check_passed"] == 1 for b in ln), ln


def ladder_micro_lists_every_family():
    p = run(MICRO, "--preset", "tiny", "--device", "cpu", "--benchmark_list_tests=true")
    names = p.stdout.split()
    for family in FAMILIES:
        assert any(n.startswith(family + "/") for n in names), (family, names)


def bad_inputs():
    out = fresh("bad")
    cases = [
        (["--preset", "gpt9"], ["--preset", "'gpt9'", "tiny"]),
        (["--batch", "0"], ["--batch", "got 0"]),
        (["--device", "tpu"], ["--device", "'tpu'"]),
        (["--benchmark_format=xml"], ["--benchmark_format", "'xml'", "console, json or csv"]),
        (["--benchmark_filter=^no_such_family/"], ["--benchmark_filter", "no_such_family", "matches no benchmark"]),
        (["--benchmark_frobnicate=1"], ["--benchmark_frobnicate=1"]),
        (["--bogus"], ["unknown option '--bogus'"]),
    ]
    for args, parts in cases:
        p = run(LADDER, "bench", "--preset", "tiny", "--device", "cpu", "--out", out, *args, code=2)
        for part in parts:
            assert part in p.stderr, f"{args}: missing {part!r} in {p.stderr}"
        assert not (out / "micro.json").exists(), args


CASES = {f.__name__: f for f in (smoke_every_family_checked, failed_check_fails_the_run,
                                 ladder_micro_lists_every_family, bad_inputs)}

if __name__ == "__main__":
    WORK.mkdir(parents=True, exist_ok=True)
    CASES[sys.argv[4]]()
