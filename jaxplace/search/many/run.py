"""The host loop of one `search_many` bucket: compiled chunks, streaming, stops.

Between chunks it reads every problem's phase and best (small arrays), hands out
the results of problems that reached DONE (decoded by the float64 reference, then
MIP-polished at k <= 4), refreshes the bottleneck pools of problems in their local
search at k >= FOCUS_MIN_K, and checks the time limit and the cancel event. On a
stop, every unfinished problem reports its best so far.

`run_bucket` runs a bucket's problems `group` at a time (`default_group`: one per
program call on CPUs, all on accelerators): the Ray executor's task body; the local
executor (`local`) hands the same groups to its threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.decoder.layout import stack_graphs
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.search.driver import DEADLINE_MARGIN
from jaxplace.search.many.program import DONE, LOCAL, ManyData, ManyProgram, many_chunk
from jaxplace.search.result import History, Result

#: Under a user's time limit, HiGHS seconds of a problem's MIP polish at most (the
#: per-problem default search allows 10, `objectives.throughput.polish.POLISH_MAX_TIME`):
#: on the regal-time suite 2 s gave the same cost as 10 s (0.9579x against 0.9577x C++
#: brkga-10000) for 40 s less HiGHS time over its 10 problems at k = 4. Without a time
#: limit only the node count bounds a polish.
MANY_POLISH_MAX_TIME = 2.0


class BucketRun:
    """One bucket's search (see the module doc); `results()` yields as it goes."""

    def __init__(self, members, bucket, settings, cancel: threading.Event | None):
        from jaxplace.objectives.throughput.search import (
            BRKGA_PATIENCE,
            FOCUS_MIN_K,
            PATIENCE,
        )
        from jaxplace.search.default import default_budget

        self.members, self.bucket, self.s = members, bucket, settings
        self.cancel = cancel or threading.Event()
        self._ready = None  # (data, state) once `compile` ran
        opts = dict(settings.options)
        P = settings.population
        self.program = ManyProgram(bucket.spec, P, bucket.window, **opts)
        self.budgets = [max(settings.budget or default_budget(m.problem, settings.time_limit,
                                                                   polish=settings.polish),
                            2 * P)
                        for m in members]
        self.focus = [m.problem.k >= FOCUS_MIN_K for m in members]
        self.brkga_patience = settings.brkga_patience or BRKGA_PATIENCE
        self.patience = settings.patience or PATIENCE
        self.hist = [([], [], []) for _ in members]
        #: called with the bucket's state after every chunk (jp.search's bar and
        #: observer, `jaxplace.objectives.throughput.bucket`); `state`: the last one
        self.on_chunk = None
        self.state = None

    # -- setup ------------------------------------------------------------------------

    def _data(self) -> ManyData:
        from jaxplace.search.programs import neighbour_table

        spec, s, P = self.bucket.spec, self.s, self.s.population
        W = spec.width
        _, g = stack_graphs([m.problem for m in self.members], spec=spec)
        tables = [neighbour_table(m.problem, W) for m in self.members]
        Dn = max(int(t.shape[1]) for t, _ in tables)
        nbr = np.zeros((len(tables), W, Dn), np.int32)
        for i, (t, _) in enumerate(tables):
            nbr[i, :, :t.shape[1]] = np.asarray(t)
        deg = np.stack([np.asarray(d) for _, d in tables])
        G = len(self.members)
        xs = np.zeros((G, W), np.float32)
        X0 = np.zeros((G, P, W), np.float32)
        mean, log_std = np.zeros((G, W), np.float32), np.zeros((G, W), np.float32)
        keys = []
        for i, m in enumerate(self.members):
            n = m.problem.n
            xs[i, :n] = m.x_seed
            # the seed alone, not the problem's place in the batch: a problem's result
            # does not depend on which other problems share the call
            key = jax.random.key(s.seed)
            k_init, k_run = jax.random.split(key)
            if m.dist is None:
                X0[i] = uniform_start(k_init, P, W)
            else:  # the policy's mode and samples (the default's policy+brkga phase)
                from jaxplace.policy import greedy_priorities, sample_priorities

                mean[i, :n], log_std[i, :n] = m.dist["mean"][:n], m.dist["log_std"][:n]
                dist = {"mean": mean[i], "log_std": log_std[i]}
                X0[i] = np.asarray(sample_priorities(dist, k_init, P))
                X0[i, 0, :n] = np.asarray(greedy_priorities(dist))[:n]
                X0[i, 0, n:] = 0.0
            keys.append(k_run)
        i32 = lambda v: jnp.asarray(np.asarray(v, np.int32))  # noqa: E731
        brkga = [max(int(b * s.brkga_share) // P, 1) * P for b in self.budgets]
        self.X0 = jnp.asarray(X0)
        return ManyData(
            g=g, nbr=jnp.asarray(nbr), deg=jnp.asarray(deg),
            nn=i32([m.problem.n for m in self.members]),
            pool=jnp.zeros((G, W), jnp.int32), pool_n=jnp.zeros((G,), jnp.int32),
            x_seed=jnp.asarray(xs),
            f_seed=jnp.asarray([m.f_seed for m in self.members], jnp.float32),
            budget=i32(self.budgets), brkga_evals=i32(brkga),
            brkga_patience=i32([self.brkga_patience] * G),
            patience=i32([self.patience] * G),
            target=jnp.asarray([m.lower_bound * (1 + 1e-6) for m in self.members],
                               jnp.float32),
            key=jnp.stack(keys), mean=jnp.asarray(mean), log_std=jnp.asarray(log_std),
            coupled=jnp.asarray([m.dist is not None for m in self.members]))

    def compile(self) -> None:
        """Build the bucket's device arrays and compile its program (a zero-step
        call), so that a later `results` spends its time searching."""
        data = self._data()
        state = jax.vmap(self.program.init_state)(self.X0, data.x_seed)
        jax.block_until_ready(many_chunk(self.program, data, state, jnp.int32(0)))
        self._ready = (data, state)

    # -- loop -------------------------------------------------------------------------

    def results(self, time_limit: float | None = None):
        """Yields (index, Result) as problems finish; `time_limit` (seconds from this
        call) replaces the settings' one when given."""
        if time_limit is not None:
            self.s = replace(self.s, time_limit=time_limit)
        if self._ready is None:
            self.compile()
        data, state = self._ready
        self._ready = None
        self.start = time.perf_counter()
        G = len(self.members)
        done = np.zeros(G, bool)
        best_x = np.asarray(state.best_x)
        best_f = np.full(G, np.inf)
        evals = np.zeros(G, np.int64)
        step_time, first, interrupted = None, True, False
        limit = self.s.time_limit
        try:
            while not done.all():
                if self.cancel.is_set() or (limit is not None and not first
                                            and self._elapsed() >= limit):
                    interrupted = True
                    break
                count = self._count(step_time, first)
                t0 = time.perf_counter()
                state = many_chunk(self.program, data, state, jnp.int32(count))
                phase = np.asarray(state.phase)  # blocks until the chunk is done
                if not first:
                    step_time = (time.perf_counter() - t0) / count
                first = False
                best_x, best_f = np.asarray(state.best_x), np.asarray(state.best_f)
                evals = np.asarray(state.evals)
                self.state = state
                if self.on_chunk is not None:
                    self.on_chunk(state)
                now = self._elapsed()
                for i in range(G):
                    if not done[i]:
                        h = self.hist[i]
                        h[0].append(int(evals[i]))
                        h[1].append(now)
                        h[2].append(float(best_f[i]))
                for i in np.flatnonzero((phase == DONE) & ~done):
                    done[i] = True
                    yield self._finish(i, best_x[i], int(evals[i]), False)
                data = self._refresh_pools(data, state, phase, done)
        except KeyboardInterrupt:
            interrupted = True
            self.cancel.set()
        for i in np.flatnonzero(~done):
            yield self._finish(i, best_x[i], int(evals[i]), interrupted)

    def _elapsed(self) -> float:
        return time.perf_counter() - self.start

    def _count(self, step_time, first: bool) -> int:
        c = self.s.chunk
        if self.s.time_limit is None:
            return c
        if first or step_time is None:
            return 1
        left = self.s.time_limit - self._elapsed()
        return max(1, min(c, int(DEADLINE_MARGIN * left / max(step_time, 1e-9))))

    def _refresh_pools(self, data: ManyData, state, phase, done) -> ManyData:
        """Bottleneck pools of the problems in their local search with focus."""
        from jaxplace.search.local import bottleneck_pool

        todo = [i for i in range(len(self.members))
                if self.focus[i] and phase[i] == LOCAL and not done[i]]
        if not todo:
            return data
        x = np.asarray(state.x)
        pool, pool_n = np.array(data.pool), np.array(data.pool_n)
        for i in todo:
            p, c = bottleneck_pool(self.members[i].problem, x[i], pool.shape[1])
            pool[i], pool_n[i] = np.asarray(p), int(c)
        return data.replace(pool=jnp.asarray(pool), pool_n=jnp.asarray(pool_n))

    # -- results ----------------------------------------------------------------------

    def _finish(self, i: int, x, evals: int, interrupted: bool) -> tuple[int, Result]:
        m = self.members[i]
        p = m.problem
        x = np.asarray(x, np.float32)[:p.n]
        part = decode_reference(p, x)
        info = {"bucket": {"N": self.bucket.spec.N, "K": self.bucket.spec.K,
                           "window": self.bucket.window, "problems": len(self.members)}}
        if not part.cost <= m.f_seed:  # the heuristic start was never beaten
            part, x = decode_reference(p, m.x_seed), m.x_seed
            info["start"] = "heuristic"
        if not interrupted and not self.cancel.is_set():
            part, x, evals = self._polish(i, part, x, evals, info)
            if info.get("polish", {}).get("stopped"):
                interrupted = True  # a wall-clock limit the user gave cut it short
                info["stopped"] = "time limit"
        e, t, b = self.hist[i]
        res = Result(cost=float(part.cost), partition=part, priorities=x,
                     evaluations=int(evals), wall_time=self._elapsed(),
                     history=History(np.asarray(e, np.int64), np.asarray(t, np.float64),
                                     np.asarray(b, np.float64)),
                     method="many", lower_bound=m.lower_bound, interrupted=interrupted,
                     info=info)
        return m.index, res

    def _polish(self, i: int, part, x, evals: int, info: dict):
        m = self.members[i]
        return polish_result(m.problem, m.lower_bound, part, x, evals, info, self.s,
                             self._elapsed())


def polish_result(problem, lower_bound: float, part, x, evals: int, info: dict,
                  settings, elapsed: float):
    """(partition, priorities, evaluations) after the default search's MIP polish at
    k <= 4 (`settings.polish`: None for that rule, False off, True on):
    `settings.polish_nodes` branch-and-bound nodes (None: `polish_nodes(k)`; a count,
    so the answer does not depend on the load); wall-clock seconds only when the user gave them (the time
    limit left after `elapsed` seconds, capped by `polish_max_time`, default
    MANY_POLISH_MAX_TIME, or `polish_max_time` alone). Writes `info["polish"]`."""
    from jaxplace.objectives.throughput.polish import (
        mip_polish,
        partition_priorities,
        polish_applies,
        polish_nodes,
        polish_skipped,
        polish_time,
    )
    want = settings.polish
    if want is False or (want is None and not polish_applies(problem)):
        return part, x, evals
    if part.cost <= lower_bound * (1 + 1e-9):
        return part, x, evals
    limit, cap = settings.time_limit, settings.polish_max_time
    left = None if limit is None else limit - elapsed
    t = polish_time(left, MANY_POLISH_MAX_TIME if cap is None and left is not None else cap)
    if polish_skipped(t):
        return part, x, evals
    nodes = polish_nodes(problem.k) if settings.polish_nodes is None else settings.polish_nodes
    info["polish"] = {"time_limit": t, "max_nodes": nodes}
    out = mip_polish(problem, part.assignment, time_limit=t, max_nodes=nodes,
                     report=info["polish"])
    if out is None:
        return part, x, evals
    y = partition_priorities(problem, out[0])
    got = decode_reference(problem, y)
    info["polish"]["decoded"] = got.cost
    if got.cost < part.cost:
        return got, np.asarray(y, np.float32), evals + 1
    return part, x, evals


def uniform_start(key, P: int, width: int) -> np.ndarray:
    """(P, width) float32 uniform keys whose column j does not depend on `width`: drawn
    as (width, P) and transposed (JAX's partitionable threefry gives element (j, i)
    the counter j * P + i), so a problem starts the same in any padded shape, a
    merged bucket's included."""
    return np.array(jax.random.uniform(key, (width, P)).T, np.float32)


def default_group(platform: str) -> int | None:
    """Problems per program call: on CPUs one (a 100-wide population already fills
    a core's vector lanes, so vmapping over problems adds no parallelism, only idle
    lanes once a problem finishes; whole cores come from the executor's threads
    instead), on accelerators the whole bucket (None)."""
    return 1 if platform == "cpu" else None


def bucket_groups(members: list, settings) -> list[list]:
    """`members` cut into runs of at most `settings.group` problems (None: JAX's
    backend's `default_group`; None again: all together)."""
    g = settings.group or default_group(jax.default_backend()) or len(members)
    return [members[i:i + g] for i in range(0, len(members), g)]


def run_bucket(members: list, bucket, settings, cancel: threading.Event | None = None
               ) -> Iterator[tuple[int, Result]]:
    """Search the problems of one bucket, `settings.group` at a time; yields (index,
    Result) as each finishes (see the module doc)."""
    for part in bucket_groups(members, settings):
        if cancel is not None and cancel.is_set():
            return
        yield from BucketRun(part, bucket, settings, cancel).results()


__all__ = ["BucketRun", "bucket_groups", "default_group", "polish_result", "run_bucket",
           "uniform_start"]
