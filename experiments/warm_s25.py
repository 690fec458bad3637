"""A cheaper polish for search_many's warm pass (issue 51, session 25, H2).

    python experiments/warm_s25.py starts   # the suite's results, polish off -> STARTS
    python experiments/warm_s25.py ls [--k 4,8,16]   # move search (move_polish) from STARTS
    python experiments/warm_s25.py mip [--k 4] [--after-ls]   # the MIP polish from STARTS
    python experiments/warm_s25.py pairs [--width 2]   # sub-MIPs over adjacent blocks
    python experiments/warm_s25.py frontier --variants ";b4=3000;sols=2" [--graph-seed 1]

`starts`: one process over the regal-time suite (`instances(30, [4, 8, 16], 0)`, seed 0,
bench batch's call), a first search_many to compile (untimed), then search_many with
polish=False: the 30 partitions the polish would receive, pickled with the C++ peer's
brkga-10000 costs (experiments/engine_pair_s22/after.json, deterministic).
`ls` / `mip`: per problem, thread CPU seconds and the cost after / before; geometric
mean against C++ per k and over the 30 (the problems not run keep their start).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import time

import numpy as np

from jaxplace.cost import evaluate_partition
from jaxplace.units import ordering_edges

HERE = os.path.dirname(os.path.abspath(__file__))
STARTS = os.environ.get("WARM_S25_STARTS", "/tmp/h2_s25_starts.pkl")


# -- the move search (tried as a cheap polish; not adopted: see warm_s25.md) ----------

def move_applies(problem: object) -> bool:
    """The move search models accelerator blocks of single-node units only (no CPU
    blocks, colocation or unsupported nodes)."""
    return (problem.cpus == 0 and problem.graph.units.trivial
            and bool(np.all(problem.supported)))


def move_polish(problem: object, assignment, *, max_sweeps: int = 100,
                groups: bool = True, report: dict | None = None):
    """(assignment, cost, info) of a single-node move search from `assignment` when
    it lowers the bottleneck, else None.

    Why: the order-based searches stop at partitions where moving one node to another
    block lowers the bottleneck (a node on a cut whose tensors cost more away from
    its neighbours); finding those moves costs milliseconds in NumPy where the MIP
    polish's root heuristics take seconds. The blocks are numbered in the start's DAG
    order and a node moves to any block between its predecessors' last and its
    successors' first (so every ordering edge still goes forward: the quotient stays
    acyclic). A move is taken when it lowers the block costs sorted in decreasing
    order, compared lexicographically (the bottleneck first, then the next block:
    lowering one of several blocks tied at the bottleneck counts); nodes are tried in
    the graph's topological order, each taking its best move, for at most
    `max_sweeps` sweeps. Deterministic: no clock, no randomness.
    """
    if not move_applies(problem):
        return None
    pc = evaluate_partition(problem, assignment)
    if not pc.feasible or problem.num_blocks < 2:
        return None
    st = _MoveState(problem, pc, groups)
    moves, sweeps = st.run(max(0, int(max_sweeps)))
    new = evaluate_partition(problem, st.a)
    info = {"moves": moves, "sweeps": sweeps, "before": pc.bottleneck,
            "after": new.bottleneck}
    if report is not None:
        report.update(info)
    if not new.bottleneck < pc.bottleneck * (1 - 1e-9):
        return None
    return new.assignment, new.bottleneck, info


class _MoveState:
    """The move search's per-block loads, updated move by move (`move_polish`)."""

    def __init__(self, problem: object, pc, groups: bool = True):
        g, k = problem.graph, problem.num_blocks
        self.groups = groups
        self.problem, self.k = problem, k
        rank = np.empty(k, np.int64)
        rank[pc.block_order] = np.arange(k)
        self.a = rank[pc.assignment]  # (n,) int64 blocks in DAG order
        n = problem.n
        e = ordering_edges(g)
        self.preds = _lists(n, e[:, 1], e[:, 0])
        self.succs = _lists(n, e[:, 0], e[:, 1])
        t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
        self.s = np.asarray(g.tensor_size, np.float64) / problem.bandwidth  # (T,)
        self.prod = np.asarray(g.tensor_producer, np.int64)
        # per node: the tensors it produces or consumes, how often it consumes each,
        # and whether it produces it
        cons = _lists(n, g.tensor_consumers, t_of)
        made = _lists(n, self.prod, np.arange(g.num_tensors))
        self.touch = []
        for v in range(n):
            ts, mult = np.unique(cons[v], return_counts=True)
            allt = np.union1d(ts, made[v])
            m = np.zeros(len(allt), np.int64)
            m[np.searchsorted(allt, ts)] = mult
            self.touch.append((allt, m, self.prod[allt] == v))
        self.t_of, self.w = t_of, np.asarray(g.work, np.float64)
        self.p = np.asarray(g.size_param, np.float64)
        self.mem = problem.memory
        self.cap = None if problem.capacity is None else problem.capacity_limit

    def _reset(self) -> None:
        g, k, a = self.problem.graph, self.k, self.a
        self.cnt = np.zeros((len(self.s), k), np.int64)  # (T, k) consumers per block
        np.add.at(self.cnt, (self.t_of, a[g.tensor_consumers]), 1)
        self.P = a[self.prod]  # (T,) producer blocks
        self.io = _io(self.cnt, self.P, self.s)
        self.work = np.bincount(a, weights=self.w, minlength=k)
        self.param = np.bincount(a, weights=self.p, minlength=k)

    def _total(self, io, work, param) -> np.ndarray:
        tot = io + work
        if self.mem is not None:
            tot = tot + np.maximum(0.0, param - self.mem) / self.problem.bandwidth
        if self.cap is not None:
            tot = np.where(param > self.cap, np.inf, tot)
        return tot

    def run(self, max_sweeps: int) -> tuple[int, int]:
        moves, sweeps, order = 0, 0, self.problem.graph.topo_order
        for sweep in range(1, max_sweeps + 1):
            sweeps = sweep
            self._reset()  # no drift from the incremental updates
            cur = -np.sort(-self._total(self.io, self.work, self.param))
            moved = 0
            for v in order:
                cur, did = self._try(int(v), cur)
                moved += did
            moves += moved
            if not moved:
                break
        return moves, sweeps

    def _try(self, v: int, cur: np.ndarray) -> tuple[np.ndarray, int]:
        """The best of `v`'s moves: alone to any block its edges allow, or with its
        ancestors (descendants) in its block to the block before (after)."""
        a, k = self.a, self.k
        av = int(a[v])
        lo = int(a[self.preds[v]].max()) if len(self.preds[v]) else 0
        hi = int(a[self.succs[v]].min()) if len(self.succs[v]) else k - 1
        one = np.array([v])
        cands = [(one, b) for b in range(lo, hi + 1) if b != av]
        if self.groups:
            if av > 0 and lo == av:
                cands.append((self._closure(v, self.preds), av - 1))
            if av < k - 1 and hi == av:
                cands.append((self._closure(v, self.succs), av + 1))
        best = None
        for group, b in cands:
            got = self._eval(group, av, b)
            if _lex_less(got[0], cur if best is None else best[0]):
                best = got + (group, b)
        if best is None:
            return cur, 0
        key, ts, c1, P1, self.io, self.work, self.param, group, b = best
        self.cnt[ts], self.P[ts] = c1, P1
        a[group] = b
        return key, 1

    def _closure(self, v: int, nbrs) -> np.ndarray:
        """`v` and the nodes of its block it reaches through `nbrs` (preds or succs)."""
        a, av = self.a, self.a[v]
        seen, stack = {v}, [v]
        while stack:
            for u in nbrs[stack.pop()]:
                u = int(u)
                if a[u] == av and u not in seen:
                    seen.add(u)
                    stack.append(u)
        return np.fromiter(seen, np.int64, len(seen))

    def _eval(self, group: np.ndarray, av: int, b: int):
        """(sorted block costs, tensors, their new counts and producers, io, work,
        param) after moving `group` from block `av` to `b`."""
        if len(group) == 1:
            ts, mult, made = self.touch[int(group[0])]
        else:
            parts = [self.touch[int(u)] for u in group]
            allt = np.concatenate([p[0] for p in parts])
            ts, inv = np.unique(allt, return_inverse=True)
            mult = np.bincount(inv, np.concatenate([p[1] for p in parts]),
                               len(ts)).astype(np.int64)
            made = np.bincount(inv, np.concatenate([p[2] for p in parts]), len(ts)) > 0
        c0, P0, s = self.cnt[ts], self.P[ts], self.s[ts]
        c1 = c0.copy()
        c1[:, av] -= mult
        c1[:, b] += mult
        P1 = np.where(made, b, P0)
        io = self.io - _io(c0, P0, s) + _io(c1, P1, s)
        dw, dp = self.w[group].sum(), self.p[group].sum()
        work, param = self.work.copy(), self.param.copy()
        work[av] -= dw
        work[b] += dw
        param[av] -= dp
        param[b] += dp
        return -np.sort(-self._total(io, work, param)), ts, c1, P1, io, work, param


def _lists(n: int, keys: np.ndarray, vals: np.ndarray) -> list[np.ndarray]:
    """vals grouped by keys: list of n arrays."""
    keys = np.asarray(keys, np.int64)
    order = np.argsort(keys, kind="stable")
    ptr = np.searchsorted(keys[order], np.arange(n + 1))
    vals = np.asarray(vals, np.int64)[order]
    return [vals[ptr[v]:ptr[v + 1]] for v in range(n)]


def _io(cnt: np.ndarray, P: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(k,) transfer seconds of tensors with consumer counts `cnt` (m, k), producer
    blocks `P` (m,) and seconds `s` (m,): each block with a consumer away from the
    producer receives the tensor once, the producer sends it once (as
    `partition_costs`)."""
    away = cnt > 0
    r = np.arange(len(P))
    away[r, P] = False
    vec = s[:, None] * away
    vec[r, P] += s * away.any(axis=1)
    return vec.sum(axis=0)


def _lex_less(x: np.ndarray, y: np.ndarray) -> bool:
    """x < y lexicographically, ties within a relative 1e-12 of y's largest."""
    tol = 1e-12 * max(abs(float(y[0])), 1.0) if np.isfinite(y[0]) else 0.0
    d = np.flatnonzero(np.abs(x - y) > tol) if np.isfinite(y).all() else \
        np.flatnonzero(x != y)
    return bool(len(d)) and bool(x[d[0]] < y[d[0]])



def gm(x) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(x, np.float64)))))


def cpp_costs() -> np.ndarray:
    d = json.load(open(os.path.join(HERE, "engine_pair_s22", "after.json")))
    return np.asarray(d["cpp-brkga-10000"]["costs"], np.float64)


def starts() -> None:
    import jaxplace as jp
    from jaxplace.bench.search_time import instances
    from jaxplace.search.many import search_many

    inst = instances(30, [4, 8, 16], 0)
    probs = [jp.Problem(g, k) for _, g, k in inst]
    t = time.perf_counter()
    search_many(probs, seed=0, budget=300, polish=False)
    print(f"# compile {time.perf_counter() - t:.1f} s", flush=True)
    t, c = time.perf_counter(), time.process_time()
    rs = search_many(probs, seed=0, polish=False)
    print(f"# search (polish off) wall {time.perf_counter() - t:.1f} s, "
          f"process CPU {time.process_time() - c:.1f} s", flush=True)
    out = [(p.graph, p.k, np.asarray(r.partition.assignment), np.asarray(r.priorities),
            float(r.cost)) for p, r in zip(probs, rs, strict=True)]
    pickle.dump(out, open(STARTS, "wb"))
    cpp = cpp_costs()
    r = np.array([o[4] for o in out]) / cpp
    ks = np.array([o[1] for o in out])
    print("cost/C++ " + " ".join(f"k={k}: {gm(r[ks == k]):.4f}" for k in (4, 8, 16))
          + f" all {gm(r):.4f}")


def load(ks):
    import jaxplace as jp

    rows = pickle.load(open(STARTS, "rb"))
    return [(i, jp.Problem(g, k), a, x, c) for i, (g, k, a, x, c) in enumerate(rows)
            if k in ks], rows


def report(rows, new: dict, cpu: dict, label: str) -> None:
    cpp = cpp_costs()
    before = np.array([r[4] for r in rows])
    after = before.copy()
    for i, c in new.items():
        after[i] = c
    ks = np.array([r[1] for r in rows])
    r0, r1 = before / cpp, after / cpp
    per_k = " ".join(f"k={k}: {gm(r0[ks == k]):.4f}->{gm(r1[ks == k]):.4f}"
                     for k in (4, 8, 16))
    print(f"{label}: cost/C++ {per_k} all {gm(r0):.4f}->{gm(r1):.4f}; "
          f"thread CPU {sum(cpu.values()):.2f} s over {len(cpu)}", flush=True)


def run_ls(ks, args) -> None:
    todo, rows = load(ks)
    new, cpu = {}, {}
    for i, p, a, _, c in todo:
        t = time.thread_time()
        out = move_polish(p, a)
        cpu[i] = time.thread_time() - t
        if out is not None:
            new[i] = out[1]
        print(f"  #{i:2d} n={p.n:3d} k={p.k:2d} {cpu[i]:6.3f} s "
              f"{(new.get(i, c)) / c:.4f}", flush=True)
    report(rows, new, cpu, "ls")


def run_mip(ks, args) -> None:
    from jaxplace.objectives.throughput.polish import mip_polish

    todo, rows = load(ks)
    new, cpu = {}, {}
    for i, p, a, _, c in todo:
        t = time.thread_time()
        if args.after_ls:
            out = move_polish(p, a)
            if out is not None:
                a, new[i] = out[0], out[1]
        rep: dict = {}
        out = mip_polish(p, a, report=rep, highs_options=json.loads(args.opts))
        cpu[i] = time.thread_time() - t
        if out is not None:
            new[i] = out[1]
        print(f"  #{i:2d} n={p.n:3d} k={p.k:2d} {cpu[i]:6.3f} s "
              f"{new.get(i, c) / c:.4f} lb/start {rep.get('lower_bound', math.nan) / c:.4f}",
              flush=True)
    report(rows, new, cpu, "mip" + (" after ls" if args.after_ls else "") + " " + args.opts)


def window_model(model, first, last):
    """`model` with node v's block (DAG order) kept in first[v]..last[v]."""
    from dataclasses import replace

    nb = model.nb
    lo, hi = model.col_lo.copy(), model.col_hi.copy()
    b = np.arange(nb - 1)[None, :]
    zero, one = b < first[:, None], b >= last[:, None]
    ylo = lo[model.y0:model.y0 + model.n * (nb - 1)].reshape(model.n, nb - 1)
    yhi = hi[model.y0:model.y0 + model.n * (nb - 1)].reshape(model.n, nb - 1)
    yhi[zero] = 0.0
    ylo[one] = 1.0
    return replace(model, col_lo=lo, col_hi=hi)


def pair_polish(p, a, width=2, nodes=1, rounds=3, opts=None):
    """Sub-MIPs over `width` adjacent blocks (DAG order) holding a bottleneck block,
    the other blocks fixed; repeated while one improves."""
    from jaxplace.bounds.exact import dag_numbering, exact_bound, exact_model
    from jaxplace.cost import evaluate_partition
    from jaxplace.objectives.throughput.polish import POLISH_HIGHS_OPTIONS

    o = {"mip_max_nodes": nodes, **POLISH_HIGHS_OPTIONS, **(opts or {})}
    model = exact_model(p)
    pc = evaluate_partition(p, a)
    k = p.k
    solves = 0
    for _ in range(rounds):
        pos = dag_numbering(pc.assignment, pc.block_order)
        tot = np.zeros(k)
        np.add.at(tot, np.arange(k), 0)
        # block costs in DAG order
        cost = pc.total[pc.block_order] if len(pc.block_order) == k else None
        top = np.flatnonzero(cost >= cost.max() * (1 - 1e-9))
        wins = sorted({s for t in top for s in range(max(0, t - width + 1),
                                                      min(t, k - width) + 1)})
        improved = False
        for s0 in wins:
            inside = (pos >= s0) & (pos < s0 + width)
            first = np.where(inside, s0, pos)
            last = np.where(inside, s0 + width - 1, pos)
            m = window_model(model, first, last)
            res, found, _ = exact_bound(p, pc.assignment, model=m, time_limit=math.inf,
                                        highs_options=o)
            solves += 1
            if found is not None:
                new = evaluate_partition(p, found)
                if new.bottleneck < pc.bottleneck * (1 - 1e-9):
                    pc, improved = new, True
                    break
        if not improved:
            break
    return pc.assignment, pc.bottleneck, solves


def run_pairs(ks, args) -> None:
    todo, rows = load(ks)
    new, cpu = {}, {}
    for i, p, a, _, c in todo:
        t = time.thread_time()
        out = pair_polish(p, a, args.width, args.nodes, args.rounds)
        cpu[i] = time.thread_time() - t
        if out[1] < c * (1 - 1e-9):
            new[i] = out[1]
        print(f"  #{i:2d} n={p.n:3d} k={p.k:2d} {cpu[i]:6.3f} s "
              f"{new.get(i, c) / c:.4f} solves {out[2]}", flush=True)
    report(rows, new, cpu, f"pairs width {args.width} nodes {args.nodes}")


def frontier(variants: list[str], graph_seed: int = 0) -> None:
    """Warm search_many passes over the suite; a variant is comma-separated key=value:
    b4/b8/b16 (the default budget per k), sols (HiGHS mip_max_improving_sols of the
    polish), nodes (polish_nodes), polish (0: off)."""
    import jaxplace as jp
    import jaxplace.objectives.throughput.polish as polish
    from jaxplace.bench.search_time import instances
    from jaxplace.objectives.throughput.objective import Throughput
    from jaxplace.search.many import search_many

    inst = instances(30, [4, 8, 16], graph_seed)
    probs = [jp.Problem(g, k) for _, g, k in inst]
    ks = np.array([k for _, _, k in inst])
    # other graphs: costs against the first variant's (the peer's are for seed 0)
    cpp = cpp_costs() if graph_seed == 0 else None
    base_budget, base_opts = Throughput.default_budget, dict(polish.POLISH_HIGHS_OPTIONS)
    t = time.perf_counter()
    search_many(probs, seed=0, budget=300, polish=False)
    print(f"# compile {time.perf_counter() - t:.1f} s", flush=True)
    for v in variants:
        kw = dict(item.split("=") for item in filter(None, v.split(",")))
        per_k = {k: int(kw[f"b{k}"]) for k in (4, 8, 16) if f"b{k}" in kw}

        def budget(self, problem, time_limit=None, per_k=per_k):
            if time_limit is None and problem.k in per_k:
                return per_k[problem.k]
            return base_budget(self, problem, time_limit)

        Throughput.default_budget = budget
        polish.POLISH_HIGHS_OPTIONS = {**base_opts, **({"mip_max_improving_sols": int(
            kw["sols"])} if "sols" in kw else {})}
        extra = {}
        if "nodes" in kw:
            extra["polish_nodes"] = int(kw["nodes"])
        if kw.get("polish") == "0":
            extra["polish"] = False
        la = os.getloadavg()[0]
        t, c = time.perf_counter(), time.process_time()
        rs = search_many(probs, seed=0, **extra)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if cpp is None:
            cpp = np.array([x.cost for x in rs])
        r = np.array([x.cost for x in rs]) / cpp
        pk = " ".join(f"k={k}: {gm(r[ks == k]):.4f}" for k in (4, 8, 16))
        h = hash(tuple(float(x.cost) for x in rs)) & 0xffffffff
        print(f"{v or 'default':28s} cost/C++ {gm(r):.4f} ({pk}) wall {wall:5.1f} s "
              f"CPU {cpu:5.1f} s load {la:.1f}->{os.getloadavg()[0]:.1f} hash {h:08x}",
              flush=True)
    Throughput.default_budget = base_budget
    polish.POLISH_HIGHS_OPTIONS = base_opts


def coarse_polish(p, a, levels=1, nodes=1, keep=True, refine=False, opts=None):
    """The MIP polish on a coarser problem: pairs of nodes consecutive in the start's
    pipeline order (heaviest shared tensor first; `keep`: only pairs inside one of
    the start's blocks, so the start is the MIP's start), `levels` times; the
    incumbent projected back (block costs are preserved exactly)."""
    from jaxplace.multilevel.coarsen import match_consecutive, quotient
    from jaxplace.objectives.throughput.polish import mip_polish

    pc = evaluate_partition(p, a)
    rank = np.empty(p.num_blocks, np.int64)
    rank[pc.block_order] = np.arange(p.num_blocks)
    blk = rank[pc.assignment]
    cluster = np.arange(p.n)
    cur, cb = p, blk
    for _ in range(levels):
        pos = np.empty(cur.n, np.int64)
        pos[cur.graph.topo_order] = np.arange(cur.n)
        order = np.lexsort((pos, cb))
        c, m = match_consecutive(cur, order, np.inf, np.inf, cb if keep else None)
        nb = np.zeros(m, np.int64)
        nb[c] = cb
        cur, cb, cluster = quotient(cur, c, m), nb, c[cluster]
    out = mip_polish(cur, cb, max_nodes=nodes, highs_options=opts)
    if out is None:
        return pc.assignment, pc.bottleneck, cur.n
    fine = np.asarray(out[0])[cluster]
    new = evaluate_partition(p, fine)
    if refine:
        got = move_polish(p, new.assignment)
        if got is not None:
            return got[0], got[1], cur.n
    return new.assignment, new.bottleneck, cur.n


def run_coarse(ks, args) -> None:
    todo, rows = load(ks)
    new, cpu = {}, {}
    for i, p, a, _, c in todo:
        t = time.thread_time()
        out = coarse_polish(p, a, args.levels, args.nodes, not args.free, args.refine)
        cpu[i] = time.thread_time() - t
        if out[1] < c * (1 - 1e-9):
            new[i] = out[1]
        print(f"  #{i:2d} n={p.n:3d} -> {out[2]:3d} k={p.k:2d} {cpu[i]:6.3f} s "
              f"{new.get(i, c) / c:.4f}", flush=True)
    report(rows, new, cpu, f"coarse levels {args.levels} nodes {args.nodes}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["starts", "ls", "mip", "pairs", "frontier", "coarse"])
    ap.add_argument("--variants", default="")
    ap.add_argument("--levels", type=int, default=1)
    ap.add_argument("--graph-seed", type=int, default=0)
    ap.add_argument("--opts", default="{}", help="mip: HiGHS options (JSON)")
    ap.add_argument("--free", action="store_true")
    ap.add_argument("--refine", action="store_true")
    ap.add_argument("--width", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--k", default="4,8,16")
    ap.add_argument("--after-ls", action="store_true")
    args = ap.parse_args()
    ks = {int(v) for v in args.k.split(",")}
    if args.what == "starts":
        starts()
    elif args.what == "frontier":
        frontier(args.variants.split(";"), args.graph_seed)
    elif args.what == "coarse":
        run_coarse(ks, args)
    elif args.what == "pairs":
        run_pairs(ks, args)
    elif args.what == "ls":
        run_ls(ks, args)
    else:
        run_mip(ks, args)


if __name__ == "__main__":
    main()
