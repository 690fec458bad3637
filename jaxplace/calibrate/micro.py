"""Microbenchmarks of this machine for a device profile, with torch on one thread.

- matrix peak: square fp32 matmuls of several sizes, the best FLOP rate;
- vector peak: `exp` on an in-cache tensor (the roofline counts 4 FLOPs per
  transcendental element);
- memory bandwidth: a skinny matmul (16 rows) against a weight far larger than the
  caches, bytes moved over time: the rate at which a layer streams its weights, which
  is what memory-bound layers of a network wait on (a plain `add` of large tensors
  streams faster, and is recorded as `raw["add_bw"]`);
- launch overhead: a tiny `add`, per op; backward launch: a chain of tiny ops'
  backward, per op;
- link: a gloo ping-pong between two local processes over message sizes (latency:
  the smallest message's one-way time; bandwidth from the large ones, `fit_link`).

Compute timings use the thread's CPU time (see `measure`), the link wall time (a
blocking receive uses no CPU); each figure is the best of `repeats`.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import asdict, dataclass

import numpy as np

from jaxplace.importers.roofline import TRANSCENDENTAL_FLOPS

MATMUL_SIZES = (64, 128, 256, 512)
LINK_BYTES = (4, 4096, 65536, 1 << 20, 4 << 20)


@dataclass(frozen=True)
class MicroResult:
    """The machine's measured rates (SI units) and the raw figures behind them."""

    matrix_flops: float
    vector_flops: float
    mem_bw: float
    launch_s: float
    backward_launch_s: float
    link_bw: float | None
    link_latency_s: float | None
    raw: dict

    def to_dict(self) -> dict:
        return asdict(self)

    def params(self) -> np.ndarray:
        """(matrix peak, vector peak, bandwidth, launch, backward launch)."""
        return np.array([self.matrix_flops, self.vector_flops, self.mem_bw, self.launch_s,
                         self.backward_launch_s])


def _best(fn, repeats: int, inner: int) -> float:
    """The best per-call CPU seconds of `fn` over `repeats` rounds of `inner` calls."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.thread_time()
        for _ in range(inner):
            fn()
        best = min(best, (time.thread_time() - t0) / inner)
    return best


def compute_rates(repeats: int = 5) -> dict:
    """Matrix, vector, memory and launch figures of this process on one thread."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        raw: dict = {"matmul_flops": {}}
        for n in MATMUL_SIZES:
            a, b = torch.randn(n, n), torch.randn(n, n)
            t = _best(lambda a=a, b=b: torch.mm(a, b), repeats, max(1, (512 // n) ** 2))
            raw["matmul_flops"][n] = 2.0 * n ** 3 / t
        x = torch.randn(1 << 16)
        raw["exp_s"] = _best(lambda: torch.exp(x), repeats, 20)
        big = 1 << 24  # 64 MiB per tensor: past any cache
        a, b, c = torch.randn(big), torch.randn(big), torch.empty(big)
        raw["add_bw"] = 3 * 4 * big / _best(lambda: torch.add(a, b, out=c), repeats, 2)
        del a, b, c
        m, n = 16, 4096  # a 64 MiB weight
        x, w = torch.randn(m, n), torch.randn(n, n)
        t = _best(lambda: torch.nn.functional.linear(x, w), repeats, 2)
        raw["stream_bw"] = 4.0 * (m * n + n * n + m * n) / t
        del x, w
        s1, s2 = torch.ones(1), torch.ones(1)
        raw["tiny_add_s"] = _best(lambda: torch.add(s1, s2), repeats, 2000)
        raw["tiny_backward_s"] = _tiny_backward(repeats)
    finally:
        torch.set_num_threads(old)
    return raw


def _tiny_backward(repeats: int, chain: int = 50) -> float:
    """Per-op seconds of the backward of a chain of tiny multiplications."""
    import torch

    w = torch.ones(1, requires_grad=True)

    def run():
        y = w
        for _ in range(chain):
            y = y * 1.0001
        t0 = time.thread_time()
        y.backward()
        return time.thread_time() - t0

    run()
    return min(run() for _ in range(max(repeats, 5) * 4)) / chain


def _link_worker(rank: int, port: int, sizes, repeats: int, out: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    try:
        res = {}
        for n in sizes:
            buf = torch.zeros(max(n // 4, 1))
            best = float("inf")
            for r in range(repeats + 2):
                dist.barrier()
                t0 = time.perf_counter()
                if rank == 0:
                    dist.send(buf, 1)
                    dist.recv(buf, 1)
                else:
                    dist.recv(buf, 0)
                    dist.send(buf, 0)
                if r >= 2:
                    best = min(best, (time.perf_counter() - t0) / 2)
            res[n] = best
        if rank == 0:
            torch.save(res, out)
    finally:
        dist.destroy_process_group()


def link_rates(repeats: int = 10, sizes=LINK_BYTES, timeout: float = 120.0) -> dict:
    """One-way seconds per message size between two local gloo processes, and the
    fitted latency (s) and bandwidth (bytes/s)."""
    import torch
    import torch.multiprocessing as mp

    from jaxplace.torch.processes import free_port, wait_for

    with tempfile.TemporaryDirectory(prefix="jaxplace-link-") as d:
        out = os.path.join(d, "link.pt")
        ctx = mp.start_processes(_link_worker, args=(free_port(), tuple(sizes), repeats, out),
                                 nprocs=2, join=False, start_method="spawn")
        wait_for(ctx, timeout, "the link benchmark", "the link benchmark's process failed")
        one_way = torch.load(out)
    return {"one_way_s": {int(n): float(t) for n, t in sorted(one_way.items())},
            **fit_link(one_way)}


def fit_link(one_way: dict) -> dict:
    """Latency: the smallest message's one-way time; bandwidth: the median over the
    messages of 64 KiB and more of bytes / (time - latency) (a median, since one late
    message on a shared machine would tilt a fitted line)."""
    sizes = sorted(one_way)
    latency = float(one_way[sizes[0]])
    rates = [n / (one_way[n] - latency) for n in sizes if n >= 65536 and
             one_way[n] > latency]
    return {"latency_s": latency,
            "bandwidth": float(np.median(rates)) if rates else float("inf")}


def run_microbenchmarks(*, repeats: int = 5, link: bool = True) -> MicroResult:
    """Every microbenchmark (the link one spawns two processes; `link=False` skips it)."""
    raw = compute_rates(repeats)
    lk = link_rates() if link else None
    if lk is not None:
        raw["link"] = lk
    return MicroResult(
        matrix_flops=max(raw["matmul_flops"].values()),
        vector_flops=TRANSCENDENTAL_FLOPS * (1 << 16) / raw["exp_s"],
        mem_bw=raw["stream_bw"],
        launch_s=raw["tiny_add_s"], backward_launch_s=raw["tiny_backward_s"],
        link_bw=None if lk is None else lk["bandwidth"],
        link_latency_s=None if lk is None else lk["latency_s"], raw=raw)
