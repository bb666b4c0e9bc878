#!/usr/bin/env python3
"""tests/e2e/e2e_data.py: token shards end to end, on the tiny preset.

usage: e2e_data.py LADDER_BIN CASE     (CASE: one of the functions below)

The shards are written by scripts/make-token-shards from a generated text
(byte-level tokens), so nothing is downloaded. Each case runs the real
`ladder` binary in a temporary directory. Run by ctest, one test per case.
"""
import hashlib
import os
import pathlib
import subprocess
import sys

import numpy as np

from e2e_common import ROOT, TINY, run_case, validate

LADDER = sys.argv[1]
PYTHON = sys.executable
SHARD_TOKENS = 64 * 40 + 1  # tiny: 40 rows of T+1 = 65 tokens per shard


def run(cmd, check_code=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == check_code, f"{cmd}: exit {p.returncode} != {check_code}\n{p.stdout}\n{p.stderr}"
    return p




def sample_text():
    """Deterministic text with every byte value 0..255 in it."""
    words = [f"step {i} of the ladder reads shard bytes; " for i in range(200)]
    return "".join(words).encode() + bytes(range(256))


def make_shards(d):
    """Three shards per format; returns (the text, the llm.c glob, the raw glob)."""
    text = sample_text()
    src = d / "text.txt"
    src.write_bytes(text)
    run([PYTHON, str(ROOT / "scripts" / "make-token-shards"), str(src), str(d / "shards"),
         "--shard-tokens", str(SHARD_TOKENS)])
    return text, str(d / "shards" / "sample_llmc_*.bin"), str(d / "shards" / "sample_raw_*.bin")


def content_hash(path):
    """token_shards.h: sha1 of the first 64 KiB, the last 64 KiB and the size in decimal."""
    data = pathlib.Path(path).read_bytes()
    span = 64 * 1024
    return "sha1:" + hashlib.sha1(data[:span] + data[-span:] + str(len(data)).encode()).hexdigest()


def measure(d, name, data_args, extra=()):
    out = d / name
    run([LADDER, "measure", "--rung", "fp32", *TINY, "--out", str(out), "--quiet", *data_args, *extra])
    return validate(out / "fp32" / "report.json")


def script_round_trip(d):
    """The sample-shard tool writes both formats, and they read back as the text's bytes."""
    text, llmc_glob, raw_glob = make_shards(d)
    llmc = sorted(pathlib.Path(d / "shards").glob("sample_llmc_*.bin"))
    raw = sorted(pathlib.Path(d / "shards").glob("sample_raw_*.bin"))
    assert len(llmc) == len(raw) == -(-len(text) // SHARD_TOKENS), (len(llmc), len(raw))
    tokens = []
    for path in llmc:
        header = np.fromfile(path, dtype="<i4", count=256)
        assert tuple(header[:2]) == (20240520, 1) and not header[3:].any(), header[:4]
        t = np.fromfile(path, dtype="<u2", offset=1024)
        assert header[2] == len(t) and path.stat().st_size == 1024 + 2 * len(t)
        tokens.append(t)
    assert np.array_equal(np.concatenate(tokens), np.frombuffer(text, dtype=np.uint8))
    raw_tokens = np.concatenate([np.fromfile(p, dtype="<u2") for p in raw])
    assert np.array_equal(raw_tokens, np.frombuffer(text, dtype=np.uint8))


def formats_give_identical_runs(d):
    """The same tokens in both formats train identically; the report names the shards."""
    text, llmc_glob, raw_glob = make_shards(d)
    # The last shard of the text holds the remainder: read the full ones only.
    full = len(text) // SHARD_TOKENS
    llmc_glob = llmc_glob.replace("*", "00000[0-%d]" % (full - 1))
    raw_glob = raw_glob.replace("*", "00000[0-%d]" % (full - 1))
    a = measure(d, "llmc", ["--data", llmc_glob])
    b = measure(d, "raw", ["--data", raw_glob, "--data-format", "raw-u16"])
    assert a["steps"]["loss"] == b["steps"]["loss"], (a["steps"]["loss"], b["steps"]["loss"])
    assert a["warmup_steps"]["loss"] == b["warmup_steps"]["loss"]
    synthetic = measure(d, "synthetic", [])
    assert synthetic["data"]["kind"] == "synthetic" and synthetic["steps"]["loss"] != a["steps"]["loss"]
    for report, fmt in ((a, "llmc"), (b, "raw-u16")):
        data = report["data"]
        assert data["kind"] == "token_shards" and len(data["shards"]) == full, data
        for s in data["shards"]:
            assert s["format"] == fmt
            assert s["size_bytes"] == os.path.getsize(s["path"])
            assert s["content_hash"] == content_hash(s["path"]), (s, content_hash(s["path"]))
            assert s["tokens"] == SHARD_TOKENS and s["rows"] == 40
        # warmup + measured steps, B*T tokens each (the op breakdown's extra steps come after the count)
        assert data["tokens_consumed"] == (1 + 3) * 4 * 64, data["tokens_consumed"]
        assert len(report["steps"]["data_ms"]) == 3
        assert report["timing"]["data_pct_of_dt"] >= 0


def parity_with_pytorch_on_shards(d):
    """scripts/reference.py replays the documented row order in numpy: same losses."""
    _, llmc_glob, _ = make_shards(d)
    out = d / "p"
    run([LADDER, "measure", "--device", "cpu", "--rung", "fp32", "--preset", "tiny", "--steps", "5", "--warmup", "0",
         "--threads", "2", "--out", str(out), "--quiet", "--save-init", str(out / "init.pt"),
         "--data", llmc_glob.replace("*", "00000[0-2]")])
    p = run([PYTHON, str(ROOT / "scripts" / "reference.py"), "parity", "--report", str(out / "fp32" / "report.json"),
             "--init", str(out / "init.pt"), "--steps", "5", "--rtol", "1e-4"])
    assert "parity: PASS" in p.stdout, p.stdout


def prefetch_off_changes_nothing_but_timing(d):
    """Without the background producer the run sees the same batches; data time is recorded in both."""
    _, llmc_glob, _ = make_shards(d)
    data = ["--data", llmc_glob.replace("*", "00000[0-2]")]
    on = measure(d, "on", data)
    off = measure(d, "off", data, ["--no-prefetch"])
    assert on["steps"]["loss"] == off["steps"]["loss"]
    assert on["config"]["data"]["prefetch"] is True and off["config"]["data"]["prefetch"] is False
    assert on["data"]["prefetch"]["enabled"] is True and off["data"]["prefetch"]["enabled"] is False
    assert off["data"]["prefetch"]["batches_ready_on_request"] == 0
    assert on["data"]["prefetch"]["batches_not_predicted"] == 0
    for r in (on, off):
        assert all(0 <= x <= dt for x, dt in zip(r["steps"]["data_ms"], r["steps"]["dt_ms"]))


def run_matrix_on_shards(d):
    """`ladder run` passes --data to every cell; accumulation still matches one big step."""
    _, llmc_glob, _ = make_shards(d)
    out = d / "run"
    run([LADDER, "run", *TINY, "--rungs", "fp32,grad-accum", "--out", str(out), "--quiet",
         "--data", llmc_glob.replace("*", "00000[0-2]")])
    summary = validate(out / "summary.json")
    rows = {r["cell"]: r for r in summary["rows"]}
    assert rows["grad-accum"]["parity"]["status"] == "pass", rows["grad-accum"]["parity"]
    for cell in ("fp32", "grad-accum", "grad-accum.parity-single"):
        report = validate(out / cell / "report.json")
        assert report["data"]["kind"] == "token_shards", cell
    assert rows["fp32"]["data_pct_of_dt"] >= 0


CASES = {f.__name__: f for f in (script_round_trip, formats_give_identical_runs, parity_with_pytorch_on_shards,
                                  prefetch_off_changes_nothing_but_timing, run_matrix_on_shards)}

if __name__ == "__main__":
    run_case(CASES, sys.argv[2])
