"""The objective conformance check: `check_objective(objective)` runs every entry point
of jaxplace on tiny instances of an objective and holds each answer against brute force,
so that an objective written outside this repository can be checked the way the
shipped ones are (in the spirit of jumanji's environment check).

The instances are built through the objective itself: a few tiny graphs crossed with
every problem option (colocation classes, also ones that force a path into their
block or hold a CPU-only op; one and two CPU blocks and CPU-only ops; memory,
capacity, an infeasible capacity, bandwidth; k = 1 and k > n; ops with no work,
parameters or output, or none with work or output; work and outputs over six orders
of magnitude, alone and with other options; per-device times with a free device;
training graphs with backward ops) and with no cluster, a uniform, a
near-uniform (1e-6 more bytes on one device), an unequal and a tight cluster; the
objective's `validate` refuses some (a `JaxplaceError` of one line is a pass), its
`matches` keeps the ones it serves. On each instance the optimum OPT comes from
`Objective.brute_force`, or from an independent `oracle` when one is given, and every
cell must give a confirmed cost >= OPT or a `JaxplaceError`:

- graph attributes that are NaN, negative or fractional where they must not be are
  refused at construction, in one line naming the attribute;
- evaluate / decode / evaluate_partition agree, rows of the wrong shape are refused,
  malformed partitions are refused;
- the closed-form lower bound, every certificate bound <= OPT; `optimal` only when
  the bound meets a cost `evaluate_partition` confirms;
- every search method and `search_many`: a result whose cost the reference confirms,
  >= OPT, and a proof of the planner only at OPT; a refusal to cost the search's own
  plan is a failure;
- save (strict JSON, an assignment of valid blocks, the confirmed cost), the reload
  at the saved cost, and the neutral export of what was saved;
- on a uniform cluster, the same plans cost the same a hair away from uniform.

With an `oracle` (a brute force of the objective's model written apart from it, e.g.
tests/oracles.py for the shipped ones): `brute_force` against the oracle's optimum,
random plans through `evaluate_partition` (the oracle's cost, or a refusal where the
model forbids the plan: a finite cost there is a silent drop), every search's cost
confirmed by the oracle, and the worst and a random valid plan through `certify`
(the default ladder and the default bounds; every bound in full mode): a bound <=
OPT, the upper bound the plan's cost or a better plan's that the oracle confirms,
`optimal` only at OPT.

`quick` (the default, for CI) keeps every instance and cell but runs the compiled
decoder once per `QUICK_DECODED` option, every bound and the search methods
"default" and "dfs" only on the first instance (and one without a solution),
search_many on one (each compiles programs of its own: seconds per instance on a cold
cache); `quick=False` runs everything everywhere on slightly larger graphs.

    from jaxplace.testing import check_objective
    check_objective(MY_OBJECTIVE)            # AssertionError listing the failed cells
    check_objective(MY_OBJECTIVE, oracle=MY_BRUTE_FORCE)
"""

from __future__ import annotations

import itertools
import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from jaxplace.cluster import cluster_from_dict
from jaxplace.errors import JaxplaceError
from jaxplace.generators.training import training_graph
from jaxplace.graph import CompGraph
from jaxplace.objectives.registry import objective_of
from jaxplace.problem import Problem

RTOL = 1e-6
#: float32 decoders (JAX without x64) against the float64 reference
FLOAT32_RTOL = 1e-5
#: search methods of the quick check (all of `search.registry.METHODS` otherwise)
QUICK_METHODS = ("default", "dfs")
#: instances searched by the quick check (the first ones served; all otherwise): the
#: search methods compile programs, the other cells take milliseconds
QUICK_SEARCHED = 1
#: problem options whose instances the quick check decodes with the compiled decoder
#: (the graph's structure differs; the other options change numbers, checked by the
#: float64 reference in every other cell)
QUICK_DECODED = ("plain", "colocation", "cpus")
UNEQUAL = {"devices": [{"name": "fast", "peak_flops": 4e12, "mem_bw": 1e12, "memory": 60.0},
                       {"name": "slow", "peak_flops": 1e12, "mem_bw": 1e12, "memory": 60.0}],
           "bandwidth": [[0, 40.0], [20.0, 0]], "latency": 0.01}
UNIFORM = {"devices": [{"name": "a", "profile": "h100", "memory": 60.0},
                       {"name": "b", "profile": "h100", "memory": 60.0}],
           "bandwidth": 30.0, "latency": 0.01}
#: unequal devices whose memory (bytes: the tiny graphs' parameters) packs tightly
TIGHT = {**UNEQUAL, "devices": [{**d, "memory": 7.0} for d in UNEQUAL["devices"]]}
#: the uniform cluster with 1e-6 more bytes on one device: no longer uniform, and a
#: plan must cost what it costs on the uniform one (`_check_near_uniform`)
NEAR_UNIFORM = {**UNIFORM, "devices": [{**UNIFORM["devices"][0], "memory": 60.0 + 1e-6},
                                       UNIFORM["devices"][1]]}
#: graph attributes that must be refused at construction (one line naming the field)
BAD_ATTRS = {"work": ("work", [1.0, math.nan, 2.0]),
             "negative work": ("work", [1.0, -1.0, 2.0]),
             "NaN cpu_latency": ("cpu_latency", [1.0, math.nan, 2.0]),
             "negative cpu_latency": ("cpu_latency", [1.0, -2.0, 2.0]),
             "fractional color_class": ("color_class", [0.0, 0.5, -1.0]),
             "NaN color_class": ("color_class", [0.0, math.nan, -1.0]),
             "NaN supported_on_accel": ("supported_on_accel", [1.0, math.nan, 1.0]),
             "NaN is_backward": ("is_backward", [0.0, math.nan, 0.0])}


@dataclass
class Conformance:
    """What `check_objective` found: `cells` (instance, entry point, outcome) and the
    `failures` among them."""

    objective: str
    cells: list[tuple[str, str, str]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    #: the independent oracle the cells are held against (None: `brute_force` only)
    oracle: object = field(default=None, repr=False)
    #: seconds spent per entry point (summed over the instances)
    seconds: dict[str, float] = field(default_factory=dict)
    _last: float = field(default_factory=time.perf_counter, repr=False)

    def ok(self, inst: str, entry: str, outcome: str = "ok") -> None:
        self.cells.append((inst, entry, outcome))
        self._tick(entry)

    def fail(self, inst: str, entry: str, why: str) -> None:
        self.cells.append((inst, entry, "FAIL " + why))
        self.failures.append(f"{inst} / {entry}: {why}")
        self._tick(entry)

    def _tick(self, entry: str) -> None:
        now = time.perf_counter()
        key = entry.split("(")[0]
        self.seconds[key] = self.seconds.get(key, 0.0) + now - self._last
        self._last = now


def tiny_graph(seed: int, n: int, *, colocation: bool | str = False, cpu: bool = False,
               cpu_only: bool = False, zero: bool | str = False, mixed: bool = False,
               training: bool = False, device_times: bool = False) -> CompGraph:
    """A random DAG of n ops (work 1..8, parameters 1..4, tensors 1..5).

    Options: `colocation` (True: two ops in a class; "path": the two ends of a path
    of three ops, which forces the middle one into their block; "cpu-only": a class
    holding the CPU-only op), `cpu` / `cpu_only` (CPU latencies, one op CPU-only),
    `zero` (some ops with no work, parameters or output; "all": no op has work or
    output), `mixed` (work and outputs spread over six orders of magnitude),
    `device_times` (`time_<device>` attributes for the devices of this module's
    clusters, the first device of each free for most ops), `training` (the training
    graph of a forward graph of
    max(2, n // 2) ops: backward ops colocated with their forward ones).
    """
    if training:
        return training_graph(tiny_graph(seed, max(2, n // 2), zero=zero, mixed=mixed),
                              seed)
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.45]
    if colocation == "path" and n >= 3:
        edges = sorted(set(edges) | {(0, 1), (1, 2)})
    attrs = {}
    if cpu or cpu_only:
        attrs["cpu_latency"] = rng.integers(1, 12, n).astype(float)
        sup = np.ones(n, bool)
        if cpu_only:
            sup[int(rng.integers(n))] = False
        attrs["supported_on_accel"] = sup
    if colocation:
        cls = np.full(n, -1)
        if colocation == "path" and n >= 3:
            cls[[0, 2]] = 0
        elif colocation == "cpu-only" and "supported_on_accel" in attrs:
            off = int(np.flatnonzero(~attrs["supported_on_accel"])[0])
            cls[[off, (off + 1) % n]] = 0
        else:
            cls[rng.choice(n, 2, replace=False)] = 0
        attrs["color_class"] = cls
    work = rng.integers(1, 9, n).astype(float)
    param = rng.integers(1, 5, n).astype(float)
    out = rng.integers(1, 6, n).astype(float)
    if zero == "all":
        work[:], out[:] = 0.0, 0.0
    elif zero:
        for a in (work, param, out):
            a[rng.random(n) < 0.4] = 0.0
    if mixed:  # parameters stay small: the clusters' memory is a few bytes
        for a in (work, out):
            a *= 10.0 ** rng.uniform(-3, 3, n)
    if device_times:
        for first, second in (("a", "b"), ("fast", "slow")):
            attrs[f"time_{first}"] = np.where(rng.random(n) < 0.6, 0.0, 2.0 * work)
            attrs[f"time_{second}"] = work.copy()
    return CompGraph(work, edges, param, out, node_attrs=attrs or None)


def candidates(objective, *, quick: bool = True, seed: int = 0):
    """(name, problem or the JaxplaceError refusing it) for every tiny instance that
    `objective` serves or refuses (instances it leaves to another objective skipped)."""
    n = 5 if quick else 6
    clusters = {"": None, "uniform": cluster_from_dict(UNIFORM),
                "near-uniform": cluster_from_dict(NEAR_UNIFORM),
                "unequal": cluster_from_dict(UNEQUAL), "tight": cluster_from_dict(TIGHT)}
    options = {
        "plain": ({}, {}),
        "k1": ({}, {"k": 1}),
        "colocation": ({"colocation": True}, {}),
        "cpus": ({"cpu": True, "cpu_only": True}, {"cpus": 1}),
        "cpu-only-ops": ({"cpu_only": True}, {}),
        "memory": ({}, {"memory": 4.0, "bandwidth": 2.0}),
        "capacity": ({}, {"capacity": 9.0}),
        "infeasible": ({}, {"capacity": 0.5}),
        "zero-time": ({"zero": True}, {}),
        "all-zero": ({"zero": "all"}, {}),
        "device-times": ({"device_times": True}, {}),
        "k>n": ({}, {"k": n + 1}),
        "cpus2": ({"cpu": True, "cpu_only": True}, {"cpus": 2, "k": 1}),
        "coloc-path": ({"colocation": "path"}, {}),
        "coloc-cpu-only": ({"colocation": "cpu-only", "cpu_only": True}, {"cpus": 1}),
        "mixed": ({"mixed": True}, {}),
        "mixed-options": ({"mixed": True, "cpu": True}, {"cpus": 1, "memory": 0.5,
                                                         "bandwidth": 3.0}),
        "training": ({"training": True}, {}),
    }
    # the tight cluster and the near-uniform one only where their memory or their
    # costs matter: plain graphs
    skip = {(o, c) for o in options for c in ("tight", "near-uniform")
            if o not in ("plain", "k1", "zero-time", "mixed", "device-times")}
    for (oname, (gkw, pkw)), (cname, cluster) in itertools.product(
            options.items(), clusters.items()):
        if (oname, cname) in skip:
            continue
        name = f"{oname}{'@' + cname if cname else ''}"
        kw = {"k": pkw.get("k", 2), **pkw}
        if cluster is not None and "k" not in pkw:
            kw.pop("k")
        graph = tiny_graph(seed + len(name), n, **gkw)
        try:
            p = Problem(graph, cluster=cluster, objective=objective.problem_objective, **kw)
        except JaxplaceError as exc:
            try:  # refused by this objective, or not its instance at all?
                served = objective.matches(Problem(graph, k=kw.get("k", 2), cluster=cluster,
                                                   objective=objective.problem_objective))
            except JaxplaceError:
                served = True
            if served:
                yield name, exc
            continue
        if objective_of(p) is objective:
            yield name, p


def check_objective(objective, *, quick: bool = True, seed: int = 0,
                    time_limit: float = 20.0, strict: bool = True,
                    oracle=None) -> Conformance:
    """Run the conformance check of `objective` (see the module doc). With `strict`,
    raise AssertionError naming every failed cell; the `Conformance` otherwise.

    `oracle`: an independent brute force of the objective's model (written apart from
    its code), with `optimum(problem)` and `cost(problem, plan)` (the cost the plan
    must have, None when it breaks a rule) and optionally `confirm(problem, plan,
    answer) -> str | None` (a message when `evaluate_partition`'s answer is wrong).
    OPT then comes from it, `brute_force` and every cost are held against it, and
    random and worst plans go through `evaluate_partition` and `certify`.
    """
    rep = Conformance(objective.name, oracle=oracle)
    _check_bad_attributes(rep)
    found = searched = 0
    decoded: set[str] = set()
    for name, p in candidates(objective, quick=quick, seed=seed):
        if isinstance(p, JaxplaceError):
            _check_refusal(rep, name, "Problem", p)
            continue
        found += 1
        try:
            opt = float(objective.brute_force(p) if oracle is None else oracle.optimum(p))
        except JaxplaceError as exc:
            _check_refusal(rep, name, "brute_force", exc)
            continue
        if oracle is not None:
            _check_oracle(rep, objective, name, p, opt, seed, time_limit, quick)
        if name.endswith("@uniform"):
            _check_near_uniform(rep, objective, name, p, seed)
        # quick: the compiled decoder once per structural option (QUICK_DECODED)
        option = name.split("@")[0]
        _check_costs(rep, objective, name, p, opt, seed, decode=not quick or (
            option in QUICK_DECODED and option not in decoded))
        decoded.add(option)
        search = not quick or searched < QUICK_SEARCHED or (
            math.isinf(opt) and searched == QUICK_SEARCHED)
        # quick: every bound where the search runs too, the default ones elsewhere
        _check_bounds(rep, objective, name, p, opt, time_limit,
                      objective.bound_methods if search else objective.default_bounds)
        if search:  # quick: the first instances, and one without a solution
            _check_search(rep, objective, name, p, opt, quick, seed, time_limit,
                          many=not quick or searched == 0)
            searched += 1
    if not found:
        rep.fail("-", "instances", "no tiny instance resolves to the objective")
    if strict and rep.failures:
        raise AssertionError(f"objective {objective.name!r} fails {len(rep.failures)} "
                             "conformance cells:\n" + "\n".join(rep.failures))
    return rep


def _check_refusal(rep, inst, entry, exc) -> None:
    msg = str(exc)
    if not msg or "\n" in msg:
        rep.fail(inst, entry, f"a refusal must be one line, got {msg!r}")
    else:
        rep.ok(inst, entry, "refused: " + msg)


def _call(rep, inst, entry, fn):
    """fn() or None after recording a JaxplaceError (a refusal) or another exception
    (a failure)."""
    try:
        return fn()
    except JaxplaceError as exc:
        _check_refusal(rep, inst, entry, exc)
    except Exception as exc:  # noqa: BLE001 (anything else is the defect reported)
        rep.fail(inst, entry, f"{type(exc).__name__}: {exc}")
    return None


def _geq(cost: float, opt: float) -> bool:
    return cost >= opt * (1 - RTOL) - 1e-12 or (math.isinf(opt) and math.isinf(cost))


def _confirm(objective, p, part) -> float:
    return float(objective.evaluate_partition(p, part).cost)


def _check_costs(rep, obj, inst, p, opt, seed, decode: bool = True) -> None:
    lb = _call(rep, inst, "lower_bound", lambda: float(obj.lower_bound(p)))
    if lb is not None:
        if lb > opt * (1 + RTOL) + 1e-9:
            rep.fail(inst, "lower_bound", f"{lb!r} > OPT {opt!r}")
        else:
            rep.ok(inst, "lower_bound")
    start = _call(rep, inst, "start_partition", lambda: obj.start_partition(p))
    if start is not None:
        c = _call(rep, inst, "start_partition", lambda: _confirm(obj, p, start))
        if c is not None and not _geq(c, opt):
            rep.fail(inst, "start_partition", f"cost {c!r} < OPT {opt!r}")
    X = np.random.default_rng(seed).random((3, p.n))
    costs = None if not decode else _call(rep, inst, "evaluate", lambda: np.asarray(
        obj.evaluate(p, X, precision="float64"), np.float64))
    if costs is not None:
        parts = _call(rep, inst, "decode", lambda: obj.decode(p, X))
        if parts is not None:
            for c, part in zip(costs, parts, strict=True):
                conf = _call(rep, inst, "decode", lambda part=part: _confirm(obj, p, part))
                if conf is None:
                    continue
                if not (math.isclose(c, conf, rel_tol=FLOAT32_RTOL)
                        or (math.isinf(c) and math.isinf(conf))):
                    rep.fail(inst, "evaluate", f"{c!r} but its decoded partition costs "
                             f"{conf!r}")
                elif not _geq(conf, opt):
                    rep.fail(inst, "decode", f"cost {conf!r} < OPT {opt!r}")
            rep.ok(inst, "evaluate/decode")
        for shape in ((3, p.n + 7), (3, max(p.n - 1, 0)), (2, 3, p.n), (0,)):
            bad = np.random.default_rng(seed).random(shape)
            try:
                out = np.asarray(obj.evaluate(p, bad, precision="float64"))
            except JaxplaceError:
                rep.ok(inst, f"evaluate{shape}", "refused")
                continue
            except Exception as exc:  # noqa: BLE001
                rep.fail(inst, f"evaluate{shape}", f"{type(exc).__name__}: {exc}")
                continue
            if not (shape == (0,) and out.shape == (0,)):
                rep.fail(inst, f"evaluate{shape}", f"scored rows of shape {shape} "
                         f"(n = {p.n}): {out.shape}")
    B = max(p.num_blocks, p.k)
    malformed = {"short": np.zeros(p.n - 1, np.int64),
                 "fractional": np.full(p.n, 0.5),
                 "negative": np.full(p.n, -1, np.int64),
                 "block >= k": np.full(p.n, B + 3, np.int64),
                 # blocks 0..B along the node order (a topological order here):
                 # contiguous, but one block more than the problem has (only
                 # possible with more ops than blocks)
                 "k+1 blocks": (np.arange(p.n) * (B + 1)) // p.n}
    if B >= p.n:
        del malformed["k+1 blocks"]
    for what, a in malformed.items():
        try:
            c = obj.evaluate_partition(p, a)
        except JaxplaceError:
            rep.ok(inst, f"evaluate_partition({what})", "refused")
        except Exception as exc:  # noqa: BLE001
            rep.fail(inst, f"evaluate_partition({what})", f"{type(exc).__name__}: {exc}")
        else:
            rep.fail(inst, f"evaluate_partition({what})", f"accepted: cost {c.cost!r}")


def _check_bounds(rep, obj, inst, p, opt, time_limit, bounds) -> None:
    from jaxplace.bounds.certificate import certify

    for bad in ((), ""):
        try:
            certify(p, None, methods=bad, time_limit=time_limit)
        except JaxplaceError:
            rep.ok(inst, f"certify(methods={bad!r})", "refused")
        except Exception as exc:  # noqa: BLE001
            rep.fail(inst, f"certify(methods={bad!r})", f"{type(exc).__name__}: {exc}")
        else:
            rep.fail(inst, f"certify(methods={bad!r})", "a certificate of no bound")
    # the default ladder's stop at a proof (`every_rung`): a ladder of the bound
    # registry stays below OPT; any other objective refuses the option
    try:
        cert = certify(p, None, every_rung=False, time_limit=time_limit)
    except JaxplaceError:
        if obj.supports("bound_registry"):
            rep.fail(inst, "certify(every_rung=False)", "refused by a bound registry")
        else:
            rep.ok(inst, "certify(every_rung=False)", "refused")
    except Exception as exc:  # noqa: BLE001
        rep.fail(inst, "certify(every_rung=False)", f"{type(exc).__name__}: {exc}")
    else:
        if not obj.supports("bound_registry"):
            rep.fail(inst, "certify(every_rung=False)", "accepted without a bound registry")
        elif cert.lower_bound > opt * (1 + RTOL) + 1e-9:
            rep.fail(inst, "certify(every_rung=False)",
                     f"bound {cert.lower_bound!r} > OPT {opt!r}")
        else:
            rep.ok(inst, "certify(every_rung=False)")
    for bound in bounds:
        cert = _call(rep, inst, f"certify[{bound}]",
                     lambda b=bound: certify(p, None, methods=(b,), time_limit=time_limit))
        if cert is None:
            continue
        bad = [r.name for r in cert.results if r.bound > opt * (1 + RTOL) + 1e-9]
        if cert.lower_bound > opt * (1 + RTOL) + 1e-9 or bad:
            rep.fail(inst, f"certify[{bound}]", f"bound {cert.lower_bound!r} > OPT {opt!r}")
            continue
        if cert.optimal and not _proved(cert, cert.upper_bound, opt):
            rep.fail(inst, f"certify[{bound}]", f"'optimal' at {cert.upper_bound!r}, "
                     f"OPT {opt!r}")
            continue
        rep.ok(inst, f"certify[{bound}]")


def _methods(obj, quick: bool) -> list[str]:
    from jaxplace.search.registry import METHODS

    allowed = METHODS if obj.search_methods is None else [
        m for m in METHODS if m in obj.search_methods]
    return [m for m in allowed if m in QUICK_METHODS] if quick else list(allowed)


def _check_search(rep, obj, inst, p, opt, quick, seed, time_limit,
                  many: bool = True) -> None:
    from jaxplace.search.api import search

    saved = False
    for method in _methods(obj, quick):
        entry = f"search[{method}]"
        r = _call(rep, inst, entry, lambda m=method: search(
            p, m, budget=200, population_size=20, seed=seed, progress=False,
            time_limit=time_limit))
        if r is None:
            continue
        if method == "noncontiguous":  # virtual pieces: its own model, not checked here
            rep.ok(inst, entry, "not compared (non-contiguous)")
            continue
        if not _check_result(rep, obj, inst, entry, p, opt, r):
            continue
        if not saved:
            saved = True
            _check_save(rep, obj, inst, p, r, method, opt)
    if many:
        _check_many(rep, obj, inst, p, opt, seed)


def _check_result(rep, obj, inst, entry, p, opt, r) -> bool:
    try:  # the search's own plan: a refusal here is a defect, not an answer
        answer = obj.evaluate_partition(p, r.partition)
        conf = float(answer.cost)
    except Exception as exc:  # noqa: BLE001
        rep.fail(inst, entry, f"its own plan is refused: {type(exc).__name__}: {exc}")
        return False
    wrong = _oracle_says(rep, p, r.partition, answer)
    if wrong:
        rep.fail(inst, entry, f"wrong cost: {wrong}")
        return False
    if not (math.isclose(r.cost, conf, rel_tol=RTOL) or (math.isinf(r.cost)
                                                          and math.isinf(conf))):
        rep.fail(inst, entry, f"cost {r.cost!r} but its partition costs {conf!r}")
        return False
    if not _geq(conf, opt):
        rep.fail(inst, entry, f"cost {conf!r} < OPT {opt!r}")
        return False
    if "proved_by" in r.info and not (math.isclose(conf, opt, rel_tol=RTOL)
                                      or math.isinf(opt)):
        rep.fail(inst, entry, f"'proved' {conf!r}, OPT {opt!r}")
        return False
    rep.ok(inst, entry)
    return True


def _check_many(rep, obj, inst, p, opt, seed) -> None:
    from jaxplace.search.many import search_many

    out = _call(rep, inst, "search_many", lambda: search_many([p], budget=200, seed=seed))
    if out is None:
        return
    if len(out) != 1:
        rep.fail(inst, "search_many", f"{len(out)} results for one problem")
        return
    _check_result(rep, obj, inst, "search_many", p, opt, out[0])


def _check_save(rep, obj, inst, p, r, method, opt) -> None:
    from jaxplace.export.neutral import neutral_plan
    from jaxplace.formats.results import save_result

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "r.json")
        data = _call(rep, inst, "save", lambda: save_result(path, p, r, method=method,
                                                            seed=0))
        if data is None:
            return
        with open(path) as f:
            text = f.read()
        try:
            saved = json.loads(text, parse_constant=_no_constant)
        except ValueError as exc:
            rep.fail(inst, "save", f"not strict JSON: {exc}")
            return
        a = saved.get("assignment")
        if not isinstance(a, list) or len(a) != p.n or not all(
                isinstance(b, int) and 0 <= b < max(p.num_blocks, p.k) for b in a):
            rep.fail(inst, "save", f"assignment {a!r} is not a valid block per op")
            return
        conf = _confirm(obj, p, r.partition)
        cost = saved.get("makespan", saved.get("bottleneck"))
        cost = float(cost) if isinstance(cost, int | float | str) else None
        if cost is None or not (math.isclose(cost, conf, rel_tol=RTOL)
                                or (math.isinf(cost) and math.isinf(conf))):
            rep.fail(inst, "save", f"cost {cost!r}, confirmed {conf!r}")
            return
        rep.ok(inst, "save")
        _check_reload(rep, obj, inst, p, path, opt, cost)
        _check_certificate_saved(rep, obj, inst, p, r, os.path.join(tmp, "c.json"))
        plan = _call(rep, inst, "export json", lambda: neutral_plan(saved, path))
        if plan is None:
            return
        ops = sorted(op for s in plan["stages"] for op in s["ops"])
        if len(ops) != p.n:
            rep.fail(inst, "export json", f"{len(ops)} ops in the plan for {p.n}")
        else:
            rep.ok(inst, "export json")


def _check_reload(rep, obj, inst, p, path, opt, saved: float) -> None:
    """What `certify --partition` reads back: the saved plan at the saved cost."""
    from jaxplace.formats.results import load_assignment

    part = _call(rep, inst, "load", lambda: load_assignment(path, p))
    if part is None:
        return
    conf = _call(rep, inst, "load", lambda: _confirm(obj, p, part))
    if conf is None:
        return
    if not _same(conf, saved):
        rep.fail(inst, "load", f"reloads at {conf!r}, saved at {saved!r}")
    elif not _geq(conf, opt):
        rep.fail(inst, "load", f"reloaded partition costs {conf!r} < OPT {opt!r}")
    else:
        rep.ok(inst, "load")


def _check_certificate_saved(rep, obj, inst, p, r, path) -> None:
    """save_result of the bare partition (the README's pattern) with a certificate."""
    from jaxplace.bounds.certificate import certify
    from jaxplace.formats.results import save_result

    cert = _call(rep, inst, "save(certificate)", lambda: certify(
        p, r.partition, methods=obj.default_bounds[:1], time_limit=10.0))
    if cert is None:
        return
    data = _call(rep, inst, "save(certificate)", lambda: save_result(
        path, p, r.partition, certificate=cert))
    if data is None:
        return
    with open(path) as f:
        saved = json.load(f).get("certificate")
    if not isinstance(saved, dict) or saved.get("lower_bound") != cert.lower_bound:
        rep.fail(inst, "save(certificate)", f"certificate written as {saved!r}")
    else:
        rep.ok(inst, "save(certificate)")


def _proved(cert, ub: float, opt: float) -> bool:
    """An "optimal" certificate keeps its promise: its cost is OPT within its stated
    relative tolerance (the optimality test's and the MIP gap's)."""
    tol = max(RTOL, float(getattr(cert, "tolerance", 0.0) or 0.0))
    return (math.isinf(opt) and math.isinf(ub)) or (
        opt * (1 - RTOL) - 1e-12 <= ub <= opt * (1 + tol) + 1e-12)


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-12) or (math.isinf(a) and
                                                              math.isinf(b))


def _oracle_says(rep, p, plan, answer) -> str | None:
    """The oracle's objection to `evaluate_partition`'s answer for `plan` (None: it
    agrees, or there is no oracle)."""
    oracle = rep.oracle
    if oracle is None:
        return None
    confirm = getattr(oracle, "confirm", None)
    if confirm is not None:
        return confirm(p, plan, answer)
    want = oracle.cost(p, plan)
    if want is None:
        return f"a plan the model forbids, costed {float(answer.cost)!r}"
    if not _same(float(answer.cost), float(want)):
        return f"costs {float(answer.cost)!r}, the oracle {float(want)!r}"
    return None


def _check_bad_attributes(rep) -> None:
    """NaN, negative and fractional graph attributes: one-line refusals naming them."""
    for what, (key, values) in BAD_ATTRS.items():
        entry = f"CompGraph({what})"
        try:
            if key == "work":
                CompGraph(values, [(0, 1)])
            else:
                CompGraph([1.0, 1.0, 1.0], [(0, 1)], node_attrs={key: np.array(values)})
        except JaxplaceError as exc:
            if exc.field != key:
                rep.fail("-", entry, f"refused naming {exc.field!r}, not {key!r}")
            else:
                _check_refusal(rep, "-", entry, exc)
        except Exception as exc:  # noqa: BLE001
            rep.fail("-", entry, f"{type(exc).__name__}: {exc}")
        else:
            rep.fail("-", entry, "accepted")


def random_plans(p, seed: int, count: int = 12) -> list[np.ndarray]:
    """Random block-per-op plans of `p` (blocks 0..max(num_blocks, k) - 1): many break
    a rule of the model, some do not."""
    rng = np.random.default_rng(seed)
    B = max(p.num_blocks, p.k)
    plans = [rng.integers(0, B, p.n).astype(np.int64) for _ in range(count)]
    plans += [np.zeros(p.n, np.int64), np.sort(rng.integers(0, B, p.n)).astype(np.int64)]
    return plans


def _check_oracle(rep, obj, inst, p, opt, seed, time_limit, quick) -> None:
    """brute_force against the oracle; random plans through evaluate_partition (the
    oracle's cost, or a refusal where it forbids them); the worst and a random valid
    plan through certify (every bound in full mode, the default ones otherwise)."""
    from jaxplace.bounds.certificate import certify

    bf = _call(rep, inst, "brute_force", lambda: float(obj.brute_force(p)))
    if bf is not None:
        if _same(bf, opt):
            rep.ok(inst, "brute_force")
        else:
            rep.fail(inst, "brute_force", f"{bf!r}, the oracle's optimum {opt!r}")
    valid = []
    for i, plan in enumerate(random_plans(p, seed + 7 * len(inst))):
        entry = "evaluate_partition(random)"
        want = rep.oracle.cost(p, plan)
        try:
            answer = obj.evaluate_partition(p, plan)
        except JaxplaceError as exc:
            if want is None:
                _check_refusal(rep, inst, entry, exc)
            else:
                rep.fail(inst, entry, f"plan {plan.tolist()} (oracle cost {want!r}) "
                         f"refused: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001
            rep.fail(inst, entry, f"{type(exc).__name__}: {exc}")
            continue
        wrong = _oracle_says(rep, p, plan, answer)
        if wrong and not (want is None and math.isinf(float(answer.cost))):
            rep.fail(inst, entry, f"plan {plan.tolist()}: {wrong}")
            continue
        rep.ok(inst, entry)
        if want is not None and math.isfinite(float(answer.cost)):
            valid.append((float(answer.cost), i, plan))
    if not valid:
        return
    valid.sort(key=lambda t: (t[0], t[1]))
    chosen = {"worst": valid[-1], "random": valid[len(valid) // 2]}
    bounds = list(obj.bound_methods if not quick else obj.default_bounds)
    for label, (cost, _, plan) in chosen.items():
        for methods in [None] + [(b,) for b in bounds]:
            entry = f"certify({label}, {methods[0] if methods else 'default'})"
            cert = _call(rep, inst, entry, lambda m=methods, pl=plan: certify(
                p, pl, methods=m, time_limit=time_limit))
            if cert is None:
                continue
            # the upper bound is the plan's cost, or a better plan's (the partition
            # the certificate carries then), confirmed like any plan
            ub, better = float(cert.upper_bound), getattr(cert, "partition", None)
            why = None
            if ub > cost * (1 + RTOL) + 1e-12:
                why = f"upper bound {ub!r} above the plan's cost {cost!r}"
            elif not _same(ub, cost):
                why = _better_plan(rep, obj, p, better, ub)
            if why:
                rep.fail(inst, entry, why)
            elif cert.lower_bound > opt * (1 + RTOL) + 1e-9:
                rep.fail(inst, entry, f"bound {cert.lower_bound!r} > OPT {opt!r}")
            elif cert.optimal and not _proved(cert, ub, opt):
                rep.fail(inst, entry, f"'optimal' at {ub!r}, OPT {opt!r}")
            else:
                rep.ok(inst, entry)


def _better_plan(rep, obj, p, plan, ub: float) -> str | None:
    """Why a certificate's better plan does not cost its upper bound (None: it does)."""
    if plan is None:
        return f"upper bound {ub!r} below the plan's cost, and no plan of that cost"
    try:
        answer = obj.evaluate_partition(p, plan)
    except JaxplaceError as exc:
        return f"its better plan is refused: {exc}"
    if not _same(float(answer.cost), ub):
        return f"upper bound {ub!r}, its better plan costs {float(answer.cost)!r}"
    wrong = _oracle_says(rep, p, plan, answer)
    return f"its better plan: {wrong}" if wrong else None


def _check_near_uniform(rep, obj, inst, p, seed) -> None:
    """The same plans on the uniform cluster and on one with 1e-6 more bytes on a
    device: the same costs (or the same refusals)."""
    entry = "near-uniform"
    try:
        q = Problem(p.graph, k=p.k, cluster=cluster_from_dict(NEAR_UNIFORM),
                    objective=p.objective)
    except JaxplaceError as exc:
        rep.fail(inst, entry, f"refused once a device has 1e-6 more bytes: {exc}")
        return
    for plan in random_plans(p, seed):
        out = []
        for prob in (p, q):
            try:
                out.append(float(objective_of(prob).evaluate_partition(prob, plan).cost))
            except JaxplaceError:
                out.append(None)
        a, b = out
        if (a is None) != (b is None) or (a is not None and not _same(a, b)):
            rep.fail(inst, entry, f"plan {plan.tolist()} costs {a!r} on the uniform "
                     f"cluster, {b!r} a hair away")
            return
    rep.ok(inst, entry)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


__all__ = ["Conformance", "candidates", "check_objective", "random_plans", "tiny_graph"]
