"""Host batching: pad a population, cut it into memory-bounded chunks, shard each.

One path for single-graph (P, width) and multi-graph (G, P, width) populations: the
population axis is `axis`, everything before it is carried along. Chunks have a
bucketed power-of-two length, so repeated calls with similar P reuse one compiled
program; each chunk is sharded over the given devices along the population axis.
On one CPU device (a plain Python process: XLA exposes one host device however many
cores there are) the chunks run on a pool of host threads instead, one per core:
XLA's CPU runtime executes a while-loop program on the calling thread, so a single
call uses one core.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import numpy as np

from jaxplace.decoder import _lanes as lanes
from jaxplace.decoder.layout import Spec, bucket
from jaxplace.errors import JaxplaceError

#: Default device-memory budget for one chunk of the population, in bytes.
DEFAULT_MEMORY_BUDGET = 1 << 30
#: Per-chunk DP-table size the default chunking aims for on CPUs (it is reread every
#: step, so it should stay in cache; measured best on a 2-core EPYC with 1 MiB L2,
#: 32 MiB L3). Accelerators get no such cap: on an H100 a chunk of 256 candidates
#: scored 45k/s and one of 8,192 474k/s.
CACHE_BYTES = 4 << 20


@dataclass(frozen=True)
class Batching:
    """How a population is cut and placed.

    Attributes:
        chunk_size: candidates per compiled call (default: the largest power of two
            within `memory_budget`, on CPUs also with its DP table near CACHE_BYTES).
        devices: devices to shard each chunk over (None: all of `jax.devices()`).
        memory_budget: bytes of device memory one chunk may use.
        threads: host threads running chunks at once on a single CPU device (None:
            one per core this process may use; 1: one chunk after another).
    """

    chunk_size: int | None = None
    devices: tuple | None = None
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    threads: int | None = None

    @staticmethod
    def of(chunk_size=None, devices: Sequence | None = None,
           memory_budget: int = DEFAULT_MEMORY_BUDGET, threads: int | None = None
           ) -> Batching:
        if threads is not None and int(threads) < 1:
            raise JaxplaceError(f"must be at least 1, got {threads}", field="threads")
        return Batching(chunk_size, None if devices is None else tuple(devices),
                        memory_budget, None if threads is None else int(threads))


def usable_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)


def bytes_per_candidate(spec: Spec, itemsize: int) -> int:
    """Estimated device bytes one candidate needs while being scored."""
    # the simple (vmapped) path holds about as much per candidate as the lanes one
    return 2 * lanes.bytes_per_candidate(spec, itemsize)


def chunk_size_for(spec: Spec, itemsize: int, budget: int = DEFAULT_MEMORY_BUDGET,
                   multiple: int = 1, cache_bytes: int | None = CACHE_BYTES) -> int:
    """Largest power-of-two chunk (a multiple of `multiple`) within `budget` bytes,
    and with its DP table within `cache_bytes` unless that is None."""
    c = max(budget // max(bytes_per_candidate(spec, itemsize), 1), 1)
    if cache_bytes is not None:  # the DP rereads its table every step
        c = min(c, max(cache_bytes // (lanes.table_rows(spec) * (spec.N + 1) * itemsize), 8))
    c = 1 << (int(c).bit_length() - 1)
    return max(c, multiple) // multiple * multiple


def make_mesh(devices: Sequence | None):
    """(Mesh over `devices` with axis "pop", or None for one device; device count)."""
    from jax.sharding import Mesh

    devs = list(jax.devices() if devices is None else devices)
    if len(devs) == 1:
        return None, 1
    return Mesh(np.array(devs), ("pop",)), len(devs)


def pop_batches(P: int, chunk: int, multiple: int) -> tuple[int, int]:
    """(padded chunk length, number of chunks) for a population of P."""
    if P <= chunk:
        size = min(bucket(P, minimum=multiple), chunk) if P > multiple else multiple
        size = -(-size // multiple) * multiple
        return size, 1
    return chunk, -(-P // chunk)


@dataclass(frozen=True)
class ChunkPlan:
    """How one population is cut: `count` chunks of `size` rows, `threads` of them
    at once (single CPU device), each sharded over `mesh` (None: one device)."""

    size: int
    count: int
    threads: int
    mesh: object


def plan_chunks(P: int, *, spec: Spec, itemsize: int, batching: Batching,
                groups: int = 1) -> ChunkPlan:
    """The chunks of a population of P candidates (of `groups` graphs each)."""
    mesh, ndev = make_mesh(batching.devices)
    first = (jax.devices() if batching.devices is None else batching.devices)[0]
    on_cpu = first.platform == "cpu"
    cache = CACHE_BYTES if on_cpu else None
    chunk = batching.chunk_size or chunk_size_for(
        spec, itemsize, batching.memory_budget // max(groups, 1), ndev, cache)
    chunk = -(-chunk // ndev) * ndev
    threads = 1
    if mesh is None and on_cpu:
        threads = batching.threads or usable_cores()
        if batching.chunk_size is None and threads > 1:
            # at least one chunk per thread (not below 8 rows: dispatch overhead)
            chunk = min(chunk, max(bucket(-(-P // threads), minimum=8), 8))
    size, count = pop_batches(P, chunk, ndev)
    return ChunkPlan(size, count, min(threads, count), mesh)


def run_batched(run_chunk: Callable, Z: np.ndarray, *, spec: Spec, itemsize: int,
                batching: Batching, axis: int = 0, pad_row=None) -> np.ndarray:
    """float64 costs of shape Z.shape[:axis + 1] from `run_chunk(z, mesh)` per chunk.

    Z holds candidates along `axis` (rows of width columns after it); padded rows
    get `pad_row` (default zeros) so that they are valid candidates.
    """
    P = Z.shape[axis]
    plan = plan_chunks(P, spec=spec, itemsize=itemsize, batching=batching,
                       groups=math.prod(Z.shape[:axis]))
    size, count, mesh = plan.size, plan.count, plan.mesh
    lead = (slice(None),) * axis
    Zp = np.zeros(Z.shape[:axis] + (size * count,) + Z.shape[axis + 1:], dtype=Z.dtype)
    Zp[lead + (slice(0, P),)] = Z
    if pad_row is not None:
        Zp[lead + (slice(P, None),)] = pad_row
    chunks = [Zp[lead + (slice(i * size, (i + 1) * size),)] for i in range(count)]
    if plan.threads > 1:
        out = _threaded(run_chunk, chunks, plan.threads)
    else:
        out = []
        for z in chunks:
            if mesh is not None:
                from jax.sharding import NamedSharding
                from jax.sharding import PartitionSpec as PS

                z = jax.device_put(z, NamedSharding(mesh, PS(*([None] * axis), "pop")))
            out.append(run_chunk(z, mesh))
    costs = np.concatenate([np.asarray(o, dtype=np.float64) for o in out], axis=axis)
    return costs[lead + (slice(0, P),)]


def _threaded(run_chunk: Callable, chunks: list, threads: int) -> list:
    """`run_chunk(z, None)` of every chunk on `threads` host threads, in order.

    Each worker waits for its chunk's result, so the threads keep that many XLA
    executions in flight at once; the caller's x64 setting (thread-local in JAX) is
    carried into them.
    """
    from concurrent.futures import ThreadPoolExecutor

    x64 = bool(jax.config.jax_enable_x64)

    def one(z):
        with jax.enable_x64(x64):
            return np.asarray(run_chunk(z, None), dtype=np.float64)

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="jaxplace-chunk") as ex:
        return list(ex.map(one, chunks))


__all__ = ["Batching", "CACHE_BYTES", "ChunkPlan", "DEFAULT_MEMORY_BUDGET",
           "bytes_per_candidate", "chunk_size_for", "make_mesh", "plan_chunks", "pop_batches",
           "run_batched", "usable_cores"]
