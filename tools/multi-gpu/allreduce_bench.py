#!/usr/bin/env python3
"""NCCL all-reduce bus bandwidth on the GPUs CUDA_VISIBLE_DEVICES names, one process per GPU.

Bus bandwidth as nccl-tests defines it for all-reduce: algbw * 2(n-1)/n, algbw = bytes / time
(nccl-tests' doc/PERFORMANCE.md), so it compares with the link's peak whatever n is. With one GPU
there is nothing to move: busbw is 0 by that definition and only algbw is printed.

  allreduce_bench.py [--sizes-mib 8,64,512] [--iters 20]   (prints one JSON line per size)
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, sizes, iters, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    for mib in sizes:
        x = torch.ones(mib * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            dist.barrier()
            torch.cuda.synchronize()
            t = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        if rank == 0:
            med = statistics.median(times)
            algbw = mib * 1024 * 1024 / med / 1e9
            out.put({"gpus": world, "size_mib": mib, "median_s": med, "min_s": min(times), "max_s": max(times),
                     "algbw_gbs": algbw, "busbw_gbs": algbw * 2 * (world - 1) / world,
                     "nccl_p2p_disable": os.environ.get("NCCL_P2P_DISABLE", "0")})
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes-mib", default="8,64,512")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--port", type=int, default=29511)
    a = ap.parse_args()
    world = torch.cuda.device_count()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    mp.spawn(run, args=(world, [int(s) for s in a.sizes_mib.split(",")], a.iters, a.port, out), nprocs=world)
    while not out.empty():
        print(json.dumps(out.get()))


if __name__ == "__main__":
    main()
