"""The exact side of the latency objective: brute force, MOIRAI's MILP, the contiguous
IP, the cheap lower bounds; every number checked against enumeration on tiny graphs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.objectives.latency import LatencyInstance, validate_schedule
from jaxplace.objectives.latency._events import greedy_schedule
from jaxplace.objectives.latency.brute import brute_contiguous, brute_force
from jaxplace.objectives.latency.contiguous import solve_contiguous
from jaxplace.objectives.latency.milp import latency_lower_bound, moirai_lp_bound, solve_moirai

# HiGHS stops at mip_rel_gap 1e-7 and its feasibility tolerance is 1e-6 on times
# scaled to O(100): optima and bounds agree with enumeration to ~1e-8 relative
RTOL = 1e-6


def random_instance(seed: int, n: int, d: int, *, memory: bool = False,
                    forbidden: bool = False, asym: bool = True) -> LatencyInstance:
    """A random DAG whose tensors have 1-3 consumers (some ops two tensors), op times
    in [0.5, 3), optional memory limits, forbidden (inf) devices, directed links."""
    rng = np.random.default_rng(seed)
    tensors = []
    for u in range(n - 1):
        later = np.arange(u + 1, n)
        k = int(rng.integers(1, min(3, len(later)) + 1))
        cs = sorted(rng.choice(later, size=k, replace=False).tolist())
        if u == 0 or rng.random() < 0.8:
            tensors.append((u, 1.0, cs))
        if rng.random() < 0.2:
            tensors.append((u, 1.0, [int(rng.choice(later))]))
    g = CompGraph(np.ones(n), tensors=tensors)
    times = rng.uniform(0.5, 3.0, size=(n, d))
    if forbidden:
        mask = rng.random((n, d)) < 0.25
        mask[np.arange(n), rng.integers(0, d, n)] = False
        times[mask] = np.inf
    mem = rng.uniform(1, 3, n) if memory else np.zeros(n)
    cap = np.full(d, mem.sum() * rng.uniform(0.45, 0.75)) if memory else np.full(d, np.inf)
    bw = rng.uniform(0.5, 2.0, (d, d)) if asym else np.ones((d, d))
    lat = rng.uniform(0.0, 0.5, (d, d))
    if not asym:
        lat = (lat + lat.T) / 2
    return LatencyInstance(g, times, mem, cap, bw, lat, rng.uniform(0.0, 3.0, g.num_tensors))


# (seed, n, d, memory, forbidden, asym): every flag with 2 and 3 devices
CASES = [(s, 4 + s % 2, 2 + (s // 2) % 2, s % 3 == 0, s % 4 == 1, s % 5 != 2)
         for s in range(16)]


@pytest.fixture(scope="module")
def solved():
    """{case: (instance, brute optimum, brute schedule)}, shared by the tests."""
    out = {}
    for case in CASES:
        s, n, d, mem, forb, asym = case
        inst = random_instance(s, n, d, memory=mem, forbidden=forb, asym=asym)
        out[case] = (inst, *brute_force(inst))
    return out


def close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= RTOL * max(abs(a), abs(b))


@pytest.mark.parametrize("case", CASES)
def test_moirai_optimum_equals_brute_force(case, solved):
    inst, opt, sched = solved[case]
    if sched is not None:
        validate_schedule(inst, sched)
        assert sched.makespan == opt
    res = solve_moirai(inst, time_limit=20)
    assert close(res.makespan, opt), (res.makespan, opt)
    if math.isfinite(opt):
        assert res.status == "Optimal"
        validate_schedule(inst, res.schedule)
        assert res.schedule.makespan == res.makespan
        assert res.bound <= opt * (1 + RTOL)
        assert close(res.bound, opt)
    else:
        assert res.schedule is None and res.bound == math.inf


@pytest.mark.parametrize("case", CASES[:8])
def test_lower_bounds_below_optimum(case, solved):
    inst, opt, _ = solved[case]
    assert latency_lower_bound(inst) <= opt
    assert moirai_lp_bound(inst, time_limit=10) <= opt * (1 + RTOL)


@pytest.mark.parametrize("case", CASES[:8])
def test_contiguous_ip(case, solved):
    inst, opt, _ = solved[case]
    res = solve_contiguous(inst, time_limit=20)
    block = brute_contiguous(inst)
    if not math.isfinite(block):
        assert res.makespan == math.inf or res.makespan >= opt
        return
    assert res.status == "Optimal"
    validate_schedule(inst, res.schedule)
    # its schedule is valid, so no better than the optimum; its bound is the block
    # model's optimum; the decoded semi-active schedule is never longer than that
    assert res.makespan >= opt * (1 - 1e-12)
    assert close(res.bound, block), (res.bound, block)
    assert res.makespan <= block * (1 + RTOL)


def test_warm_start_is_used_and_checked(solved):
    inst, opt, sched = solved[CASES[1]]
    res = solve_moirai(inst, time_limit=0.001, warm_start=sched)
    assert res.makespan <= sched.makespan * (1 + 1e-12)
    validate_schedule(inst, res.schedule)
    greedy = greedy_schedule(inst)
    res = solve_moirai(inst, time_limit=20, warm_start=greedy)
    assert close(res.makespan, opt)
    bad = type(sched)(sched.device, sched.start - 1.0, sched.finish - 1.0, sched.transfers)
    with pytest.raises(JaxplaceError, match="warm_start"):
        solve_moirai(inst, warm_start=bad)


def _instance(times, tensors, *, tensor_bytes, bw=1.0, lat=0.0, n=None):
    times = np.asarray(times, dtype=float)
    n, d = times.shape
    g = CompGraph(np.ones(n), tensors=tensors)
    return LatencyInstance(g, times, np.zeros(n), np.full(d, np.inf),
                           np.full((d, d), bw), np.full((d, d), lat),
                           np.asarray(tensor_bytes, dtype=float))


def test_hand_built_optima():
    # a fork: 0 -> {1, 2}; both branches in parallel pay one transfer of 1
    inst = _instance([[1, 1], [4, 4], [4, 4]], [(0, 1.0, [1, 2])], tensor_bytes=[1.0])
    opt, s = brute_force(inst)
    assert opt == pytest.approx(6.0, abs=1e-12)  # 1 + transfer 1 + 4
    assert solve_moirai(inst, time_limit=10).makespan == pytest.approx(6.0, rel=1e-9)
    # a tensor with two consumers on the other device is sent once
    inst = _instance([[1, 10], [10, 1], [10, 1]], [(0, 1.0, [1, 2])], tensor_bytes=[2.0])
    opt, s = brute_force(inst)
    assert opt == pytest.approx(1 + 2 + 1 + 1, abs=1e-12)
    assert len(s.transfers) == 1
    assert solve_moirai(inst, time_limit=10).makespan == pytest.approx(opt, rel=1e-9)


def test_send_port_serializes_transfers():
    # op 0 on device 0 feeds ops 1 and 2 that only run on devices 1 and 2: its two
    # tensors leave through one send port, one after the other
    inf = np.inf
    inst = _instance([[1, inf, inf], [inf, 1, inf], [inf, inf, 1]],
                     [(0, 1.0, [1]), (0, 1.0, [2])], tensor_bytes=[3.0, 3.0])
    opt, s = brute_force(inst)
    assert opt == pytest.approx(1 + 3 + 3 + 1, abs=1e-12)
    assert solve_moirai(inst, time_limit=10).makespan == pytest.approx(opt, rel=1e-9)


def test_related_machines_load_bound():
    # times w_v / s_p on unconnected ops: the bound is total work / total speed
    w, speed = np.array([2.0, 4.0, 6.0]), np.array([1.0, 2.0])
    inst = _instance(w[:, None] / speed[None, :], [], tensor_bytes=[])
    assert latency_lower_bound(inst) == pytest.approx(w.sum() / speed.sum(), rel=1e-12)
    assert latency_lower_bound(inst) <= brute_force(inst)[0]


def test_brute_force_refuses_big_instances():
    inst = random_instance(0, 7, 2)
    with pytest.raises(JaxplaceError, match="at most"):
        brute_force(inst)


def test_time_limited_solve_on_a_larger_graph():
    inst = random_instance(3, 14, 3, memory=True)
    res = solve_moirai(inst, time_limit=2)
    assert math.isfinite(res.makespan)
    validate_schedule(inst, res.schedule)
    assert latency_lower_bound(inst) <= res.bound <= res.makespan


@pytest.mark.parametrize("seed", range(4))
def test_zero_time_ops(seed):
    # view ops cost 0: a zero-time op may start with another op of its device
    inst = random_instance(50 + seed, 5, 2)
    times = inst.times.copy()
    times[np.random.default_rng(seed).random(inst.n) < 0.4] = 0.0
    tb = inst.tensor_bytes.copy()
    tb[::2] = 0.0  # zero-byte tensors over zero-latency links: zero-length transfers
    lat = np.zeros_like(inst.link_latency)
    inst = LatencyInstance(inst.graph, times, inst.memory, inst.capacity, inst.bandwidth,
                           lat, tb)
    opt, sched = brute_force(inst)
    validate_schedule(inst, sched)
    res = solve_moirai(inst, time_limit=20)
    validate_schedule(inst, res.schedule)
    assert close(res.makespan, opt)
