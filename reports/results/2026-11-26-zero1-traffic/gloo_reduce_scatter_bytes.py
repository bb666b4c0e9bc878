# What c10d Gloo's reduce-scatter puts on the wire, against its all-reduce and all-gather:
# two ranks on loopback, the loopback interface's tx bytes per collective of a 40 MB tensor.
# .venv/bin/python reports/results/2026-11-26-zero1-traffic/gloo_reduce_scatter_bytes.py
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def lo_tx():
    for line in open("/proc/net/dev"):
        if line.strip().startswith("lo:"):
            return int(line.split(":")[1].split()[8])
def work(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29777")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    n = 10_000_000  # 40 MB
    x = torch.ones(n); out = torch.empty(n // world)
    res = {}
    for name, op in (("all_reduce", lambda: dist.all_reduce(x)),
                     ("reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(out, x)),
                     ("all_gather_into_tensor", lambda: dist.all_gather_into_tensor(x, out))):
        op(); dist.barrier()
        t0 = lo_tx()
        for _ in range(5): op()
        dist.barrier(); t1 = lo_tx()
        res[name] = (t1 - t0) / 5 / 1e6
    if rank == 0:
        print(f"loopback bytes per op, both ranks together (MB), payload {4*n/1e6:.0f} MB: {res}")
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.spawn(work, args=(2,), nprocs=2)
