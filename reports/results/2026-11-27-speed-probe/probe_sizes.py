"""The speed probe's sizes, measured: for each candidate GEMM size and sweep
size on this CPU, the time of one repetition and how much repetitions of the
same probe vary (CV), over several probes in one process.

    .venv/bin/python reports/results/2026-11-27-speed-probe/probe_sizes.py

The same ATen kernels as ladder's probe (bench/speed_probe.cpp): torch.mm into
a preallocated output, and an in-place neg_ over a float buffer.
"""
import statistics
import time

import torch


def reps_ms(op, reps):
    op()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        op()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main():
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {torch.backends.cpu.get_cpu_capability()}")
    print("kind   size        ms/rep (median)  CV of reps %  CV of probe medians %  (7 reps, 8 probes)")
    for n in (256, 512, 1024, 2048):
        a = torch.linspace(-1, 1, n * n).reshape(n, n)
        b = a.t().contiguous()
        c = torch.empty_like(a)
        medians, cvs = [], []
        for _ in range(8):
            r = reps_ms(lambda: torch.mm(a, b, out=c), 7)
            medians.append(statistics.median(r))
            cvs.append(statistics.stdev(r) / statistics.mean(r) * 100)
        print(f"gemm   {n:<10}  {statistics.median(medians):10.2f}       {statistics.median(cvs):8.1f}"
              f"      {statistics.stdev(medians) / statistics.mean(medians) * 100:8.1f}")
    for mib in (8, 32, 64, 256):
        buf = torch.ones(mib * (1 << 20) // 4)
        medians, cvs = [], []
        for _ in range(8):
            r = reps_ms(lambda: buf.neg_(), 7)
            medians.append(statistics.median(r))
            cvs.append(statistics.stdev(r) / statistics.mean(r) * 100)
        gbs = 2 * mib * (1 << 20) / (statistics.median(medians) * 1e6)
        print(f"sweep  {mib:>4} MiB    {statistics.median(medians):10.2f}       {statistics.median(cvs):8.1f}"
              f"      {statistics.stdev(medians) / statistics.mean(medians) * 100:8.1f}   ({gbs:.1f} GB/s)")


if __name__ == "__main__":
    main()
