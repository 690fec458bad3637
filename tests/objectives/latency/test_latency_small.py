"""The default latency search against MOIRAI's MILP optimum on tiny seeded graphs
(issue 17: "search within 1% of the optimum"), and the device/order local search
(`latency.refine`) that closes the gap left by the earliest-finish rule."""

from __future__ import annotations

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.generators.latency_small import random_cluster, random_dag, small_problems
from jaxplace.objectives.latency.baselines import BASELINES, eft_greedy
from jaxplace.objectives.latency.instance import validate_schedule
from jaxplace.objectives.latency.milp import solve_moirai
from jaxplace.objectives.latency.reference import schedule_order
from jaxplace.objectives.latency._refine import refine, start_order

# the 1% target of the issue; the MILP stops at mip_rel_gap 1e-7
WITHIN = 1.01


@pytest.fixture(scope="module")
def cases():
    """{label: (problem, MILP optimum)} for three 12-op instances where the EFT rule
    alone misses the optimum by 2-12% (experiments/latency.md, `bench latency --small`)."""
    probs = dict(small_problems(sizes=(12,), seeds=(0, 1)))
    out = {}
    for label in ("dag12-s0 moirai_inter", "dag12-s0 random3-s1", "dag12-s1 random3-s1"):
        pr = probs[label]
        m = solve_moirai(pr.latency, time_limit=30)
        assert m.status == "Optimal"
        out[label] = (pr, m.makespan, m.schedule)
    return out


def test_generators_are_seeded():
    a, b = random_dag(3, 10), random_dag(3, 10)
    assert a.num_nodes == 10 and np.array_equal(a.node_attrs["flops"], b.node_attrs["flops"])
    c = random_cluster(5, 3)
    assert c.num_devices == 3 and np.array_equal(c.bandwidth, random_cluster(5, 3).bandwidth)


def test_refine_reaches_the_optimum_from_the_baselines(cases):
    for label, (pr, opt, _) in cases.items():
        inst = pr.latency
        starts = [fn(inst) for fn in BASELINES.values()]
        assert min(s.makespan for s in starts) > opt * 1.01  # the gap refine closes
        best = min((refine(inst, s, time_limit=1.0) for s in starts),
                   key=lambda s: s.makespan)
        validate_schedule(inst, best)
        # the reference oracle: the refined schedule is its order replayed, devices fixed
        again = schedule_order(inst, start_order(inst, best), best.device)
        assert again.makespan == best.makespan
        assert best.makespan <= opt * WITHIN, (label, best.makespan / opt)


def test_refine_keeps_an_optimal_schedule(cases):
    for pr, opt, sched in cases.values():
        s = refine(pr.latency, sched, time_limit=0.2)
        assert s.makespan == pytest.approx(opt, rel=1e-9)  # float64 replay of the MILP


def test_default_search_within_one_percent(cases):
    pr, opt, _ = cases["dag12-s0 moirai_inter"]
    assert eft_greedy(pr.latency).makespan > opt * 1.1
    r = jp.search(pr, budget=600, seed=0, progress=False, refine_seconds=2.0)
    validate_schedule(pr.latency, r.schedule)
    assert r.cost == r.schedule.makespan
    assert r.cost <= opt * WITHIN, r.cost / opt
    off = jp.search(pr, budget=600, seed=0, progress=False, refine_seconds=0.0)
    assert "refined" not in off.info and off.cost >= r.cost
