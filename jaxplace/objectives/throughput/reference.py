"""Reference decoder in plain NumPy/float64: the oracle for every fast path.

Kahn's topological sort with node priorities, then the SliceGraph dynamic program
(optimal split of an order into at most k contiguous blocks) with the streaming
segment-cost column of Archer et al. (ICML 2024).
"""

from __future__ import annotations

import heapq

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.partition import Partition
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges


def _check_priorities(graph: CompGraph, priorities) -> np.ndarray:
    x = np.asarray(priorities)
    if x.shape != (graph.num_nodes,):
        raise JaxplaceError(f"has shape {x.shape}, expected ({graph.num_nodes},)",
                            field="priorities")
    if x.dtype.kind not in "fiub" or (x.dtype.kind == "f" and np.isnan(x).any()):
        raise JaxplaceError("must be real numbers without NaN", field="priorities")
    return x


def kahn(graph: CompGraph, priorities) -> np.ndarray:
    """Topological order emitting the ready node of highest priority first.

    Ties go to the smaller node index. Priorities are compared in their own dtype
    (a float32 vector is compared as float32, like the C++ yardstick). With placement
    units (colocation classes, training graphs; `jaxplace.units`), units are ordered
    instead, a unit's priority being the largest of its members', and each unit's
    members are emitted together in index order.

    Returns:
        (n,) int64 order.
    """
    x = _check_priorities(graph, priorities)
    units = graph.units
    if units.trivial:
        key, ptr, idx = x, graph.succ_ptr, graph.succ_idx
    else:
        key = np.full(units.num_units, -np.inf, dtype=np.result_type(x.dtype, np.float32))
        np.maximum.at(key, units.unit_of, x)
        key = key.astype(x.dtype) if x.dtype.kind == "f" else key
        ptr, idx = units.succ_ptr, units.succ_idx
    order = kahn_csr(key, ptr, idx, units.pred_ptr if not units.trivial else graph.pred_ptr)
    if units.trivial:
        return order
    return np.concatenate([units.unit_members(u) for u in order]).astype(np.int64)


def kahn_csr(key, succ_ptr, succ_idx, pred_ptr) -> np.ndarray:
    """Kahn's order of a CSR DAG: the ready vertex of largest `key` first (compared in
    key's dtype), ties to the smaller index; (n,) int64."""
    indeg = np.diff(pred_ptr).copy()
    heap = [(-key[v].item(), int(v)) for v in np.flatnonzero(indeg == 0)]
    heapq.heapify(heap)
    order = []
    while heap:
        _, u = heapq.heappop(heap)
        order.append(u)
        for w in succ_idx[succ_ptr[u]:succ_ptr[u + 1]]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, (-key[w].item(), int(w)))
    return np.asarray(order, dtype=np.int64)


def unit_order(graph: CompGraph, order) -> np.ndarray:
    """The order of placement units in a node order; validates it.

    `order` must hold every node once, keep each unit's members together, and respect
    the ordering edges (for plain graphs: be a topological order).
    """
    o = np.asarray(order, dtype=np.int64)
    n = graph.num_nodes
    if o.shape != (n,) or not np.array_equal(np.sort(o), np.arange(n)):
        raise JaxplaceError("must be a permutation of the nodes", field="order")
    units = graph.units
    seq = units.unit_of[o]
    starts = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])
    uo = seq[starts]
    if len(uo) != units.num_units:
        u = int(uo[np.flatnonzero(np.bincount(uo) > 1)[0]])
        raise JaxplaceError(f"splits the colocated group of node "
                            f"{graph.label(int(units.unit_members(u)[0]))}", field="order")
    pos = np.empty(units.num_units, dtype=np.int64)
    pos[uo] = np.arange(len(uo))
    e = ordering_edges(graph)
    bad = np.flatnonzero(pos[units.unit_of[e[:, 0]]] > pos[units.unit_of[e[:, 1]]])
    if len(bad):
        u, v = e[bad[0]]
        raise JaxplaceError(f"edge {graph.label(int(u))} -> {graph.label(int(v))} "
                            f"goes backwards", field="order")
    return uo


def check_order(graph: CompGraph, order) -> np.ndarray:
    """Validate a node order (see `unit_order`); returns it as int64."""
    unit_order(graph, order)
    return np.asarray(order, dtype=np.int64)


def _column_events(problem: Problem, upos: np.ndarray):
    """Range additions per column: events[r] = [(lo, hi, delta)], meaning segments
    [l, r'] with lo <= l <= hi and r' >= r gain delta.

    Per tensor of size s with producer at unit position p and consumers at positions C
    (consumers may precede the producer in training graphs, or share its unit):
    - leaving: from column p, +s on [0, p]; from column max(C+p), -s on [0, min(C+p)];
    - entering from the left: consumers after p, c_1 < c_2 < ..., from column c_i, +s
      on (c_{i-1}, c_i] with c_0 = p;
    - entering from the right: consumers before p, e_1 < ... < e_q, from column e_j,
      +s on (e_{j-1}, e_j] with e_0 = -1, and from column p, -s on [0, e_q].
    """
    g, B = problem.graph, problem.bandwidth
    node_pos = upos[g.units.unit_of]
    events = [[] for _ in range(len(upos))]
    for t in range(g.num_tensors):
        s = g.tensor_size[t] / B
        cons = g.consumers(t)
        if s == 0 or len(cons) == 0:
            continue
        p = int(node_pos[g.tensor_producer[t]])
        cpos = np.unique(node_pos[cons])
        lo, hi = min(p, int(cpos[0])), max(p, int(cpos[-1]))
        events[p].append((0, p, s))
        events[hi].append((0, lo, -s))
        prev = p
        for c in cpos[cpos > p]:
            events[c].append((prev + 1, int(c), s))
            prev = int(c)
        before = cpos[cpos < p]
        prev = -1
        for e in before:
            events[e].append((prev + 1, int(e), s))
            prev = int(e)
        if len(before):
            events[p].append((0, prev, -s))
    return events


def segment_cost_columns(problem: Problem, order):
    """Yield (r, c) where c[l] = f(units at positions l..r) on an accelerator.

    Streams over r with O(n) memory: each step applies a few range additions
    (difference array, one prefix sum), as in docs/problem.md section 2 (segment costs streamed
    in O(n k) memory), generalized to placement units and to consumers that precede their
    producer (training graphs). Overflow and capacity are applied to the column;
    segments holding a node unsupported on accelerators cost +inf. For plain graphs
    positions are node positions in `order`.
    """
    g, B = problem.graph, problem.bandwidth
    units = g.units
    uo = unit_order(g, order)
    U = len(uo)
    upos = np.empty(U, dtype=np.int64)
    upos[uo] = np.arange(U)
    events = _column_events(problem, upos)
    unit_work = np.bincount(units.unit_of, weights=g.work, minlength=U)[uo]
    unit_param = np.bincount(units.unit_of, weights=g.size_param, minlength=U)[uo]
    unit_bad = np.bincount(units.unit_of, weights=~problem.supported, minlength=U)[uo]
    pref_param = np.concatenate([[0.0], np.cumsum(unit_param)])
    pref_bad = np.concatenate([[0.0], np.cumsum(unit_bad)])
    cost = np.zeros(U)
    for r in range(U):
        diff = np.zeros(r + 2)
        diff[0] += unit_work[r]
        diff[r + 1] -= unit_work[r]
        for lo, hi, d in events[r]:
            diff[lo] += d
            diff[hi + 1] -= d
        cost[:r + 1] += np.cumsum(diff)[:r + 1]
        col = cost[:r + 1].copy()
        param = pref_param[r + 1] - pref_param[:r + 1]
        if problem.memory is not None:
            col += np.maximum(0.0, param - problem.memory) / B
        if problem.capacity is not None:
            col[param > problem.capacity_limit] = np.inf
        col[pref_bad[r + 1] - pref_bad[:r + 1] > 0] = np.inf
        yield r, col


def slice_order(problem: Problem, order) -> Partition:
    """Optimal split of a topological `order` into at most k contiguous blocks.

    Q[j][t] = min(Q[j-1][t], min_{l<t} max(Q[j-1][l], c(l+1, t))), O(n^2 k) time.
    With CPU blocks the DP gains a device-type dimension: Q[j][c][t] is the best cost
    of the first t units using at most j accelerators and c CPUs, the last segment
    going to either kind (a CPU segment costs its summed `cpu_latency`).
    Ties prefer fewer blocks, then the earliest cut.
    """
    g = problem.graph
    uo = unit_order(g, order)
    units = g.units
    U = len(uo)
    K = min(problem.k, U)  # more blocks than units never help
    C = min(problem.cpus, U)
    cpu_pref = np.concatenate(
        [[0.0], np.cumsum(np.bincount(units.unit_of, weights=problem.cpu_latency,
                                      minlength=U)[uo])])
    Q = np.full((K + 1, C + 1, U + 1), np.inf)
    Q[:, :, 0] = 0.0
    # choice[j, c, t] = (kind, start): kind 0 fewer accelerators, 1 fewer CPUs,
    # 2 last segment on an accelerator, 3 on a CPU.
    kind = np.full((K + 1, C + 1, U + 1), -1, dtype=np.int64)
    start = np.zeros((K + 1, C + 1, U + 1), dtype=np.int64)
    for r, col in segment_cost_columns(problem, order):
        t = r + 1
        cpu_col = cpu_pref[t] - cpu_pref[:t]
        for j in range(K + 1):
            for c in range(C + 1):
                if j == 0 and c == 0:
                    continue
                best, how, at = np.inf, -1, 0
                if j > 0 and Q[j - 1, c, t] < best:
                    best, how = Q[j - 1, c, t], 0
                if c > 0 and Q[j, c - 1, t] < best:
                    best, how = Q[j, c - 1, t], 1
                if j > 0:
                    cand = np.maximum(Q[j - 1, c, :t], col)
                    lb = int(np.argmin(cand))
                    if cand[lb] < best:
                        best, how, at = cand[lb], 2, lb
                if c > 0:
                    cand = np.maximum(Q[j, c - 1, :t], cpu_col)
                    lb = int(np.argmin(cand))
                    if cand[lb] < best:
                        best, how, at = cand[lb], 3, lb
                Q[j, c, t], kind[j, c, t], start[j, c, t] = best, how, at
    segments, j, c, t = [], K, C, U
    while t > 0 and (j > 0 or c > 0):
        how = kind[j, c, t]
        if how < 0:  # infeasible everywhere: no partition has finite cost
            break
        if how == 0:
            j -= 1
        elif how == 1:
            c -= 1
        else:
            s0 = int(start[j, c, t])
            segments.append((s0, t, "accel" if how == 2 else "cpu"))
            j, c, t = (j - 1, c, s0) if how == 2 else (j, c - 1, s0)
    if t > 0:  # infeasible: report everything as one block of infinite cost
        segments = [(0, U, "accel")]
    segments.reverse()
    ustart = np.concatenate([[0], np.cumsum(np.diff(units.members_ptr)[uo])])
    node_order = np.concatenate([units.unit_members(u) for u in uo]).astype(np.int64) \
        if not units.trivial else np.asarray(uo, dtype=np.int64)
    assignment = np.empty(g.num_nodes, dtype=np.int64)
    n_acc = n_cpu = 0
    cuts = []
    for s0, s1, dev in segments:
        if dev == "accel":
            b, n_acc = n_acc, n_acc + 1
        else:
            b, n_cpu = problem.k + n_cpu, n_cpu + 1
        assignment[node_order[ustart[s0]:ustart[s1]]] = b
        if s0 > 0:
            cuts.append(int(ustart[s0]))
    return Partition(node_order, tuple(cuts), assignment, float(Q[K, C, U]))


def decode_reference(problem: Problem, priorities) -> Partition:
    """SliceGraph(Kahn(x)) for one priority vector."""
    return slice_order(problem, kahn(problem.graph, priorities))


def evaluate_reference(problem: Problem, X) -> np.ndarray:
    """(P,) float64 bottleneck costs of SliceGraph(Kahn(x)) for every row of X."""
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != problem.n:
        raise JaxplaceError(f"has shape {X.shape}, expected (P, {problem.n})", field="X")
    return np.array([decode_reference(problem, x).cost for x in X])
