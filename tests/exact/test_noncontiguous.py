"""Non-contiguous splits (issue 15): the IP of Tarnawski et al. against brute force over
all assignments, evaluate_partition(contiguous=False), the virtual-device pipeline,
`jp.search(method="noncontiguous")` and `jaxplace partition --noncontiguous`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from brute import (
    brute_force_noncontiguous,
    brute_force_optimum,
    direct_block_cost,
    min_runs,
)
from hypothesis import given, settings
from strategies import same_cost, tiny_cpu_block_problems

import jaxplace as jp
from jaxplace.exact.noncontiguous import (
    build_model,
    noncontiguous_lower_bound,
    solve_noncontiguous,
    start_vector,
)
from jaxplace.exact.pieces import virtual_pieces
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.units import ordering_edges

# HiGHS stops within mip_rel_gap of the optimum; 1e-9 makes its "Optimal" exact up to
# float64 rounding of sums of a few one-decimal weights (rtol 1e-7 below).
EXACT = dict(time_limit=20.0, mip_rel_gap=1e-9)


def _three_chain():
    """a -> b -> c, work 1, 2, 1, no tensors, k = 2: the contiguous optimum is 3
    ({a, b} | {c}), the non-contiguous one 2 ({a, c} | {b}), in three pieces."""
    g = jp.CompGraph([1.0, 2.0, 1.0], [(0, 1), (1, 2)], [0.0] * 3, [0.0] * 3)
    return jp.Problem(g, 2)


def check_pieces(problem: jp.Problem, a: np.ndarray, pieces) -> None:
    """Every piece on one block, the pieces in a topological order of the ordering
    edges, `order` their concatenation."""
    assert pieces.piece_of.shape == (problem.n,) and (pieces.piece_of >= 0).all()
    np.testing.assert_array_equal(pieces.device[pieces.piece_of], a)
    e = ordering_edges(problem.graph)
    assert (pieces.piece_of[e[:, 0]] <= pieces.piece_of[e[:, 1]]).all()
    assert sorted(pieces.order.tolist()) == list(range(problem.n))
    np.testing.assert_array_equal(np.diff(pieces.piece_of[pieces.order]) >= 0, True)


def test_three_chain_beats_contiguous():
    p = _three_chain()
    r = solve_noncontiguous(p, **EXACT)
    assert r.cost == pytest.approx(2.0, abs=1e-9) and r.status == "Optimal"
    assert r.start_cost == pytest.approx(3.0) and r.bound == pytest.approx(2.0, abs=1e-9)
    assert r.pieces.num_pieces == 3 and r.pieces.minimal
    np.testing.assert_array_equal(r.assignment, [0, 1, 0])  # accelerator 0 runs first
    check_pieces(p, r.assignment, r.pieces)
    with pytest.raises(jp.JaxplaceError, match="cycle"):
        evaluate_partition(p, r.assignment)
    assert evaluate_partition(p, r.assignment, contiguous=False).bottleneck == 2.0


def test_contiguous_false_keeps_placement_rules():
    g = jp.CompGraph([1.0, 1.0, 1.0], [(0, 1), (1, 2)], [0.0] * 3, [1.0] * 3,
                     node_attrs={"color_class": np.array([0, -1, 0]),
                                 "supported_on_accel": np.array([True, False, True]),
                                 "cpu_latency": np.ones(3)})
    p = jp.Problem(g, 2, cpus=1)
    with pytest.raises(jp.JaxplaceError, match="color class"):
        evaluate_partition(p, [0, 2, 1], contiguous=False)
    with pytest.raises(jp.JaxplaceError, match="not supported"):
        evaluate_partition(p, [0, 1, 0], contiguous=False)
    c = evaluate_partition(p, [0, 2, 0], contiguous=False)  # cyclic quotient, accepted
    assert c.bottleneck == pytest.approx(2.0 + 1.0 + 1.0)  # work 2, tensor out, tensor in
    # the same as the contiguous rule wherever the quotient is acyclic
    ok = [2, 2, 2]
    assert evaluate_partition(p, ok, contiguous=False).bottleneck == \
        evaluate_partition(p, ok).bottleneck


def test_start_vector_is_feasible_at_its_cost():
    """The model's column vector of a split satisfies every row, with z = its cost."""
    rng = np.random.default_rng(0)
    n = 9
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.3]
    attrs = {"cpu_latency": rng.random(n) * 3, "color_class": np.array(
        [0, -1, 0, 1, -1, 1, -1, -1, -1]), "supported_on_accel": np.arange(n) != 4}
    g = jp.CompGraph(rng.random(n), edges, rng.random(n), rng.random(n), node_attrs=attrs)
    p = jp.Problem(g, 3, cpus=1, memory=1.0, bandwidth=2.0)
    m = build_model(p)
    a = np.array([0, 1, 0, 2, 3, 2, 1, 0, 3])
    cost = evaluate_partition(p, a, contiguous=False).bottleneck
    x = start_vector(m, p, a, cost)
    A = m.arrays
    rows = np.repeat(np.arange(len(A["row_lo"])), np.diff(A["start"]))
    act = np.bincount(rows, weights=A["value"] * x[A["index"]], minlength=len(A["row_lo"]))
    assert (act >= A["row_lo"] - 1e-9).all() and (act <= A["row_hi"] + 1e-9).all()
    assert (x >= A["col_lo"] - 1e-12).all() and (x <= A["col_hi"] + 1e-12).all()


@settings(max_examples=40)
@given(tiny_cpu_block_problems(max_nodes=5, training=True))
def test_ip_equals_brute_force_over_all_assignments(problem):
    opt, _ = brute_force_noncontiguous(problem)
    if problem.cpus == 0 and not problem.supported.all():
        with pytest.raises(jp.JaxplaceError, match="no CPU block"):
            solve_noncontiguous(problem, **EXACT)
        return
    r = solve_noncontiguous(problem, **EXACT)
    assert same_cost(r.cost, opt, rtol=1e-7), (r.cost, opt, r.status)
    if np.isinf(opt):
        return
    assert r.status == "Optimal" and r.gap <= 1e-7
    assert r.bound <= r.cost and r.bound >= noncontiguous_lower_bound(problem) - 1e-9
    # the split is what the IP says: evaluate_partition and the definition agree
    c = evaluate_partition(problem, r.assignment, contiguous=False)
    assert same_cost(c.bottleneck, r.cost)
    k = problem.k
    direct = max(direct_block_cost(problem, np.flatnonzero(r.assignment == b),
                                   "accel" if b < k else "cpu")
                 for b in range(problem.num_blocks))
    assert same_cost(direct, r.cost, rtol=1e-7)
    # never worse than the best contiguous split (the warm start is one)
    assert r.cost <= brute_force_optimum(problem) * (1 + 1e-9) + 1e-12
    check_pieces(problem, r.assignment, r.pieces)
    assert r.pieces.minimal and r.pieces.num_pieces == min_runs(problem, r.assignment) \
        + _extra_pieces(problem, r)


def _extra_pieces(problem, r) -> int:
    """Pieces holding only nodes off the ordering edges (a block with backward nodes
    and no forward node gets one of its own)."""
    bwd = problem.graph.node_attrs.get("is_backward")
    if bwd is None:
        return 0
    fwd_blocks = set(r.assignment[~np.asarray(bwd, dtype=bool)].tolist())
    return len(set(r.assignment.tolist()) - fwd_blocks)


@settings(max_examples=40)
@given(tiny_cpu_block_problems(max_nodes=6, training=True))
def test_virtual_pieces_are_fewest(problem):
    """On any split (even a random, invalid-for-contiguity one) the pieces are valid and
    as few as the best topological order allows."""
    rng = np.random.default_rng(problem.n)
    a = rng.integers(0, problem.num_blocks, problem.n)
    pieces = virtual_pieces(problem, a)
    check_pieces(problem, a, pieces)
    assert pieces.minimal
    bwd = problem.graph.node_attrs["is_backward"]
    fwd_blocks = set(a[~bwd].tolist())
    own = len(set(a.tolist()) - fwd_blocks)
    assert pieces.num_pieces == min_runs(problem, a) + own


def test_contiguous_split_is_one_piece_per_block():
    g = jp.CompGraph([1.0] * 6, [(i, i + 1) for i in range(5)], [0.0] * 6, [1.0] * 6)
    p = jp.Problem(g, 3)
    a = np.array([0, 0, 1, 1, 2, 2])
    pieces = virtual_pieces(p, a)
    assert pieces.num_pieces == 3 and pieces.minimal
    assert pieces.cuts == (2, 4)


def test_search_method_and_result():
    p = _three_chain()
    r = jp.search(p, method="noncontiguous", time_limit=20)
    assert r.method == "noncontiguous" and r.cost == pytest.approx(2.0)
    assert r.partition.cost == r.cost
    assert evaluate_partition(p, r.partition.assignment,
                              contiguous=False).bottleneck == pytest.approx(r.cost)
    assert r.schedule.num_pieces == 3 and r.partition.num_blocks == 3  # pieces
    assert r.info["status"] == "Optimal" and r.info["bound"] == pytest.approx(2.0)
    assert not r.interrupted
    # a given start is used as the warm start
    r2 = jp.search(p, method="noncontiguous", time_limit=20, start=[0, 0, 1])
    assert r2.info["start_source"] == "given" and r2.cost == pytest.approx(2.0)
    with pytest.raises(jp.JaxplaceError, match="unknown option"):
        jp.search(p, method="noncontiguous", bogus=1)


def test_cli_noncontiguous(tmp_path, capsys):
    from jaxplace.cli.main import main

    data = {"directed": True, "graph": {},
            "nodes": [{"id": i, "work": w, "size_out": 0.0}
                      for i, w in enumerate([1.0, 2.0, 1.0])],
            "edges": [{"source": 0, "target": 1}, {"source": 1, "target": 2}]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "r.json"
    assert main(["partition", str(path), "-k", "2", "--noncontiguous", "--time-limit",
                 "20", "--quiet", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "pieces" in text.splitlines()[1] and "virtual pieces 3 (fewest)" in text
    assert "noncontiguous IP: Optimal" in text
    res = json.loads(out.read_text())
    assert res["bottleneck"] == pytest.approx(2.0) and res["contiguous"] is False
    assert res["virtual_pieces"]["num_pieces"] == 3
    assert [b["pieces"] for b in res["blocks"]] == [2, 1]
    assert [q["block"] for q in res["virtual_pieces"]["pieces"]] == [0, 1, 0]
    assert res["ip"]["status"] == "Optimal" and res["ip"]["gap"] == pytest.approx(0.0)
    assert res["lower_bound"] == pytest.approx(res["ip"]["bound"])
    # the written result loads back (as a non-contiguous split)
    from jaxplace.formats.results import load_assignment

    np.testing.assert_array_equal(load_assignment(out, jp.load_problem(path, 2)),
                                  res["assignment"])
    assert main(["partition", str(path), "-k", "2", "--noncontiguous", "--certify"]) == 2


def test_cancel_stops_highs_with_the_warm_start():
    """A set cancel event interrupts HiGHS at its first callback; the result is still a
    valid split (the warm start or better) with a valid bound."""
    import threading

    rng = np.random.default_rng(3)
    n = 60
    edges = [(u, v) for u in range(n) for v in range(u + 1, min(n, u + 6))
             if rng.random() < 0.5]
    g = jp.CompGraph(rng.random(n) + 0.5, edges, np.zeros(n), rng.random(n))
    p = jp.Problem(g, 4)
    cancel = threading.Event()
    cancel.set()
    r = solve_noncontiguous(p, cancel=cancel, time_limit=60, warm="dfs")
    assert r.status != "Optimal" and r.cost <= r.start_cost
    assert r.bound <= r.cost
    assert evaluate_partition(p, r.assignment, contiguous=False).bottleneck == \
        pytest.approx(r.cost, rel=1e-12)
