"""Numeric checks that turn values HiGHS cannot use into one-line `JaxplaceError`s.

The graph accepts any finite non-negative number, but the bounds need more: totals
that stay finite (the simple bound, block costs and memory are sums), and block-model
coefficients (values divided by the objective scale) inside the range HiGHS loads:
it ignores |a| <= 1e-9 (its option `small_matrix_value`) and rejects |a| >= 1e15
(`large_matrix_value`). A model with a dropped coefficient would not be the model
whose bound we certify, so it is refused instead.
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

SMALL_MATRIX_VALUE = 1e-9  # HiGHS ignores coefficients of this magnitude or less
LARGE_MATRIX_VALUE = 1e15  # HiGHS rejects coefficients of this magnitude or more


def _fmt(x) -> str:
    """A number as plain text (1e+308, 0.5), never np.float64(...)."""
    return f"{float(x):g}"


def check_sums(problem: Problem) -> None:
    """The totals the bounds and the partition costs add up are finite."""
    g = problem.graph
    fields = [("work", g.work, g.work), ("size_out", g.tensor_size, g.size_out),
              ("size_param", g.size_param, g.size_param)]
    if problem.cpus:
        fields.append(("cpu_latency", problem.cpu_latency, problem.cpu_latency))
    with np.errstate(over="ignore"):  # an overflow is what is being checked
        for name, values, per_node in fields:
            if not np.isfinite(np.sum(values)):
                i = int(np.argmax(per_node))
                raise JaxplaceError(f"values sum to inf (largest {_fmt(per_node[i])} at "
                                    f"node {g.label(i)}); rescale them", field=name)
        comm = float(np.sum(g.tensor_size)) / problem.bandwidth
        total = float(np.sum(g.work)) + comm
    if not np.isfinite(comm):
        raise JaxplaceError(f"tensor sizes {_fmt(np.sum(g.tensor_size))} over bandwidth "
                            f"{_fmt(problem.bandwidth)} overflow to inf; rescale them",
                            field="bandwidth")
    if not np.isfinite(total):
        raise JaxplaceError(f"work {_fmt(np.sum(g.work))} plus transfer time {_fmt(comm)} "
                            "overflows to inf; rescale them", field="work")


def _check_range(problem: Problem, name: str, coef: np.ndarray, values: np.ndarray,
                 nodes: np.ndarray, unit: str) -> None:
    """Every non-zero coefficient (values / unit, one per entry of `nodes`) is one HiGHS
    loads unchanged."""
    mag = np.abs(coef)
    bad = np.flatnonzero((mag > 0) & (mag <= SMALL_MATRIX_VALUE))
    if not len(bad):
        bad = np.flatnonzero(mag >= LARGE_MATRIX_VALUE)
    if not len(bad):
        return
    label = problem.graph.label
    i, top = int(bad[0]), int(np.argmax(mag))
    small = mag[i] <= SMALL_MATRIX_VALUE
    what = ("drops model coefficients of 1e-09 or less" if small
            else "rejects model coefficients of 1e+15 or more")
    fix = "rescale the values or round the small ones to 0" if small else "rescale them"
    raise JaxplaceError(
        f"value {_fmt(values[i])} at node {label(int(nodes[i]))} is {_fmt(mag[i])} times "
        f"{unit} (the largest value is {_fmt(values[top])} at node "
        f"{label(int(nodes[top]))}); HiGHS {what}, so the MIP bounds cannot be built: "
        f"{fix}", field=name)


def check_coefficients(problem: Problem, *, scale: float, io: bool, overflow: bool,
                       capacity: bool, cpu: bool = False) -> None:
    """The block model's coefficients (see `_model`) are inside HiGHS's range."""
    g, B = problem.graph, problem.bandwidth
    nodes = np.arange(g.num_nodes)
    unit = f"the models' time unit {_fmt(scale)}"
    _check_range(problem, "work", g.work / scale, g.work, nodes, unit)
    if cpu:  # CPU blocks: cpu_latency / scale in their cost rows
        lat = problem.cpu_latency
        _check_range(problem, "cpu_latency", lat / scale, lat, nodes, unit)
    if io:  # tensors with consumers: size / B / scale in the block cost rows
        tens = np.flatnonzero(np.diff(g.tensor_ptr) > 0)
        size = g.tensor_size[tens]
        _check_range(problem, "size_out", size / B / scale, size, g.tensor_producer[tens],
                     f"bandwidth {_fmt(B)} x {unit}")
    pmax = float(g.size_param.max(initial=0.0))
    if pmax > 0 and (overflow or capacity):
        pnorm = g.size_param / pmax
        if capacity:
            _check_range(problem, "size_param", pnorm, g.size_param, nodes,
                         f"the largest size_param {_fmt(pmax)}")
        if overflow:
            _check_range(problem, "size_param", pnorm * (pmax / (B * scale)), g.size_param,
                         nodes, f"bandwidth {_fmt(B)} x {unit}")
