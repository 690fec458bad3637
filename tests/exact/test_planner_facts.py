"""The planner's cheap facts stay cheap (issue 51): the ideal count refuses at once
when an antichain proves too many ideals, and otherwise stops at a work limit that is
a count (not seconds), so the planner's choice is the same at any machine load.
Timings are the benchmark's (experiments/engine.md), not asserted here."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import tiny_graphs

import jaxplace as jp
from jaxplace.exact import build_atoms, count_ideals
from jaxplace.exact.dp import COUNT_MAX_WORK, count_problem_ideals
from jaxplace.exact.lattice import widest_layer
from jaxplace.generators.regal import MODELS, regal


def brute_ideals(atoms) -> int:
    """Downsets of the atom DAG by enumerating every subset (tiny DAGs)."""
    A = atoms.num_atoms
    count = 0
    for bits in itertools.product((False, True), repeat=A):
        if all(not bits[a] or all(bits[p] for p in atoms.preds(a)) for a in range(A)):
            count += 1
    return count


@settings(max_examples=40, deadline=None)
@given(tiny_graphs(max_nodes=7))
def test_widest_layer_is_a_true_lower_bound(g):
    atoms = build_atoms(jp.Problem(g, 2), merge=False)
    n = brute_ideals(atoms)
    assert count_ideals(atoms) == n
    assert 2 ** widest_layer(atoms) <= n


def test_antichain_refuses_at_once_and_the_work_limit_stops_a_long_chain():
    wide = jp.CompGraph(np.ones(20), [], np.ones(20), np.ones(20))  # 2^20 ideals
    with pytest.raises(jp.JaxplaceError, match="antichain of 20"):
        count_ideals(build_atoms(jp.Problem(wide, 2), merge=False), 60_000)
    n = 1500
    chain = jp.CompGraph(np.arange(1, n + 1.0), [(i, i + 1) for i in range(n - 1)],
                         np.ones(n), np.ones(n))
    p = jp.Problem(chain, 4)
    atoms = build_atoms(p)
    # a chain of A atoms has A + 1 ideals; the work (ideals x (atoms + edges)) grows
    # with A^2, so a low limit refuses it, the default one (3e7) does not at 1,500
    assert count_problem_ideals(p, 60_000, max_work=None) == atoms.num_atoms + 1
    assert count_problem_ideals(p, 60_000) == atoms.num_atoms + 1
    assert count_problem_ideals(p, 60_000, max_work=1e5) is None
    assert COUNT_MAX_WORK < (atoms.num_atoms + 1) * (2 * atoms.num_atoms) * 100


@pytest.mark.parametrize("n", [5000, pytest.param(20000, marks=pytest.mark.heavy)])
def test_big_graphs_of_every_family_skip_the_exact_step_cheaply(n):
    """The planner's exact check on 5,000- and 20,000-op REGAL-like graphs: refused
    by the antichain check (no enumeration) for every generator family (20,000 is
    heavy: generating those graphs takes minutes, the check itself under a second)."""
    for model in MODELS:
        p = jp.Problem(regal(0, n=n, model=model), 16)
        atoms = build_atoms(p)
        assert 2 ** widest_layer(atoms) > 60_000, model
        assert p.objective_impl.exact_fits(p) is None, model


def test_a_graph_too_long_to_count_is_refused_before_its_atoms_are_built(monkeypatch):
    """Counting over A atoms costs at least A^2 (every level holds an ideal): past the
    work limit the count refuses from an O(n) lower bound on A, before `build_atoms`
    (the part that costs tenths of a second at 20,000 ops)."""
    import jaxplace.exact.dp as dp

    n = 6000
    chain = jp.CompGraph(np.ones(n), [(i, i + 1) for i in range(n - 1)], np.ones(n),
                         np.ones(n))
    p = jp.Problem(chain, 4)
    assert dp.least_forward_atoms(p) == n
    assert n * (n + 1) > COUNT_MAX_WORK

    def boom(*a, **k):
        raise AssertionError("built the atoms")

    monkeypatch.setattr(dp, "build_atoms", boom)
    assert count_problem_ideals(p, 60_000) is None
    # the bound holds: a unit without work may merge away, one with work does not
    g = jp.CompGraph(np.r_[0.0, np.ones(4)], [(0, 1), (1, 2), (2, 3), (3, 4)],
                     np.zeros(5), np.ones(5))
    assert dp.least_forward_atoms(jp.Problem(g, 2)) == 4 <= \
        build_atoms(jp.Problem(g, 2)).num_atoms


def test_under_a_time_limit_the_count_also_stops_at_its_deadline():
    """A deadline (the planner gives one only under the user's time limit: 2% of it)
    ends the count like its limits do; without one the answer is the count."""
    import time

    n = 300
    chain = jp.CompGraph(np.ones(n), [(i, i + 1) for i in range(n - 1)], np.ones(n),
                         np.ones(n))
    p = jp.Problem(chain, 4)
    assert count_problem_ideals(p, 60_000) == n + 1
    assert count_problem_ideals(p, 60_000, deadline=time.perf_counter() - 1) is None
    assert p.objective_impl.exact_fits(p, deadline=time.perf_counter() - 1) is None


@pytest.mark.heavy
@pytest.mark.parametrize("model", MODELS)
def test_a_time_limit_of_60_s_searches_5000_op_graphs_of_every_family(model):
    """Issue 51's target: `partition --time-limit 60` on 5,000-op graphs of every
    family searches (more than the first solution) and ends within the limit (the
    multilevel path; the facts before it cost under a second)."""
    p = jp.Problem(regal(0, n=5000, model=model), 16)
    res = jp.search(p, time_limit=60, progress=False)
    assert res.evaluations > 1, model
    assert res.wall_time <= 60 * 1.05, (model, res.wall_time)
    assert res.info["exact_check_s"] < 60 * 0.02 + 1.0, model
