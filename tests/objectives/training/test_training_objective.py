"""The training objective: conformance, and its search, bound and memory limit held
against an oracle written apart from it (every contiguous split, the relaxation
reference of the schedule, in-flight counts read off the reference's timeline)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.objectives import objective_of, objectives
from jaxplace.pipeline._schedule_reference import reference_schedule
from jaxplace.testing import check_objective

SETTINGS = [
    {"schedule": "gpipe", "n_microbatches": 3},
    {"schedule": "1f1b", "n_microbatches": 4},
    {"schedule": "1f1b"},
    {"schedule": "interleaved-1f1b", "n_microbatches": 4, "n_virtual": 2},
    {"schedule": "zero-bubble", "n_microbatches": 4},
    {"schedule": "zbv", "n_microbatches": 4, "n_virtual": 2},
]


def test_conformance():
    rep = check_objective(objectives()["training"])
    assert any(c[1] == "search[default]" and c[2] == "ok" for c in rep.cells)
    assert any(c[1] == "certify[simple]" and c[2] == "ok" for c in rep.cells)
    assert sum(c[2] == "ok" for c in rep.cells) >= 10


def _graph(seed, n, settings, *, acts=True, opt=True):
    rng = np.random.default_rng(seed)
    tensors = []
    for i in range(n - 1):  # a chain, plus skip connections
        cons = [i + 1] + ([int(rng.integers(i + 2, n))] if i + 2 < n and rng.random() < 0.4
                          else [])
        tensors.append((i, float(rng.integers(0, 4)), cons))
    attrs = {"bwd_work": rng.integers(1, 12, n).astype(float)}
    attrs["weight_work"] = np.floor(attrs["bwd_work"] * rng.random(n))
    if acts:
        attrs["act_bytes"] = rng.integers(0, 6, n).astype(float)
    if opt:
        attrs["opt_work"] = rng.integers(0, 3, n).astype(float)
    return CompGraph(rng.integers(1, 8, n).astype(float), (),
                     rng.integers(0, 5, n).astype(float), tensors=tensors,
                     node_attrs=attrs, meta={"training": settings})


def _oracle(graph, k, capacity=math.inf, bandwidth=1.0):
    """min over every contiguous split into <= k stages, costed independently."""
    st = graph.meta["training"]
    sched, v = st["schedule"], st.get("n_virtual", 1)
    factor = 2.0 + st.get("state_factor", 2.0)
    n = graph.num_nodes
    w = graph.node_attrs
    split_bwd = sched in ("zero-bubble", "zbv")
    best, arg = math.inf, None
    for p in range(1, min(k, n) + 1):
        m = st.get("n_microbatches") or 2 * k
        if p % v or (sched == "1f1b" and m < p):
            continue
        for cuts in itertools.combinations(range(1, n), p - 1):
            starts = [0, *cuts]
            ends = [*cuts, n]
            stage = np.zeros(n, int)
            for s, (a, b) in enumerate(zip(starts, ends, strict=True)):
                stage[a:b] = s
            fwd = [graph.work[a:b].sum() for a, b in zip(starts, ends, strict=True)]
            bwd = [w["bwd_work"][a:b].sum() for a, b in zip(starts, ends, strict=True)]
            wgt = [w["weight_work"][a:b].sum() for a, b in zip(starts, ends, strict=True)]
            send = np.zeros(max(p - 1, 0))
            for t in range(graph.num_tensors):
                src = stage[graph.tensor_producer[t]]
                for b in range(p - 1):
                    if src <= b < max(stage[c] for c in graph.consumers(t)):
                        send[b] += graph.tensor_size[t] / bandwidth
            try:
                tl = reference_schedule(sched, fwd, bwd, m, send=send, n_virtual=v,
                                        **({"weight": wgt} if split_bwd else {}))
            except JaxplaceError:
                continue
            # activations held: from an F's start to the end of the releasing action
            release = "W" if split_bwd else "B"
            held = np.zeros(p, int)
            for s in range(p):
                ev = sorted([(e.start, 1) for e in tl.events if e.kind == "F" and e.stage == s]
                            + [(e.end, -1) for e in tl.events
                               if e.kind == release and e.stage == s])
                cur = 0
                for _, d in ev:  # an end at t releases before a start at t
                    cur += d
                    held[s] = max(held[s], cur)
            mem = [graph.size_param[a:b].sum() * factor
                   + held[s] * w["act_bytes"][a:b].sum() + w["act_bytes"][a:b].max()
                   for s, (a, b) in enumerate(zip(starts, ends, strict=True))]
            ranks = tl.stage_rank
            rank_mem = np.bincount(ranks, weights=mem)
            if rank_mem.max() > capacity:
                continue
            end = np.zeros(p // v)
            for e in tl.events:
                end[e.rank] = max(end[e.rank], e.end)
            opt = np.bincount(ranks, weights=[w["opt_work"][a:b].sum() for a, b in
                                              zip(starts, ends, strict=True)])
            cost = max(tl.step_time, float((end + opt).max()))
            if cost < best:
                best, arg = cost, stage
    return best, arg


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(map(str, s.values())))
def test_search_is_the_oracles_optimum_and_bounds_hold(settings):
    for seed in range(4):
        g = _graph(seed, 7, settings)
        for k in (2, 4):
            p = jp.Problem(g, k, objective="training")
            assert objective_of(p).name == "training"
            opt, arg = _oracle(g, k)
            r = jp.search(p, progress=False)
            assert r.cost == pytest.approx(opt, rel=1e-9), (seed, k)
            assert "proved_by" in r.info
            assert jp.evaluate_partition(p, r.partition).cost == pytest.approx(r.cost)
            assert p.objective_impl.lower_bound(p) <= opt * (1 + 1e-9)
            if arg is not None:
                assert p.objective_impl.evaluate_partition(p, arg).cost == \
                    pytest.approx(opt, rel=1e-9)


@pytest.mark.parametrize("settings", SETTINGS[:2] + SETTINGS[4:5],
                         ids=lambda s: s["schedule"])
def test_memory_limit_rules_out_the_fastest_split(settings):
    hits = 0
    for seed in range(12):
        g = _graph(seed, 7, settings)
        free, free_arg = _oracle(g, 3)
        free_mem = jp.Problem(g, 3, objective="training").objective_impl.evaluate_partition(
            jp.Problem(g, 3, objective="training"), free_arg).rank_memory.max()
        cap = free_mem - 0.5  # the fastest split no longer fits
        p = jp.Problem(g, 3, objective="training", capacity=cap)
        opt, _ = _oracle(g, 3, capacity=cap)
        r = jp.search(p, progress=False)
        assert r.cost == pytest.approx(opt, rel=1e-9) or (math.isinf(opt)
                                                          and math.isinf(r.cost))
        if math.isfinite(opt):
            c = p.objective_impl.evaluate_partition(p, r.partition)
            assert c.rank_memory.max() <= cap and c.cost >= free - 1e-9
            hits += 1
    assert hits >= 4


def test_in_flight_memory_follows_the_schedule():
    g = _graph(1, 8, {"schedule": "gpipe", "n_microbatches": 5}, opt=False)
    p = jp.Problem(g, 4, objective="training")
    a = np.repeat(np.arange(4), 2)
    c = p.objective_impl.evaluate_partition(p, a)
    assert list(c.in_flight) == [5, 5, 5, 5]
    g2 = _graph(1, 8, {"schedule": "1f1b", "n_microbatches": 5}, opt=False)
    p2 = jp.Problem(g2, 4, objective="training")
    c2 = p2.objective_impl.evaluate_partition(p2, a)
    assert list(c2.in_flight) == [4, 3, 2, 1]  # min(p - i, m)
    act = np.add.reduceat(g2.node_attrs["act_bytes"], [0, 2, 4, 6])
    state = np.add.reduceat(g2.size_param, [0, 2, 4, 6]) * 4.0  # params, grads, Adam
    work_set = np.maximum.reduceat(g2.node_attrs["act_bytes"], [0, 2, 4, 6])
    np.testing.assert_allclose(c2.memory, state + act * [4, 3, 2, 1] + work_set, rtol=1e-12)
    # the optimizer step's temporaries, and the outputs a stage keeps until backward
    g3 = _graph(1, 8, {"schedule": "1f1b", "n_microbatches": 5, "step_factor": 50.0,
                       "held_bytes_per_unit": 2.0}, opt=False)
    p3 = jp.Problem(g3, 4, objective="training")
    c3 = p3.objective_impl.evaluate_partition(p3, a)
    sends = np.asarray([sum(g3.tensor_size[t] for t in range(g3.num_tensors)
                            if g3.tensor_producer[t] <= 2 * b + 1
                            and max(g3.consumers(t)) > 2 * b + 1) for b in range(3)])
    kept = np.append(sends * 2.0, 0.0) + np.append(0.0, sends * 2.0)  # out + in
    step = np.add.reduceat(g3.size_param, [0, 2, 4, 6]) * 54.0
    np.testing.assert_allclose(c3.memory, np.maximum(
        state + (act + kept) * [4, 3, 2, 1] + work_set, step), rtol=1e-12)
    assert np.any(step > state + (act + kept) * [4, 3, 2, 1] + work_set)


def test_a_split_block_and_unrunnable_counts():
    g = _graph(0, 6, {"schedule": "1f1b", "n_microbatches": 2})
    p = jp.Problem(g, 3, objective="training")
    with pytest.raises(JaxplaceError, match="not one run"):
        p.objective_impl.evaluate_partition(p, np.array([0, 1, 0, 1, 2, 2]))
    # 3 stages under 1F1B need 3 microbatches: infeasible, with the reason
    c = p.objective_impl.evaluate_partition(p, np.array([0, 0, 1, 1, 2, 2]))
    assert math.isinf(c.cost) and "microbatches" in c.why


@pytest.mark.parametrize("meta, field", [
    ({"schedule": "pipedream"}, "meta.training.schedule"),
    ({"n_microbatches": 0}, "meta.training.n_microbatches"),
    ({"schedule": "zbv", "n_virtual": 1}, "meta.training.n_virtual"),
    ({"state_factor": -1}, "meta.training.state_factor"),
    ({"microbatches": 4}, "meta.training"),
])
def test_bad_settings_are_one_line_errors(meta, field):
    g = _graph(0, 4, meta)
    with pytest.raises(JaxplaceError) as err:
        jp.Problem(g, 2, objective="training")
    assert err.value.field == field and "\n" not in str(err.value)


def test_bad_node_attribute_is_refused():
    g = _graph(0, 4, {})
    bad = CompGraph(g.work, (), g.size_param, tensors=[(0, 1.0, [1])],
                    node_attrs={"bwd_work": np.array([1.0, -1.0, 1.0, 1.0])})
    with pytest.raises(JaxplaceError, match="non-negative") as err:
        jp.Problem(bad, 2, objective="training")
    assert err.value.field == "node_attrs.bwd_work"
