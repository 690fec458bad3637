"""Host batching: pad a population, cut it into memory-bounded chunks, shard each.

One path for single-graph (P, width) and multi-graph (G, P, width) populations: the
population axis is `axis`, everything before it is carried along. Chunks have a
bucketed power-of-two length, so repeated calls with similar P reuse one compiled
program; each chunk is sharded over the given devices along the population axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import numpy as np

from jaxplace.decoder import lanes
from jaxplace.decoder.layout import Spec, bucket

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
    """

    chunk_size: int | None = None
    devices: tuple | None = None
    memory_budget: int = DEFAULT_MEMORY_BUDGET

    @staticmethod
    def of(chunk_size=None, devices: Sequence | None = None,
           memory_budget: int = DEFAULT_MEMORY_BUDGET) -> Batching:
        return Batching(chunk_size, None if devices is None else tuple(devices),
                        memory_budget)


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


def run_batched(run_chunk: Callable, Z: np.ndarray, *, spec: Spec, itemsize: int,
                batching: Batching, axis: int = 0, pad_row=None) -> np.ndarray:
    """float64 costs of shape Z.shape[:axis + 1] from `run_chunk(z, mesh)` per chunk.

    Z holds candidates along `axis` (rows of width columns after it); padded rows
    get `pad_row` (default zeros) so that they are valid candidates.
    """
    P = Z.shape[axis]
    groups = math.prod(Z.shape[:axis])
    mesh, ndev = make_mesh(batching.devices)
    first = (jax.devices() if batching.devices is None else batching.devices)[0]
    cache = CACHE_BYTES if first.platform == "cpu" else None
    chunk = batching.chunk_size or chunk_size_for(
        spec, itemsize, batching.memory_budget // max(groups, 1), ndev, cache)
    chunk = -(-chunk // ndev) * ndev
    size, count = pop_batches(P, chunk, ndev)
    lead = (slice(None),) * axis
    Zp = np.zeros(Z.shape[:axis] + (size * count,) + Z.shape[axis + 1:], dtype=Z.dtype)
    Zp[lead + (slice(0, P),)] = Z
    if pad_row is not None:
        Zp[lead + (slice(P, None),)] = pad_row
    out = []
    for i in range(count):
        z = Zp[lead + (slice(i * size, (i + 1) * size),)]
        if mesh is not None:
            from jax.sharding import NamedSharding
            from jax.sharding import PartitionSpec as PS

            z = jax.device_put(z, NamedSharding(mesh, PS(*([None] * axis), "pop")))
        out.append(run_chunk(z, mesh))
    costs = np.concatenate([np.asarray(o, dtype=np.float64) for o in out], axis=axis)
    return costs[lead + (slice(0, P),)]


__all__ = ["Batching", "CACHE_BYTES", "DEFAULT_MEMORY_BUDGET", "bytes_per_candidate",
           "chunk_size_for", "make_mesh", "pop_batches", "run_batched"]
