"""The size classes of compiled search programs (issue 51): graphs that differ only in
their out-degree up to 16 (`search_spec`), or per graph in k from 5 to 16
(`solo_bucket`, jp.search's program), share one class, and the wider padding of a
class changes no result of the search."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from strategies import small_graph

import jaxplace as jp
from jaxplace.decoder.layout import (
    DEGREE_FLOOR,
    SUCCESSOR_FLOOR,
    pow2,
    problem_spec,
    search_spec,
)
from jaxplace.objectives.throughput.bucket import K_ROWS_FLOOR, solo_bucket
from jaxplace.search.many.api import ManySettings, prepare
from jaxplace.search.many.run import BucketRun


def _hub_graph(fanout: int, n: int = 40) -> jp.CompGraph:
    """small_graph(3, n) plus edges from its first node to `fanout` later ones."""
    g = small_graph(3, n)
    # edges from the first node of a topological order keep the graph acyclic
    topo = _topological(g)
    pos = {v: i for i, v in enumerate(topo)}
    later = [v for v in topo if pos[v] > pos[topo[0]]][:fanout]
    edges = sorted(set(map(tuple, g.edges.tolist())) | {(topo[0], v) for v in later})
    return jp.CompGraph(g.work, edges, g.size_param, g.size_out)


def _topological(g) -> list[int]:
    n = g.num_nodes
    indeg = np.zeros(n, int)
    succ = [[] for _ in range(n)]
    for u, v in g.edges.tolist():
        succ[u].append(v)
        indeg[v] += 1
    ready = [v for v in range(n) if indeg[v] == 0]
    out = []
    while ready:
        u = ready.pop(0)
        out.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    return out


def test_classes_merge_out_degree_and_per_graph_k():
    low, high = jp.Problem(_hub_graph(0), 8), jp.Problem(_hub_graph(12), 8)
    assert problem_spec(low).S <= 8 < problem_spec(high).S <= SUCCESSOR_FLOOR
    a, b = search_spec(low), search_spec(high)
    assert a.S == b.S == SUCCESSOR_FLOOR and a.D == max(pow2(problem_spec(low).D),
                                                       DEGREE_FLOOR)
    assert a == b
    # per graph (jp.search), k = 5..16 share the table rows; search_many keeps k's own
    g = small_graph(3, 40)
    cls = {k: prepare(jp.Problem(g, k), 0, coupled=False).cls for k in (2, 4, 5, 8, 16)}
    solo = {k: solo_bucket(c).spec for k, c in cls.items()}
    assert solo[5] == solo[8] == solo[16] and solo[16].K == K_ROWS_FLOOR
    assert solo[2].K == 2 and solo[4].K == 4 and len(set(solo.values())) == 3
    assert [cls[k][0].K for k in (5, 8, 16)] == [8, 8, 16]
    assert search_spec(jp.Problem(small_graph(3, 90), 8)).N > solo[8].N


def _search(prep, bucket, seed: int):
    run = BucketRun([prep], bucket, ManySettings(seed=seed, budget=600, polish=False),
                    None)
    ((_, r),) = run.results()
    return r


@pytest.mark.parametrize("k", [8])
def test_class_padding_changes_no_result(k):
    """The search of a problem under its class's Spec and under the narrowest one
    (slots, successors, rows at their own powers of two): bit-identical."""
    p = jp.Problem(small_graph(3, 40), k)
    prep = prepare(p, 0)
    bucket = solo_bucket(prep.cls)
    own = problem_spec(p)
    narrow = dataclasses.replace(bucket.spec, D=pow2(own.D), S=pow2(own.S), K=pow2(own.K))
    assert narrow.D < bucket.spec.D and narrow.S < bucket.spec.S and narrow.K < bucket.spec.K
    a = _search(prep, bucket, 5)
    b = _search(prep, dataclasses.replace(bucket, spec=narrow), 5)
    assert a.cost == b.cost and a.evaluations == b.evaluations
    assert np.array_equal(a.priorities, b.priorities)
