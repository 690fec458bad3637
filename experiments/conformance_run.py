"""A seeded randomized run of certify probes on tiny instances of the three shipped
objectives, held against the independent oracles of tests/oracles.py.

Every instance draws an objective, a graph (3-5 ops; zero-work ops, graphs with no
work at all, mixed magnitudes, per-device times with a free device, colocation
classes, CPU-only ops, training graphs) and options (k, CPU blocks, memory,
capacity, bandwidth; for a cluster: uniform, a hair from uniform, unequal or random
devices and links). Its optimum comes from the oracle. Then random plans (most break
a rule of the model, some do not), the worst valid one and the objective's own start
go through `evaluate_partition` and through `certify` with one bound method each (the
default ladder and every method of the objective, cheap ones more often), and every
few instances a plan is saved and reloaded. Each probe lands in one class:

- ok: a certificate whose bound <= OPT, whose upper bound is the plan's cost (or a
  better plan's, confirmed), `optimal` only at OPT; or a refusal of a plan the model
  forbids;
- optimal within tolerance: `optimal` at a cost above OPT by less than the
  certificate's stated relative `tolerance` (OPTIMAL_RTOL + the MIP gap, 2e-6);
- false proof: a bound above OPT, or `optimal` further above OPT;
- wrong cost: an upper bound / cost the oracle does not confirm;
- silent drop: a plan the model forbids accepted at a finite cost;
- refusal: a JaxplaceError on a plan the model allows (counted apart: the entry point
  refused to answer, e.g. a method that does not apply);
- crash: any other exception.

    python experiments/conformance_run.py --probes 50000 --seed 0
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from oracles import ORACLES  # noqa: E402

import jaxplace as jp  # noqa: E402
from jaxplace.bounds import certify  # noqa: E402
from jaxplace.cluster import cluster_from_dict  # noqa: E402
from jaxplace.errors import JaxplaceError  # noqa: E402
from jaxplace.formats import load_assignment, save_result  # noqa: E402
from jaxplace.testing import NEAR_UNIFORM, TIGHT, UNEQUAL, UNIFORM, tiny_graph  # noqa: E402

RTOL = 1e-6
#: bound methods probed less often (seconds on HiGHS rather than milliseconds)
SLOW = {"cover", "bbr", "exact", "milp", "bottleneck-guess", "station-check", "cross"}


def same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-12) or (math.isinf(a)
                                                              and math.isinf(b))


def random_cluster(rng) -> dict:
    d = int(rng.integers(2, 4))
    devs = [{"name": f"d{i}", "peak_flops": float(10 ** rng.uniform(11.5, 13)),
             "mem_bw": 1e12, "memory": float(rng.choice([6.0, 10.0, 60.0]))}
            for i in range(d)]
    bw = [[0.0 if i == j else float(rng.choice([5.0, 20.0, 40.0])) for j in range(d)]
          for i in range(d)]
    return {"devices": devs, "bandwidth": bw, "latency": float(rng.choice([0.0, 0.01]))}


def draw_problem(rng, objective: str):
    n = int(rng.integers(3, 6 if objective != "latency" else 5))
    gk = {"zero": rng.random() < 0.25, "mixed": rng.random() < 0.2,
          "device_times": objective != "throughput" and rng.random() < 0.2}
    if rng.random() < 0.05:
        gk["zero"] = "all"
    pk: dict = {}
    if objective == "throughput":
        if rng.random() < 0.3:
            gk["colocation"] = str(rng.choice(["path", "cpu-only", "pair"]))
            if gk["colocation"] == "pair":
                gk["colocation"] = True
        if rng.random() < 0.35:
            gk["cpu"] = True
            gk["cpu_only"] = rng.random() < 0.5
            pk["cpus"] = int(rng.integers(1, 3))
        if gk.get("colocation") == "cpu-only":
            gk["cpu_only"] = True
            pk["cpus"] = max(pk.get("cpus", 0), 1)
        if rng.random() < 0.15:
            gk["training"] = True
            gk.pop("colocation", None)
        pk["k"] = int(rng.integers(1, n + 2))
        if rng.random() < 0.25:
            pk["memory"] = float(rng.choice([0.5, 4.0]))
        if rng.random() < 0.25:
            pk["capacity"] = float(rng.choice([0.5, 6.0, 9.0]))
        if rng.random() < 0.25:
            pk["bandwidth"] = float(rng.choice([0.5, 2.0]))
    else:
        c = rng.choice(["uniform", "near-uniform", "unequal", "tight", "random"])
        spec = {"uniform": UNIFORM, "near-uniform": NEAR_UNIFORM, "unequal": UNEQUAL,
                "tight": TIGHT}.get(str(c)) or random_cluster(rng)
        pk["cluster"] = cluster_from_dict(spec)
        if objective == "throughput-unequal" and rng.random() < 0.5:
            pk["k"] = int(rng.integers(1, pk["cluster"].num_devices + 1))
        if objective == "latency" and rng.random() < 0.1:
            gk["training"] = True
            n = 4
    g = tiny_graph(int(rng.integers(1 << 30)), n, **gk)
    return jp.Problem(g, objective="latency" if objective == "latency" else "throughput",
                      **pk)


def plans_of(rng, p, count: int) -> list:
    B = max(p.num_blocks, p.k)
    out = [rng.integers(0, B, p.n).astype(np.int64) for _ in range(count)]
    out.append(np.sort(rng.integers(0, B, p.n)).astype(np.int64))
    try:
        out.append(p.objective_impl.start_partition(p))
    except JaxplaceError:
        pass
    return out


class Tally:
    def __init__(self):
        self.counts: dict[str, collections.Counter] = collections.defaultdict(
            collections.Counter)
        self.examples: list[str] = []

    def add(self, entry: str, outcome: str, detail: str = "") -> None:
        self.counts[entry][outcome] += 1
        if outcome not in ("ok", "refused (forbidden plan)") and len(self.examples) < 60:
            self.examples.append(f"{entry}: {outcome}: {detail}")

    @property
    def probes(self) -> int:
        return sum(sum(c.values()) for e, c in self.counts.items()
                   if e.split(" ")[1].startswith("certify"))


def probe_evaluate(t: Tally, p, obj, oracle, plan, name):
    entry = f"{name} evaluate_partition"
    want = oracle.cost(p, plan)
    try:
        ans = obj.evaluate_partition(p, plan)
    except JaxplaceError as exc:
        t.add(entry, "refused (forbidden plan)" if want is None else "refusal",
              f"{np.asarray(getattr(plan, 'assignment', plan)).tolist()}: {exc}")
        return None
    except Exception as exc:  # noqa: BLE001
        t.add(entry, "crash", f"{type(exc).__name__}: {exc}")
        return None
    got = float(ans.cost)
    if want is None:
        if math.isfinite(got):
            t.add(entry, "silent drop", f"{np.asarray(ans.assignment).tolist()} at {got}")
        else:
            t.add(entry, "ok")
        return None
    conf = getattr(oracle, "confirm", None)
    wrong = conf(p, plan, ans) if conf else (None if same(got, want)
                                             else f"{got} vs oracle {want}")
    t.add(entry, "wrong cost" if wrong else "ok", wrong or "")
    return None if wrong else got


def probe_certify(t: Tally, p, obj, oracle, plan, cost, opt, method, name):
    entry = f"{name} certify[{method or 'default'}]"
    try:
        cert = certify(p, plan, methods=None if method is None else (method,),
                       time_limit=10.0)
    except JaxplaceError as exc:
        t.add(entry, "refused (forbidden plan)" if cost is None else "refusal", str(exc))
        return
    except Exception as exc:  # noqa: BLE001
        t.add(entry, "crash", f"{type(exc).__name__}: {exc}")
        return
    if cost is None:
        t.add(entry, "silent drop" if math.isfinite(cert.upper_bound) else "ok",
              f"a forbidden plan certified at {cert.upper_bound}")
        return
    ub, lb = float(cert.upper_bound), float(cert.lower_bound)
    # "optimal" promises ub <= OPT (1 + the certificate's stated tolerance)
    tol = max(RTOL, float(getattr(cert, "tolerance", 0.0)))
    if lb > opt * (1 + RTOL) + 1e-9 or (cert.optimal and ub > opt * (1 + tol) + 1e-12):
        t.add(entry, "false proof", f"lb {lb} ub {ub} optimal {cert.optimal} OPT {opt}")
        return
    if cert.optimal and not same(ub, opt):
        t.add(entry, "optimal within tolerance",
              f"ub {ub} = OPT (1 + {ub / opt - 1:.3g}), tolerance {tol:.3g}")
        return
    if ub > cost * (1 + RTOL) + 1e-12:
        t.add(entry, "wrong cost", f"ub {ub} above the plan's {cost}")
        return
    if not same(ub, cost):
        better = getattr(cert, "partition", None)
        try:
            bc = float(obj.evaluate_partition(p, better).cost) if better is not None \
                else math.nan
        except JaxplaceError:
            bc = math.nan
        want = oracle.cost(p, better) if better is not None else None
        if not same(bc, ub) or want is None or want > ub * (1 + RTOL) + 1e-12:
            t.add(entry, "wrong cost", f"ub {ub}, its plan {bc} (oracle {want})")
            return
    t.add(entry, "ok")


def probe_reload(t: Tally, p, obj, name):
    entry = f"{name} save/load"
    try:
        plan = obj.start_partition(p)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            data = save_result(path, p, plan)
            saved = float(data.get("makespan", data.get("bottleneck")))
            back = float(obj.evaluate_partition(p, load_assignment(path, p)).cost)
    except JaxplaceError as exc:
        t.add(entry, "refusal", str(exc))
        return
    except Exception as exc:  # noqa: BLE001
        t.add(entry, "crash", f"{type(exc).__name__}: {exc}")
        return
    t.add(entry, "ok" if same(saved, back) else "wrong cost", f"{saved} -> {back}")


def run(args) -> Tally:
    rng = np.random.default_rng(args.seed)
    t = Tally()
    names = ("throughput", "throughput-unequal", "latency")
    start, inst = time.perf_counter(), 0
    while t.probes < args.probes and time.perf_counter() - start < args.seconds:
        name = names[inst % 3]
        inst += 1
        try:
            p = draw_problem(rng, name)
        except JaxplaceError as exc:
            t.add(f"{name} Problem", "refused (forbidden plan)", str(exc))
            continue
        obj = p.objective_impl
        if obj.name != name:
            t.add(f"{name} Problem", "wrong objective", obj.name)
            continue
        oracle = ORACLES[name]
        opt = oracle.optimum(p)
        methods = [None, *obj.bound_methods]
        valid = []
        for plan in plans_of(rng, p, args.plans):
            cost = probe_evaluate(t, p, obj, oracle, plan, name)
            if cost is not None and math.isfinite(cost):
                valid.append((cost, plan))
            ms = [m for m in methods if m not in SLOW or rng.random() < args.slow]
            for m in ms:
                probe_certify(t, p, obj, oracle, plan, cost, opt, m, name)
        if valid:  # the worst valid plan through every method
            cost, plan = max(valid, key=lambda v: v[0])
            for m in methods:
                probe_certify(t, p, obj, oracle, plan, cost, opt, m, name)
        if inst % args.reload_every == 0:
            probe_reload(t, p, obj, name)
        if args.report and inst % 60 == 0:  # a long run's figures so far
            t.instances, t.seconds = inst, time.perf_counter() - start
            with open(args.report, "w") as f:
                f.write(report(t, args))
    t.instances = inst
    t.seconds = time.perf_counter() - start
    return t


CLASSES = ["ok", "refused (forbidden plan)", "optimal within tolerance", "false proof",
           "wrong cost", "silent drop", "refusal", "crash", "wrong objective"]


def report(t: Tally, args) -> str:
    lines = [f"seed {args.seed}: {t.instances} instances, {t.probes} certify probes, "
             f"{t.seconds:.0f} s",
             "| entry point | " + " | ".join(CLASSES) + " |",
             "|---" * (len(CLASSES) + 1) + "|"]
    for entry in sorted(t.counts):
        c = t.counts[entry]
        lines.append(f"| {entry} | " + " | ".join(str(c.get(k, 0)) for k in CLASSES)
                     + " |")
    lines += ["   " + ex for ex in t.examples]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probes", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plans", type=int, default=4, help="random plans per instance")
    ap.add_argument("--slow", type=float, default=0.1,
                    help="probability of probing a slow method with a random plan")
    ap.add_argument("--reload-every", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--json", default=None, help="write the counts here")
    ap.add_argument("--report", default=None,
                    help="write the table here, also every 60 instances")
    args = ap.parse_args()
    t = run(args)
    text = report(t, args)
    print(text, end="")
    if args.report:
        with open(args.report, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({e: dict(c) for e, c in t.counts.items()}, f, indent=1)


if __name__ == "__main__":
    main()
