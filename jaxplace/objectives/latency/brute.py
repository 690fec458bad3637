"""Exact optimum of the latency model (instance.py) on tiny instances, by enumeration.

For every placement that respects memory and runnability, the placement fixes the
events (ops and the transfers it implies, `_events.event_graph`) and the resources
each one holds. The search enumerates topological orders of that event graph and
schedules each event, in order, at the earliest time its inputs and its resources
(device; send and receive port) allow: the semi-active schedule of the order.

Why an optimal schedule is among them. Take any optimal schedule S* of the best
placement and sort its events by (start, finish), ties by a topological index. The
sort is a topological order: an event that depends on another starts no earlier than
the other finishes, so it sorts later. Schedule that order greedily; by induction
every event starts no later than in S*: its predecessors finish no later than in S*,
and every earlier event on one of its resources precedes it on that resource in S*
too (two events on one resource do not overlap in S*, and the one sorted first ends
before the other starts; with zero-length events the (start, finish) key keeps
this true), so it ends no later than S* lets the event start. Hence the greedy
schedule of that order has a makespan at most S*'s, and it is valid by construction.

The enumeration is a depth-first search over "which ready event next", with two
reductions that keep it exact: a state (events done, resource free times, finish
times still needed) reached twice is expanded once (orders that differ by swapping
events on disjoint resources reach the same state), and a branch stops when a lower
bound reaches the best makespan found so far: the current makespan; per device, its
free time plus its remaining op time; per ready event, its earliest start plus the
longest chain of events after it (every event left lies on a chain from a ready one).

Limit: n <= 6 ops and d <= 3 devices (3^6 placements).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.latency._events import EventGraph, event_graph, to_schedule
from jaxplace.objectives.latency.instance import LatencyInstance, Schedule
from jaxplace.objectives.latency.milp import reachability

MAX_OPS = 6
MAX_DEVICES = 3


def placements(inst: LatencyInstance):
    """Every (n,) placement with each op runnable on its device and memory that fits."""
    n, d = inst.n, inst.num_devices
    allowed = [[p for p in range(d) if np.isfinite(inst.times[v, p])] for v in range(n)]
    for combo in itertools.product(*allowed):
        dev = np.asarray(combo, dtype=np.int64)
        used = np.bincount(dev, weights=inst.memory, minlength=d)
        if np.all(used <= inst.capacity):
            yield dev


def brute_force(inst: LatencyInstance) -> tuple[float, Schedule | None]:
    """(optimal makespan, an optimal schedule); (inf, None) when nothing fits memory."""
    if inst.n > MAX_OPS:
        raise JaxplaceError(f"brute force takes at most {MAX_OPS} ops, got {inst.n}",
                            field="graph")
    if inst.num_devices > MAX_DEVICES:
        raise JaxplaceError(f"brute force takes at most {MAX_DEVICES} devices, got "
                            f"{inst.num_devices}", field="times")
    best = [math.inf, None]
    for dev in placements(inst):
        eg = event_graph(inst, dev)
        _Search(inst, eg, best).run()
    return float(best[0]), best[1]


class _Search:
    """Depth-first search over the topological orders of one placement's events."""

    def __init__(self, inst: LatencyInstance, eg: EventGraph, best: list):
        self.inst, self.eg, self.best = inst, eg, best
        self.n, self.d = inst.n, inst.num_devices
        self.E = eg.num_events
        self.seen: set = set()
        self.start = np.zeros(self.E)
        self.finish = np.zeros(self.E)
        # remaining op time per device, for the lower bound
        self.left = np.bincount(eg.device, weights=eg.dur[:self.n], minlength=self.d)
        # longest chain of events from each event to the end (its own length included)
        self.tail = eg.dur.copy()
        for a in np.argsort(-eg.rank):
            if eg.succs[a]:
                self.tail[a] += max(self.tail[b] for b in eg.succs[a])

    def run(self) -> None:
        indeg = [len(p) for p in self.eg.preds]
        self._dfs(0, indeg, np.zeros(3 * self.d), 0.0, 0)

    def _dfs(self, mask: int, indeg: list, free: np.ndarray, span: float, k: int) -> None:
        eg = self.eg
        if k == self.E:
            if span < self.best[0]:
                self.best[0] = span
                self.best[1] = to_schedule(eg, self.start.copy(), self.finish.copy(),
                                           self.n)
            return
        ready = [a for a in range(self.E) if not mask >> a & 1 and not indeg[a]]
        est = {a: max(max((self.finish[b] for b in eg.preds[a]), default=0.0),
                      max(free[r] for r in eg.res[a])) for a in ready}
        # every event left lies on a chain from a ready one: each chain's length bounds
        lb = max(span, float(np.max(free[:self.d] + self.left)),
                 max(est[a] + self.tail[a] for a in ready))
        if lb >= self.best[0]:
            return
        # finish times matter only while some successor is still to be scheduled
        live = tuple(self.finish[a] if mask >> a & 1 and any(
            not mask >> b & 1 for b in eg.succs[a]) else -1.0 for a in range(self.E))
        key = (mask, tuple(free), live)
        if key in self.seen:
            return
        self.seen.add(key)
        for a in ready:
            t = est[a]
            f = t + eg.dur[a]
            self.start[a], self.finish[a] = t, f
            nfree = free.copy()
            for r in eg.res[a]:
                nfree[r] = f
            for b in eg.succs[a]:
                indeg[b] -= 1
            if a < self.n:
                self.left[eg.device[a]] -= eg.dur[a]
            self._dfs(mask | 1 << a, indeg, nfree, max(span, f) if a < self.n else span,
                      k + 1)
            if a < self.n:
                self.left[eg.device[a]] += eg.dur[a]
            for b in eg.succs[a]:
                indeg[b] += 1


def is_contiguous(reach: np.ndarray, members: np.ndarray) -> bool:
    """No path leaves `members` (bool (n,)) and comes back (Tarnawski et al., Def. 3.1)."""
    if not members.any():
        return True
    out = ~members
    from_set = reach[members].any(axis=0)
    to_set = reach[:, members].any(axis=1)
    return not np.any(out & from_set & to_set)


def brute_contiguous(inst: LatencyInstance) -> float:
    """Optimum of the block model of `contiguous.solve_contiguous`, by enumeration.

    Every placement whose device sets are all contiguous, and every order of the used
    devices' receive phases; in a given order each phase starts as early as it can
    (after the previous phase and after every sender's stage), then its stage
    computes. Earlier never hurts, so this order-by-order greedy finds the optimum.
    inf when no contiguous placement fits memory or has an order.
    """
    if inst.n > MAX_OPS or inst.num_devices > MAX_DEVICES:
        raise JaxplaceError(f"brute force takes at most {MAX_OPS} ops and {MAX_DEVICES} "
                            f"devices", field="graph")
    reach = reachability(inst)
    d = inst.num_devices
    best = math.inf
    for dev in placements(inst):
        if not all(is_contiguous(reach, dev == p) for p in range(d)):
            continue
        eg = event_graph(inst, dev)
        inflow = np.zeros(d)
        senders: list[set] = [set() for _ in range(d)]
        for (_, p, q), dur in zip(eg.transfers, eg.dur[inst.n:], strict=True):
            inflow[q] += dur
            senders[q].add(p)
        compute = np.bincount(dev, weights=eg.dur[:inst.n], minlength=d)
        used = [p for p in range(d) if np.any(dev == p)]
        for order in itertools.permutations(used):
            done: dict[int, float] = {}
            phase_end = 0.0
            for q in order:
                if not senders[q] <= done.keys():
                    break
                b = max([phase_end, *(done[p] for p in senders[q])])
                phase_end = b + inflow[q]
                done[q] = phase_end + compute[q]
            else:
                best = min(best, max(done.values()))
    return float(best)
