"""Plain brute-force oracles of the three shipped objectives, written from their model
descriptions only (mtpp.md; `objectives.throughput_unequal.model`'s and
`objectives.latency.instance`'s docstrings), with no call into jaxplace's costs, brute forces or solvers. The
conformance check (`jaxplace.testing.check_objective(..., oracle=...)`) and the
randomized run (experiments/conformance_run.py) hold the objectives against them.

Each oracle is an object with
- `optimum(problem)`: the optimal cost (inf when no plan is feasible);
- `cost(problem, plan)`: the cost of a plan (a block / stage / device per op, with a
  stage's devices or a latency schedule's order where the plan carries one), or None
  when the plan breaks a rule of the model (a refusal is then the right answer).

The problem's input arrays are read as given (the graph, the options, the cluster's
per-device times of `Problem.instance`, which `check_instance_times` recomputes from
the cluster's profiles independently).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

#: relative slack on capacities (float64 sums, as the models allow)
CAP_RTOL = 1e-9


# -- throughput on identical accelerators (mtpp.md sections 1 and 5) ------------------

class IdenticalOracle:
    name = "throughput"

    def _valid(self, p, a) -> bool:
        g = p.graph
        n, k = p.n, p.k
        if len(a) != n or any((not isinstance(b, int | np.integer)) or b < 0
                              or b >= k + p.cpus for b in a):
            return False
        attrs = g.node_attrs
        sup = attrs.get("supported_on_accel")
        if sup is not None and any(not sup[v] and a[v] < k for v in range(n)):
            return False
        color = attrs.get("color_class")
        if color is not None:
            first: dict[int, int] = {}
            for v in range(n):
                c = int(color[v])
                if c >= 0 and first.setdefault(c, int(a[v])) != int(a[v]):
                    return False
        bwd = attrs.get("is_backward")
        succ: dict[int, set[int]] = {}
        for u, v in g.edges.tolist():
            if bwd is not None and (bwd[u] or bwd[v]):
                continue  # contiguity holds for the forward graph only
            if a[u] != a[v]:
                succ.setdefault(int(a[u]), set()).add(int(a[v]))
        return not _has_cycle(succ)

    def block_cost(self, p, members: set[int], cpu: bool) -> float:
        g = p.graph
        if cpu:
            lat = g.node_attrs.get("cpu_latency")
            return float(sum(float(lat[v]) for v in members)) if members else 0.0
        B = p.bandwidth
        cost = sum(float(g.work[v]) for v in members)
        param = sum(float(g.size_param[v]) for v in members)
        for t in range(g.num_tensors):
            u = int(g.tensor_producer[t])
            cons = {int(c) for c in g.tensor_consumers[g.tensor_ptr[t]:g.tensor_ptr[t + 1]]}
            size = float(g.tensor_size[t])
            if u in members and cons - members:
                cost += size / B
            if u not in members and cons & members:
                cost += size / B
        if p.memory is not None:
            cost += max(0.0, param - p.memory) / B
        if p.capacity is not None and param > p.capacity * (1 + CAP_RTOL):
            return math.inf
        return cost

    def cost(self, p, plan) -> float | None:
        raw = np.asarray(getattr(plan, "assignment", plan))
        if raw.shape != (p.n,) or raw.dtype.kind not in "iu":
            return None
        a = [int(b) for b in raw.tolist()]
        if not self._valid(p, a):
            return None
        return max(self.block_cost(p, {v for v in range(p.n) if a[v] == b}, b >= p.k)
                   for b in range(p.k + p.cpus))

    def optimum(self, p) -> float:
        best = math.inf
        nb = p.k + p.cpus
        for a in itertools.product(range(nb), repeat=p.n):
            # accelerators are interchangeable: the first op on one opens the lowest
            if not _canonical(a, p.k):
                continue
            c = self.cost(p, np.asarray(a, np.int64))
            if c is not None and c < best:
                best = c
        return best


def _canonical(a, k: int) -> bool:
    """Accelerator labels in order of first use (CPUs are interchangeable too but
    rarely many; they are enumerated in full)."""
    nxt = 0
    for b in a:
        if b < k:
            if b > nxt:
                return False
            if b == nxt:
                nxt += 1
    return True


def _has_cycle(succ: dict[int, set[int]]) -> bool:
    state: dict[int, int] = {}

    def visit(x) -> bool:
        state[x] = 1
        for y in succ.get(x, ()):
            if state.get(y) == 1 or (y not in state and visit(y)):
                return True
        state[x] = 2
        return False

    return any(x not in state and visit(x) for x in list(succ))


# -- throughput on a cluster (objectives.throughput_unequal.model's docstring) ------------

class ClusterPipelineOracle:
    name = "throughput-unequal"

    def stage_cost(self, p, stage: list[int], devs: list[int]) -> float:
        inst = p.instance
        g = p.graph
        S = len(devs)
        cut_cnt = [0] * (S + 1)
        cut_bytes = [0.0] * (S + 1)
        for t in range(g.num_tensors):
            cons = g.tensor_consumers[g.tensor_ptr[t]:g.tensor_ptr[t + 1]]
            if not len(cons):
                continue
            lo, hi = stage[int(g.tensor_producer[t])], max(stage[int(c)] for c in cons)
            for s in range(lo + 1, hi + 1):  # forwarded through the stages between
                cut_cnt[s] += 1
                cut_bytes[s] += float(inst.tensor_bytes[t])
        worst = 0.0
        for s in range(S):
            q = devs[s]
            ops = [v for v in range(p.n) if stage[v] == s]
            mem = sum(float(inst.memory[v]) for v in ops)
            if mem > float(inst.capacity[q]) * (1 + CAP_RTOL):
                return math.inf
            c = sum(float(inst.times[v, q]) for v in ops)
            if s > 0:
                a = devs[s - 1]
                c += cut_cnt[s] * inst.link_latency[a, q] + cut_bytes[s] / inst.bandwidth[a, q]
            if s + 1 < S:
                b = devs[s + 1]
                c += (cut_cnt[s + 1] * inst.link_latency[q, b]
                      + cut_bytes[s + 1] / inst.bandwidth[q, b])
            worst = max(worst, c)
        return worst

    def cost(self, p, plan) -> float | None:
        raw = np.asarray(getattr(plan, "assignment", plan))
        if raw.shape != (p.n,) or raw.dtype.kind not in "iu" or raw.min() < 0:
            return None
        used = sorted(set(raw.tolist()))
        stage = [used.index(int(b)) for b in raw.tolist()]  # empty stages skipped
        devices = getattr(plan, "devices", None)
        d = p.cluster.num_devices
        if devices is None:
            devices = list(range(d))
        devices = [int(x) for x in devices]
        if len(set(devices)) != len(devices) or any(not 0 <= x < d for x in devices):
            return None
        if max(raw) >= len(devices) or len(used) > p.k:
            return None
        if any(stage[u] > stage[v] for u, v in p.graph.edges.tolist()):
            return None
        return self.stage_cost(p, stage, [devices[b] for b in used])

    def optimum(self, p) -> float:
        n, d = p.n, p.cluster.num_devices
        best = math.inf
        edges = p.graph.edges.tolist()
        for S in range(1, min(p.k, n, d) + 1):
            for stage in itertools.product(range(S), repeat=n):
                if len(set(stage)) != S or any(stage[u] > stage[v] for u, v in edges):
                    continue
                for devs in itertools.permutations(range(d), S):
                    best = min(best, self.stage_cost(p, list(stage), list(devs)))
        return best


# -- latency (objectives.latency.instance's docstring) ------------------------------------

class LatencyOracle:
    """Every placement that fits, and every order of its events (ops and transfers),
    each started as early as its inputs and its resources (device; the sender's send
    port and the receiver's receive port) allow after the events before it on them:
    the best of those is the optimum (sorting any schedule's events by start gives an
    order whose schedule is no later)."""

    name = "latency"

    def events(self, p, dev):
        inst, g = p.instance, p.graph
        n, d = p.n, inst.times.shape[1]
        dur = [float(inst.times[v, dev[v]]) for v in range(n)]
        res = [(int(dev[v]),) for v in range(n)]
        preds: list[set[int]] = [set() for _ in range(n)]
        key = {}
        for t in range(g.num_tensors):
            u = int(g.tensor_producer[t])
            for c in g.tensor_consumers[g.tensor_ptr[t]:g.tensor_ptr[t + 1]].tolist():
                src, dst = int(dev[u]), int(dev[c])
                if src == dst:
                    preds[c].add(u)
                    continue
                if (t, dst) not in key:
                    key[(t, dst)] = len(dur)
                    dur.append(float(inst.link_latency[src, dst]
                                     + inst.tensor_bytes[t] / inst.bandwidth[src, dst]))
                    res.append((d + src, 2 * d + dst))
                    preds.append({u})
                preds[c].add(key[(t, dst)])
        return dur, res, preds, key

    def fits(self, p, dev) -> bool:
        inst = p.instance
        for q in range(inst.times.shape[1]):
            mem = sum(float(inst.memory[v]) for v in range(p.n) if dev[v] == q)
            if mem > float(inst.capacity[q]) * (1 + CAP_RTOL):
                return False
        return all(math.isfinite(inst.times[v, dev[v]]) for v in range(p.n))

    def best_order(self, p, dev, bound: float = math.inf) -> float:
        """The shortest schedule of placement `dev` over every event order (branch and
        bound: a partial schedule already past `bound` is cut)."""
        dur, res, preds, _ = self.events(p, dev)
        E = len(dur)
        best = [bound]
        finish = [0.0] * E
        free: dict[int, float] = {}
        done: set[int] = set()

        def rec(span):
            if len(done) == E:
                best[0] = min(best[0], span)
                return
            for a in range(E):
                if a in done or not preds[a] <= done:
                    continue
                s = max([finish[b] for b in preds[a]] + [free.get(r, 0.0) for r in res[a]])
                f = s + dur[a]
                if f >= best[0]:  # no better completion below this branch
                    continue
                saved = [free.get(r) for r in res[a]]
                for r in res[a]:
                    free[r] = f
                finish[a] = f
                done.add(a)
                rec(max(span, f))
                done.discard(a)
                for r, old in zip(res[a], saved, strict=True):
                    if old is None:
                        free.pop(r, None)
                    else:
                        free[r] = old

        rec(0.0)
        return best[0]

    def order_cost(self, p, dev, op_start, transfer_start) -> float:
        """The schedule of placement `dev` whose events go in the order of the given
        start times (ties: ops by topological rank, transfers after their producer)."""
        dur, res, preds, key = self.events(p, dev)
        n = p.n
        rank = {int(v): i for i, v in enumerate(p.graph.topo_order)}
        keys = []
        for a in range(len(dur)):
            if a < n:
                keys.append((float(op_start[a]), float(op_start[a]) + dur[a], rank[a], a))
        for (t, q), a in key.items():
            u = int(p.graph.tensor_producer[t])
            s = float(transfer_start.get((t, q), op_start[u]))
            keys.append((s, s + dur[a], rank[u], a))
        pending = sorted(keys)
        finish: dict[int, float] = {}
        free: dict[int, float] = {}
        while pending:  # the next event in key order whose inputs are scheduled
            i = next(j for j, kk in enumerate(pending) if preds[kk[-1]] <= finish.keys())
            a = pending.pop(i)[-1]
            s = max([finish[b] for b in preds[a]] + [free.get(r, 0.0) for r in res[a]])
            finish[a] = s + dur[a]
            for r in res[a]:
                free[r] = finish[a]
        return max((finish[v] for v in range(n)), default=0.0)

    def cost(self, p, plan) -> float | None:
        """A placement's best schedule, or, for a plan carrying a schedule, that
        schedule's event order replayed (the cost a saved or searched plan stands
        for)."""
        raw = np.asarray(getattr(plan, "assignment", plan))
        d = p.cluster.num_devices
        if raw.shape != (p.n,) or raw.dtype.kind not in "iu" or raw.min() < 0 \
                or raw.max() >= d:
            return None
        dev = [int(x) for x in raw.tolist()]
        if not self.fits(p, dev):
            return math.inf
        sched = getattr(plan, "schedule", None)
        if sched is not None and hasattr(sched, "start"):
            tstart = {(int(t.tensor), int(t.dst)): float(t.start) for t in sched.transfers}
            return self.order_cost(p, dev, sched.start, tstart)
        return self.best_order(p, dev)

    def confirm(self, p, plan, answer) -> str | None:
        """`evaluate_partition`'s answer for `plan`: its schedule, replayed here, ends
        at its cost; no schedule of the placement is shorter than it; a plan that
        carries a schedule costs that schedule's replay."""
        want = self.cost(p, plan)
        got = float(answer.cost)
        if want is None:
            return f"a plan the model forbids, costed {got!r}"
        if math.isinf(want) or math.isinf(got):
            return None if math.isinf(want) and math.isinf(got) else \
                f"costs {got!r}, the oracle {want!r}"
        sched = answer.schedule
        tstart = {(int(t.tensor), int(t.dst)): float(t.start) for t in sched.transfers}
        dev = [int(x) for x in np.asarray(sched.device).tolist()]
        replay = self.order_cost(p, dev, sched.start, tstart)
        if not _close(replay, got):
            return f"its schedule ends at {got!r}, replayed at {replay!r}"
        has_own = hasattr(getattr(plan, "schedule", None), "start")
        if (has_own and not _close(got, want)) or got < want * (1 - 1e-9) - 1e-12:
            return f"costs {got!r}, the oracle {want!r}"
        return None

    def optimum(self, p) -> float:
        d = p.cluster.num_devices
        best = math.inf
        for dev in itertools.product(range(d), repeat=p.n):
            if self.fits(p, list(dev)):
                best = min(best, self.best_order(p, list(dev), best))
        return best


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


ORACLES = {o.name: o for o in (IdenticalOracle(), ClusterPipelineOracle(), LatencyOracle())}


def check_instance_times(p) -> str | None:
    """The per-device op times of a cluster problem recomputed from the profiles (the
    graphs here have abstract work and no roofline attributes): `time_<device>`
    attributes when every device has one, else work x peak_0 / peak_p. A message when
    `Problem.instance` disagrees, else None."""
    c, g = p.cluster, p.graph
    names = [dev.name for dev in c.devices]
    if all(f"time_{nm}" in g.node_attrs for nm in names):
        want = np.stack([np.asarray(g.node_attrs[f"time_{nm}"], float) for nm in names], 1)
    else:
        peaks = [dev.profile.peak("fp32", matrix=True) for dev in c.devices]
        want = np.array([[float(w) * peaks[0] / pk for pk in peaks] for w in g.work])
    got = np.asarray(p.instance.times)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-12, atol=0):
        return f"times {got.tolist()} but the profiles give {want.tolist()}"
    return None
