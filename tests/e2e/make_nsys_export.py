#!/usr/bin/env python3
"""tests/e2e/make_nsys_export.py: a small `nsys export --type sqlite` file, made to
NVIDIA's documented schema (Nsight Systems' "SQLite Export Schema Reference"),
for `ladder nsys-import`'s tests.

usage: make_nsys_export.py OUT.sqlite [--pids N]

Only the tables and columns the reader uses, as documented: StringIds;
CUPTI_ACTIVITY_KIND_KERNEL (demangledName a StringIds id, globalPid),
CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_RUNTIME (globalTid,
correlationId), NVTX_EVENTS (eventType 59 push/pop, text or textId).
globalTid = pid << 24 | tid, globalPid = pid << 24.

Each process (rank) runs two 50 ms steps of an eager ddp-like rung; its main
thread opens the phase ranges, its autograd thread the backward's layer
ranges and the all-reduce bucket range. Per step, by construction (ms):
  bands:  gemm 6, elementwise_norm 2, communication 2, optimizer 2, memcpy_memset 1 (a
          fill kernel counts as a memset, as in ladder's own tables)
  phases: data 0.5, forward 3, backward 5, communication 2, optimizer 2, outside 0.5
  layers: forward/layer 0 2, forward/layer 1 1, backward/layer 1 4, backward/layer 0 1
  device busy 13 of a 48 ms span (first start to last end); step dt 50.
Process k's kernels are k+1 times as long in backward (a slow rank), and one
kernel runs after the steps (left out). The expected figures are EXPECTED.
"""
import argparse
import sqlite3

MS = 1_000_000
MAIN, AUTOGRAD = 100, 101

SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
  contextId INT NOT NULL, streamId INT NOT NULL, correlationId INT, globalPid INT, demangledName INT NOT NULL,
  shortName INT NOT NULL, mangledName INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,
  contextId INT NOT NULL, streamId INT NOT NULL, correlationId INT, globalPid INT, bytes INT NOT NULL,
  copyKind INT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT NOT NULL, end INT NOT NULL, eventClass INT NOT NULL,
  globalTid INT, correlationId INT, nameId INT NOT NULL, returnValue INT NOT NULL, callchainId INT);
CREATE TABLE NVTX_EVENTS (start INT NOT NULL, end INT, eventType INT NOT NULL, rangeId INT, category INT,
  color INT, text TEXT, globalTid INT, endGlobalTid INT, textId INT, domainId INT, uint64Value INT,
  int64Value INT, doubleValue REAL, uint32Value INT, int32Value INT, floatValue REAL, jsonTextId INT,
  jsonText TEXT);
"""


def expected(k):
    """Process k's figures per step (ms): bands, phases, layers."""
    slow = k + 1  # backward kernels k+1 times as long
    return {
        "bands": {"gemm": 2 + 4 * slow, "elementwise_norm": 1 + 1 * slow, "communication": 2, "optimizer": 2,
                  "memcpy_memset": 1.0},
        "phases": {"data": 0.5, "forward": 3, "backward": 5 * slow, "communication": 2, "optimizer": 2,
                   "outside": 0.5},
        "layers": {"forward/layer 0": 2, "forward/layer 1": 1, "backward/layer 1": 4 * slow,
                   "backward/layer 0": 1 * slow},
        "dt": 50.0,
    }


def write(path, pids):
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    strings = {}

    def sid(s):
        if s not in strings:
            strings[s] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
        return strings[s]

    corr = [0]

    def launch(pid, tid, at, start, end, name, table="CUPTI_ACTIVITY_KIND_KERNEL"):
        corr[0] += 1
        gtid, gpid = pid << 24 | tid, pid << 24
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, 0)",
                   (at, at + MS // 100, gtid, corr[0], sid("cudaLaunchKernel_v7000")))
        if table == "CUPTI_ACTIVITY_KIND_KERNEL":
            db.execute(f"INSERT INTO {table} VALUES (?, ?, 0, 1, 7, ?, ?, ?, ?, 0)",
                       (start, end, corr[0], gpid, sid(name), sid(name.split("<")[0])))
        else:
            db.execute(f"INSERT INTO {table} VALUES (?, ?, 0, 1, 7, ?, ?, 4096, 1)", (start, end, corr[0], gpid))

    def rng(pid, tid, name, start, end, registered=False):
        gtid = pid << 24 | tid
        if registered:  # a registered string: textId, no text
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId) VALUES (?, ?, 59, ?, ?)",
                       (start, end, gtid, sid(name)))
        else:
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)",
                       (start, end, name, gtid))

    for k in range(pids):
        pid, slow = 4000 + k, k + 1
        ms = lambda x: int(round(x * MS))  # noqa: E731
        rng(pid, MAIN, "measured steps", 0, ms(200))
        for step in range(2):
            b = step * 100
            rng(pid, MAIN, "step ddp", ms(b), ms(b + 50))
            rng(pid, MAIN, "data", ms(b), ms(b + 2), registered=True)
            launch(pid, MAIN, ms(b + 1), ms(b + 1.5), ms(b + 2), "", "CUPTI_ACTIVITY_KIND_MEMCPY")
            rng(pid, MAIN, "forward", ms(b + 2), ms(b + 20))
            rng(pid, MAIN, "layer 0", ms(b + 2), ms(b + 10))
            launch(pid, MAIN, ms(b + 3), ms(b + 3), ms(b + 5), "sm90_xmma_gemm_f32f32_tn_n_tilesize128x128x32<float>")
            rng(pid, MAIN, "layer 1", ms(b + 10), ms(b + 20))
            launch(pid, MAIN, ms(b + 11), ms(b + 11), ms(b + 12),
                   "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>")
            rng(pid, MAIN, "backward", ms(b + 20), ms(b + 40))
            # The autograd thread: only its layer ranges, and the bucket's.
            rng(pid, AUTOGRAD, "layer 1", ms(b + 21), ms(b + 30))
            launch(pid, AUTOGRAD, ms(b + 22), ms(b + 22), ms(b + 22 + 4 * slow), "ampere_sgemm_128x64_nn")
            rng(pid, AUTOGRAD, "layer 0", ms(b + 30), ms(b + 38))
            launch(pid, AUTOGRAD, ms(b + 31), ms(b + 31), ms(b + 31 + 1 * slow),
                   "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl>")
            rng(pid, AUTOGRAD, "all-reduce bucket 0", ms(b + 37), ms(b + 37.5))
            launch(pid, AUTOGRAD, ms(b + 37.2), ms(b + 37.2), ms(b + 39.2),
                   "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
            rng(pid, MAIN, "optimizer", ms(b + 40), ms(b + 48))
            launch(pid, MAIN, ms(b + 41), ms(b + 41), ms(b + 43),
                   "void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor>")
            launch(pid, MAIN, ms(b + 49), ms(b + 49), ms(b + 49.5),
                   "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>")
        # After the steps: left out.
        launch(pid, MAIN, ms(300), ms(300), ms(301), "ampere_sgemm_128x64_nn")
    db.commit()
    db.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--pids", type=int, default=1, choices=(1, 2))
    a = ap.parse_args()
    write(a.out, a.pids)
