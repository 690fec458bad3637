"""Data-parallel policy training over processes and hosts (`jax.distributed`).

Every process runs the same `train` on the same recipe: it builds the same problem
pool (generated from the seed), draws the same G graphs and latent keys each step, and
holds a copy of the parameters and optimizer state. The compiled step runs on a 1-D
mesh over the devices of all processes; the step's G graphs (and their P samples
each) are split along it, so every device samples, scores and differentiates its
G / devices graphs. The devices' parameter gradients are summed as one flat vector
(one all-reduce: NCCL on GPUs, gloo on CPUs) before the one optimizer update every
process applies. The result is the single-process run's up to the order of that
float32 sum.

Process 0 alone reads and writes the run folder (checkpoints, metrics, export); a
resumed run's state goes from process 0 to the others (`sync`), so hosts need no
shared file system (only the recipe, and any `expert` or `init` file it names).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.errors import JaxplaceError

#: The environment variables read when the command-line flags are absent
#: (`JAX_COORDINATOR_ADDRESS` is also JAX's own).
ENV = {"coordinator": "JAX_COORDINATOR_ADDRESS", "num_processes": "JAX_NUM_PROCESSES",
       "process_id": "JAX_PROCESS_ID"}

AXIS = "batch"


@dataclass(frozen=True)
class Cluster:
    """Where this process sits: the coordinator's HOST:PORT (process 0 listens there),
    the number of processes and this process's id (0 .. num_processes - 1)."""

    coordinator: str
    num_processes: int
    process_id: int


def _int(value, field: str, lo: int) -> int:
    try:
        v = int(str(value).strip())
    except ValueError:
        raise JaxplaceError(f"expected an integer, got {value!r}", field=field) from None
    if v < lo:
        raise JaxplaceError(f"must be at least {lo}, got {v}", field=field)
    return v


def cluster_from(coordinator=None, num_processes=None, process_id=None,
                 environ=None) -> Cluster | None:
    """The cluster given by the arguments, each falling back to its variable in `ENV`;
    None when none of the three is given (a single-process run)."""
    environ = os.environ if environ is None else environ
    given = {"coordinator": coordinator, "num_processes": num_processes,
             "process_id": process_id}
    values = {k: v if v is not None else environ.get(ENV[k]) for k, v in given.items()}
    if all(v in (None, "") for v in values.values()):
        return None
    for k, v in values.items():
        if v in (None, ""):
            raise JaxplaceError(f"missing (--{k.replace('_', '-')} or {ENV[k]}): a "
                                "distributed run needs the coordinator, the number of "
                                "processes and this process's id", field=k)
    host, sep, port = str(values["coordinator"]).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise JaxplaceError(f"must be HOST:PORT, got {values['coordinator']!r}",
                            field="coordinator")
    n = _int(values["num_processes"], "num_processes", 1)
    i = _int(values["process_id"], "process_id", 0)
    if i >= n:
        raise JaxplaceError(f"must be below num_processes ({n}), got {i}", field="process_id")
    return Cluster(str(values["coordinator"]), n, i)


def initialize(cluster: Cluster, timeout_s: int = 300) -> None:
    """`jax.distributed.initialize` for `cluster`; call it before anything runs on JAX.

    On CPUs the processes exchange gradients through gloo (JAX's default CPU
    collectives, set here should the configuration say otherwise); GPUs use NCCL."""
    if jax.config.jax_cpu_collectives_implementation in (None, "", "none"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(cluster.coordinator, cluster.num_processes,
                                   cluster.process_id, initialization_timeout=timeout_s)
    except (RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise JaxplaceError(f"cannot join {cluster.coordinator} as process "
                            f"{cluster.process_id} of {cluster.num_processes} ({first})",
                            field="coordinator") from None


class DataParallel:
    """The mesh of a data-parallel run and the moves of its state between this
    process's arrays and the global arrays of the compiled step."""

    def __init__(self, config: dict):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), (AXIS,))
        self.devices = self.mesh.size
        self.primary = jax.process_index() == 0
        # first, while every process is still here to answer: a process with another
        # recipe would otherwise fail alone, or train on other data
        self.check_equal(np.frombuffer(json.dumps(config, sort_keys=True).encode(),
                                       np.uint8), "config")
        graphs = config["graphs"]
        if graphs % self.devices:
            raise JaxplaceError(f"must be a multiple of the {self.devices} devices of the "
                                f"{jax.process_count()} processes (each device takes an "
                                f"equal share of a step's graphs), got {graphs}",
                                field="graphs")
        self._batch = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec(AXIS))
        self._replicated = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec())

    @classmethod
    def for_run(cls, config: dict) -> DataParallel | None:
        """The data-parallel setting of a run of the recipe `config` (its JSON) when
        `jax.distributed` joined several processes, else None (the single-process
        path). JaxplaceError when the processes were given different recipes, or when
        the devices cannot share the step's graphs evenly."""
        return cls(config) if jax.process_count() > 1 else None

    def shard(self, x):
        """Inside the compiled step: split an array's leading (graph) axis over the mesh."""
        return jax.lax.with_sharding_constraint(x, self._batch)

    def vjp(self, apply, params, inputs):
        """`jax.vjp(lambda p: apply(p, inputs), params)` with `inputs` (leading graph
        axis G) split over the devices. Each device differentiates its own graphs into
        its own copy of the gradient, and the copies are summed as one flat vector:
        one all-reduce per step (XLA's CPU runtime runs an all-reduce of many arrays
        as one gloo call per array, each a round trip)."""
        D = self.devices

        def split(a):
            return self.shard(a.reshape(D, a.shape[0] // D, *a.shape[1:]))

        def merge(a):
            return a.reshape(a.shape[0] * a.shape[1], *a.shape[2:])

        per_device = jax.tree.map(lambda a: self.shard(jnp.broadcast_to(a, (D, *a.shape))),
                                  params)
        out, back = jax.vjp(lambda q: jax.vmap(apply)(q, jax.tree.map(split, inputs)),
                            per_device)

        def vjp(cotangent):
            (grads,) = back(jax.tree.map(split, cotangent))
            leaves, treedef = jax.tree.flatten(grads)
            flat = self.shard(jnp.concatenate([g.reshape(D, -1) for g in leaves], 1))
            total = jnp.sum(flat, 0)
            ends = np.cumsum([0] + [int(np.prod(g.shape[1:])) for g in leaves])
            return (jax.tree.unflatten(treedef, [
                total[lo:hi].reshape(g.shape[1:]).astype(g.dtype)
                for g, lo, hi in zip(leaves, ends[:-1], ends[1:], strict=True)]),)

        return jax.tree.map(merge, out), vjp

    def replicate(self, tree):
        """This process's copy (equal on every process) as global replicated arrays."""
        return jax.tree.map(
            lambda a: jax.make_array_from_process_local_data(self._replicated, np.asarray(a)),
            tree)

    def local(self, tree):
        """Global arrays back as this process's own (for validation, checkpoints)."""
        from jax.experimental import multihost_utils

        def one(a):
            if a.is_fully_replicated:
                return jnp.asarray(np.asarray(a.addressable_data(0)))
            return jnp.asarray(multihost_utils.process_allgather(a, tiled=True))

        return jax.tree.map(one, tree)

    def wrap(self, run):
        """The train chunk `run(state, pool)` on this process's state; `pool` is
        already global (`replicate`, once per run)."""
        def call(state, pool):
            new, metrics = run(self.replicate(state), pool)
            return self.local(new), self.local(metrics)

        return call

    def sync(self, tree):
        """Process 0's values of `tree` on every process (a resumed state)."""
        from jax.experimental import multihost_utils

        return jax.tree.map(jnp.asarray, multihost_utils.broadcast_one_to_all(tree))

    def check_equal(self, tree, what: str) -> None:
        """JaxplaceError unless `tree` is the same on every process."""
        from jax.experimental import multihost_utils

        leaves = [np.asarray(x) for x in jax.tree.leaves(tree)]
        ok = multihost_utils.process_allgather(
            np.array([_digest(leaves)], np.uint32))  # (processes, 1)
        if not np.all(ok == ok[0]):
            raise JaxplaceError(f"differs between processes (digests {ok.ravel().tolist()})",
                                field=what)


def _digest(leaves) -> int:
    h = hashlib.sha256()
    for a in leaves:
        h.update(json.dumps([str(a.dtype), a.shape]).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return int.from_bytes(h.digest()[:4], "little")


class NoLog:
    """The metrics log of a process other than 0: it writes nothing."""

    wall = 0.0

    def write(self, record: dict) -> None:
        pass
