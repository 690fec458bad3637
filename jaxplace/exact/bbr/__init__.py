"""Branch, bound and remember (BB&R) over ideals: lower bounds and proofs past the DP.

    from jaxplace.exact.bbr import solve_bbr
    res = solve_bbr(problem, time_limit=10.0)
    res.lower_bound, res.cost, res.optimal   # largest T refuted, best split, proven?

As a certificate rung: `jp.certify(problem, methods=("bbr",))` (`BbrBound`; the
closed-form forced-crossings rung is `CrossBound`); as the planner's exact step:
`exact="bbr"` (`bbr_exact`).

Modules, lowest first: `instance` (the records BB&R reads and its comparison slack),
`split` (blocks a cut tensor group touches), `cross` (forced crossings of a guess T),
`model` (the instance as bitsets, per-T data), `search` (one check: is there a split
with every block <= T?), `solve` (the climb of guesses), `bound` (the ladder rungs and
the exact step).
"""

from jaxplace.exact.bbr.bound import BbrBound, CrossBound, bbr_exact
from jaxplace.exact.bbr.cross import CrossData, crossing_bound
from jaxplace.exact.bbr.instance import Model, TData
from jaxplace.exact.bbr.model import build_model, tdata
from jaxplace.exact.bbr.search import CheckStats, Memo, check
from jaxplace.exact.bbr.solve import BbrConfig, BbrResult, feasible, solve_bbr

__all__ = ["BbrBound", "BbrConfig", "BbrResult", "CheckStats", "CrossBound", "CrossData",
           "Memo", "Model", "TData", "bbr_exact", "build_model", "check", "crossing_bound",
           "feasible", "solve_bbr", "tdata"]
