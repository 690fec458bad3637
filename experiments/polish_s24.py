"""Where the k <= 4 MIP polish of search_many's warm pass spends its time (issue 51,
session 24), and what its seconds cost the warm wall.

    python experiments/polish_s24.py suite [--passes default,off,s23]   # warm passes, timeline
    python experiments/polish_s24.py phases [--repeat 1]            # per-phase split
    python experiments/polish_s24.py gil                            # does HiGHS hold the GIL?
    python experiments/polish_s24.py variants --variants base,nodecuts,...  # HiGHS options
    python experiments/polish_s24.py budget --budgets 6000,3000,2000   # k = 4: search vs polish

`suite`: one process over the regal-time suite (`instances(30, [4, 8, 16], 0)`, seed 0,
bench batch's call): a first search_many with the polish off (compiles, untimed), then
each pass of `--passes` timed ("default": search_many's defaults; "off": polish=False),
with `polish_result` and `BucketRun.results` wrapped to record, per problem, the thread,
the run's start and end, and the polish's wall and thread CPU seconds split into model
build (Python), HiGHS (load + solve + read) and the decode afterwards (the incumbent's
priorities re-decoded by the float64 reference). Writes the polish's starts (the
partitions `polish_result` received: the search's real starts) to STARTS.

`phases`: from STARTS, each k = 4 polish step by step as `mip_polish` and `polish_result`
do it, each step timed (thread CPU seconds), HiGHS with and without the Python callbacks
jaxplace attaches (`_Recorder`: an interrupt callback on every HiGHS check), and HiGHS's
own timing report parsed from its log (presolve / solve). Checks that the split path
returns the same partition as `polish_result`.

`variants`: from STARTS, the polish with more HiGHS options over the default's
(VARIANTS), as `polish_result` applies it; thread CPU seconds and cost after / before per
variant (costs are deterministic; CPU seconds vary with the machine's load, so compare
rows of one run).

`budget`: the suite's k = 4 problems alone (search_many's seeds are then the
subset's indices), per budget: search_many with the polish off (process CPU and wall,
warm: a first tiny call compiles), then each result polished as `polish_result` does
(thread CPU); final cost against the first budget's. Does a shorter search at k = 4
lose what the polish gets back anyway?

`starts`: other starts for `variants`: the k = 4 problems of the suite drawn with
`--graph-seed` (other graphs), searched by search_many (seed 0, polish off), pickled
to STARTS.

`gil`: a polish on a second thread while this one counts in pure Python: the count per
second against the count alone says whether HiGHS's run() releases the GIL.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import re
import threading
import time

import numpy as np

STARTS = os.environ.get("POLISH_S24_STARTS", "/tmp/h2_s24_starts.pkl")
NEW_OPTIONS: dict = {}


def suite_problems():
    import jaxplace as jp
    from jaxplace.bench.search_time import instances

    return [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]


def gmean(x) -> float:
    return math.exp(sum(math.log(v) for v in x) / len(x))


# -- suite: warm passes with a timeline ------------------------------------------------

class Recorder:
    """Wraps run.polish_result, polish.mip_polish, bounds.exact.exact_model and
    bounds.exact.solve_model to time each polish's parts per thread."""

    def __init__(self):
        import jaxplace.bounds.exact as exact
        import jaxplace.objectives.throughput.polish as polish
        import jaxplace.search.many.run as run

        self.events: list[dict] = []
        self.runs: list[dict] = []
        self.local = threading.local()
        self.t0 = time.perf_counter()
        orig_pr, orig_mp = run.polish_result, polish.mip_polish
        orig_em, orig_sm = exact.exact_model, exact.solve_model
        orig_results = run.BucketRun.results
        rec = self

        def clocks():
            return time.perf_counter(), time.thread_time()

        def timed(name, fn):
            def inner(*a, **k):
                w, c = clocks()
                try:
                    return fn(*a, **k)
                finally:
                    d = getattr(rec.local, "cur", None)
                    if d is not None:
                        w2, c2 = clocks()
                        d[name + "_wall"] = d.get(name + "_wall", 0.0) + w2 - w
                        d[name + "_cpu"] = d.get(name + "_cpu", 0.0) + c2 - c
            return inner

        def polish_result(problem, lower_bound, part, x, evals, info, settings, elapsed):
            d = {"n": problem.n, "k": problem.k, "thread": threading.current_thread().name,
                 "start": part.assignment.copy(), "before": float(part.cost),
                 "problem": problem}
            rec.local.cur = d
            w, c = clocks()
            try:
                out = orig_pr(problem, lower_bound, part, x, evals, info, settings, elapsed)
            finally:
                rec.local.cur = None
            w2, c2 = clocks()
            d.update(t_start=w - rec.t0, wall=w2 - w, cpu=c2 - c, after=float(out[0].cost),
                     polished="polish" in info)
            rec.events.append(d)
            return out

        def results(self_run, time_limit=None):
            w = time.perf_counter()
            c = time.thread_time()
            yield from orig_results(self_run, time_limit)
            rec.runs.append({"thread": threading.current_thread().name,
                             "t_start": w - rec.t0, "t_end": time.perf_counter() - rec.t0,
                             "cpu": time.thread_time() - c,
                             "k": self_run.members[0].problem.k,
                             "n": self_run.members[0].problem.n})

        run.polish_result = polish_result
        run.BucketRun.results = results
        polish.mip_polish = timed("mip", orig_mp)
        exact.exact_model = timed("build", orig_em)
        exact.solve_model = timed("highs", orig_sm)

    def reset(self):
        self.events, self.runs = [], []
        self.t0 = time.perf_counter()


class Runnable:
    """Samples, every `dt` seconds, how many of this process's threads are runnable
    (state R in /proc/self/task/*/stat; the sampler excluded): the cores the process
    would keep busy on an idle machine, whatever the load (a thread waiting for a
    core under load is still R)."""

    def __init__(self, dt: float = 0.05):
        self.dt, self.counts, self.stop = dt, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = threading.get_native_id()
        while not self.stop.is_set():
            n = 0
            for tid in os.listdir("/proc/self/task"):
                if int(tid) == me:
                    continue
                try:
                    with open(f"/proc/self/task/{tid}/stat") as f:
                        state = f.read().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                n += state == "R"
            self.counts.append(n)
            time.sleep(self.dt)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def summary(self) -> str:
        c = np.asarray(self.counts)
        return (f"runnable threads (of {len(c)} samples): 0: {np.mean(c == 0):.0%}, "
                f"1: {np.mean(c == 1):.0%}, >= 2: {np.mean(c >= 2):.0%} "
                f"(mean min(count, 2) {np.mean(np.minimum(c, 2)):.2f} of 2 cores)")


def suite(passes: list[str]) -> None:
    global NEW_OPTIONS
    from jaxplace.objectives.throughput.polish import POLISH_HIGHS_OPTIONS

    NEW_OPTIONS = dict(POLISH_HIGHS_OPTIONS)
    from jaxplace.search.many import search_many

    probs = suite_problems()
    rec = Recorder()
    print(f"{len(probs)} problems; load {os.getloadavg()[0]:.2f}", flush=True)
    t = time.perf_counter()
    search_many(probs, seed=0, polish=False)
    print(f"first call (compiles) {time.perf_counter() - t:.1f} s", flush=True)
    for name in passes:
        rec.reset()
        kw = {"off": {"polish": False}, "default": {}, "s23": {}}[name]
        # "s23": the polish's HiGHS options before this session (presolve, node cuts on)
        import jaxplace.objectives.throughput.polish as polish_mod

        polish_mod.POLISH_HIGHS_OPTIONS = {**NEW_OPTIONS, **(
            VARIANTS["s23"] if name == "s23" else {})}
        load0 = os.getloadavg()[0]
        w, c = time.perf_counter(), time.process_time()
        with Runnable() as busy:
            rs = search_many(probs, seed=0, **kw)
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        costs = [r.cost for r in rs]
        k4 = [r.cost for r, p in zip(rs, probs, strict=True) if p.k == 4]
        print(f"\n## pass {name}: wall {wall:.1f} s, process CPU {cpu:.1f} s "
              f"(cores busy {cpu / wall:.2f}), load {load0:.1f} -> {os.getloadavg()[0]:.1f}; "
              f"costs hash {hash(tuple(costs)) & 0xffffffff:08x}, "
              f"k=4 gmean cost {gmean(k4):.2f}", flush=True)
        print(f"  {busy.summary()}", flush=True)
        runs = sorted(rec.runs, key=lambda r: r["t_start"])
        threads = sorted({r["thread"] for r in runs})
        for th in threads:
            mine = [r for r in runs if r["thread"] == th]
            busy = sum(r["t_end"] - r["t_start"] for r in mine)
            print(f"  {th}: {len(mine)} runs, first start {mine[0]['t_start']:.1f} s, "
                  f"last end {mine[-1]['t_end']:.1f} s, in runs {busy:.1f} s, "
                  f"thread CPU in runs {sum(r['cpu'] for r in mine):.1f} s", flush=True)
        ev = [e for e in rec.events if e["polished"]]
        if ev:
            tot = {key: sum(e.get(key, 0.0) for e in ev) for key in
                   ("wall", "cpu", "mip_wall", "mip_cpu", "build_wall", "build_cpu",
                    "highs_wall", "highs_cpu")}
            print(f"  polish: {len(ev)} problems, wall {tot['wall']:.2f} s "
                  f"(thread CPU {tot['cpu']:.2f}); mip_polish {tot['mip_wall']:.2f} "
                  f"(CPU {tot['mip_cpu']:.2f}) of which model build {tot['build_wall']:.2f} "
                  f"(CPU {tot['build_cpu']:.2f}), HiGHS {tot['highs_wall']:.2f} "
                  f"(CPU {tot['highs_cpu']:.2f}); the decode afterwards "
                  f"{tot['wall'] - tot['mip_wall']:.2f} (CPU {tot['cpu'] - tot['mip_cpu']:.2f})")
            print("  | n | thread | at s | wall s | CPU s | build | HiGHS | decode | "
                  "cost after / before |")
            print("  |---|---|---|---|---|---|---|---|---|")
            for e in sorted(ev, key=lambda e: e["t_start"]):
                print(f"  | {e['n']} | {e['thread'][-1]} | {e['t_start']:.1f} | "
                      f"{e['wall']:.2f} | {e['cpu']:.2f} | {e.get('build_cpu', 0):.3f} | "
                      f"{e.get('highs_cpu', 0):.2f} | {e['cpu'] - e.get('mip_cpu', 0):.3f} | "
                      f"{e['after'] / e['before']:.4f} |", flush=True)
            starts = [(e["problem"], e["start"]) for e in rec.events if e["k"] <= 4]
            with open(STARTS, "wb") as f:
                pickle.dump([(p.graph, p.k, a) for p, a in starts], f)
            print(f"  starts of {len(starts)} polishes -> {STARTS}")


# -- phases: one polish step by step ---------------------------------------------------

def split_polish(problem, assignment, callbacks: bool, log: str | None = None) -> dict:
    """One default polish (`mip_polish` full MIP, then `polish_result`'s decode), each
    step timed in thread CPU seconds; `callbacks`: HiGHS run with jaxplace's recorder
    callbacks (as solve_arrays does) or a bare run()."""
    from jaxplace.bounds import exact as ex
    from jaxplace.cost import evaluate_partition
    from jaxplace.highs import _Recorder, load_arrays, new_highs, read_mip, set_option
    from jaxplace.objectives.throughput.polish import (
        POLISH_HIGHS_OPTIONS,
        POLISH_MIP_NODES,
        partition_priorities,
    )
    from jaxplace.reference import decode_reference

    out: dict = {}
    clock = time.thread_time

    def lap(name, t):
        now = clock()
        out[name] = out.get(name, 0.0) + now - t
        return now

    t = clock()
    pc = evaluate_partition(problem, assignment)
    t = lap("check", t)
    model = ex.exact_model(problem)
    t = lap("build", t)
    start = ex._start(model, problem, pc)
    arrays = model.arrays()
    t = lap("start", t)
    ub = pc.bottleneck
    obj_bound = ub * (1 + 1e-7) + 1e-12
    h = new_highs(relax=False, time_limit=None, threads=1, mip_rel_gap=1e-6,
                  objective_bound=obj_bound, scale=model.scale, seed=0)
    for name, value in {"mip_max_nodes": POLISH_MIP_NODES, **POLISH_HIGHS_OPTIONS}.items():
        set_option(h, name, value)
    if log:
        set_option(h, "output_flag", True)
        set_option(h, "log_to_console", False)
        set_option(h, "log_file", log)
    load_arrays(h, arrays, model.integrality)
    ncol = len(arrays["cost"])
    h.setSolution(ncol, np.arange(ncol, dtype=np.int32), np.asarray(start, np.float64))
    t = lap("load", t)
    w = time.perf_counter()
    if callbacks:
        _Recorder(model.scale, 0.0, None, 0.5).run(h)
    else:
        h.run()
    out["solve_wall"] = time.perf_counter() - w
    t = lap("solve", t)
    z = float(model.col_lo[0]) * model.scale
    bound, primal, gap, nodes, col = read_mip(h, scale=model.scale, z_floor=z,
                                              objective_bound=obj_bound)
    found = model.assignment(col) if col is not None else None
    t = lap("read", t)
    after = pc.bottleneck
    if found is not None:
        new = evaluate_partition(problem, found)
        if new.bottleneck < pc.bottleneck * (1 - 1e-9):
            got = decode_reference(problem, partition_priorities(problem, new.assignment))
            after = min(after, got.cost)
            out["assignment"] = got.assignment
    t = lap("decode", t)
    out.update(after=after, before=pc.bottleneck, nodes=nodes,
               status=h.modelStatusToString(h.getModelStatus()))
    if log:
        h.setOptionValue("log_file", "")
    return out


def highs_timing(log: str) -> dict:
    """HiGHS 1.15's solving report (wall seconds): total, presolve, solve, the solve's
    sub-MIP seconds and calls; sub-MIP depth; LP iterations (total, heuristics)."""
    text = open(log).read()
    rep = text[text.rfind("Solving report"):]
    out = {}
    for key, pat in (("total", r"Timing\s+([\d.]+)"), ("presolve", r"([\d.]+) \(Presolve\)"),
                     ("solve", r"([\d.]+) \(Solve\)"),
                     ("depth", r"Max sub-MIP depth\s+(\d+)"),
                     ("lp_total", r"LP iterations\s+(\d+)"),
                     ("lp_heur", r"(\d+) \(heuristics\)")):
        m = re.search(pat, rep)
        if m:
            out[key] = float(m[1])
    m = re.search(r"\(Solve\)\s+MIP\s+time \[calls\] = [\d.]+ \[\d+\]\s+"
                  r"subMIP time \[calls\] = ([\d.]+) \[(\d+)\]", rep)
    if m:
        out.update(submip=float(m[1]), submip_calls=int(m[2]))
    return out


def phases(repeat: int) -> None:
    import jaxplace as jp
    from jaxplace.objectives.throughput.polish import (
        POLISH_MIP_NODES,
        mip_polish,
        partition_priorities,
        polish_applies,
    )
    from jaxplace.reference import decode_reference

    with open(STARTS, "rb") as f:
        starts = pickle.load(f)
    print(f"{len(starts)} starts from {STARTS}; load {os.getloadavg()[0]:.2f}", flush=True)
    keys = ("check", "build", "start", "load", "solve", "read", "decode")
    print("| n | " + " | ".join(keys) + " | solve, no callbacks | HiGHS presolve / sub-MIPs "
          "/ total (wall) | sub-MIP depth | LP iter. (heur.) | after / before |")
    print("|---" * (len(keys) + 6) + "|")
    tot = {k: 0.0 for k in keys + ("bare",)}
    for g, k, a in starts:
        p = jp.Problem(g, k)
        if not polish_applies(p):
            continue
        for _ in range(repeat):
            log = "/tmp/h2_s24_highs.log"
            if os.path.exists(log):
                os.remove(log)
            cb = split_polish(p, a, callbacks=True, log=log)
            bare = split_polish(p, a, callbacks=False)
            ht = highs_timing(log)
            assert cb["after"] == bare["after"], (cb["after"], bare["after"])
            # the split path is the library's path: same answer as mip_polish + decode
            ref = mip_polish(p, a, max_nodes=POLISH_MIP_NODES)
            ref_after = cb["before"] if ref is None else min(
                cb["before"], decode_reference(p, partition_priorities(p, ref[0])).cost)
            assert abs(ref_after - cb["after"]) <= 1e-9 * ref_after, (ref_after, cb["after"])
            for key in keys:
                tot[key] += cb.get(key, 0.0)
            tot["bare"] += bare["solve"]
            print(f"| {p.n} | " + " | ".join(f"{cb.get(key, 0.0):.3f}" for key in keys)
                  + f" | {bare['solve']:.3f} | {ht.get('presolve', 0):.2f} / "
                  f"{ht.get('submip', 0):.2f} / {ht.get('total', 0):.2f} | "
                  f"{ht.get('depth', '-')} | "
                  f"{ht.get('lp_total', '-')} ({ht.get('lp_heur', '-')}) | "
                  f"{cb['after'] / cb['before']:.4f} |", flush=True)
    print("| sum | " + " | ".join(f"{tot[key]:.2f}" for key in keys)
          + f" | {tot['bare']:.2f} | | | | |")
    print(f"load at the end {os.getloadavg()[0]:.2f}")


#: name -> HiGHS options over POLISH_HIGHS_OPTIONS. Options a sub-MIP inherits from
#: its parent act inside RENS's nested sub-MIPs too (where most of the time goes).
VARIANTS: dict[str, dict] = {
    "base": {},
    # the default before this session's change (presolve and node cuts back on)
    "s23": {"presolve": "choose", "mip_allow_cut_separation_at_nodes": True},
    "nodecuts": {"mip_allow_cut_separation_at_nodes": False},
    "norrc": {"mip_heuristic_run_root_reduced_cost": False},
    "nofj": {"mip_heuristic_run_feasibility_jump": False},
    "devex": {"simplex_dual_edge_weight_strategy": 1},
    "dantzig": {"simplex_dual_edge_weight_strategy": 0},
    "age5": {"mip_lp_age_limit": 5},
    "pool1000": {"mip_pool_soft_limit": 1000},
    "sols3": {"mip_max_improving_sols": 3},
    "nopre": {"presolve": "off"},
    "noprobe": {"mip_lifting_for_probing": 0},
    "nodecuts-norrc": {"mip_allow_cut_separation_at_nodes": False,
                       "mip_heuristic_run_root_reduced_cost": False},
    "sols2": {"mip_max_improving_sols": 2},
    "nopre-sols2": {"presolve": "off", "mip_max_improving_sols": 2},
    "nopre-sols3": {"presolve": "off", "mip_max_improving_sols": 3},
    "nopre-nodecuts": {"presolve": "off", "mip_allow_cut_separation_at_nodes": False},
    # the cutoff below the start: only improvements of at least this share count
    "cut0.1%": {"_improve": 0.001},
    "cut0.5%": {"_improve": 0.005},
    "cut1%": {"_improve": 0.01},
    "cut2%": {"_improve": 0.02},
}


def highs_options(problem, assignment, spec: dict) -> dict:
    """A variant's HiGHS options for one start ("_improve": objective_bound at
    (1 - share) times the start's cost, in the model's units)."""
    from jaxplace.cost import evaluate_partition, throughput_lower_bound

    opts = {k: v for k, v in spec.items() if not k.startswith("_")}
    if "_improve" in spec:
        ub = evaluate_partition(problem, assignment).bottleneck
        opts["objective_bound"] = ub * (1 - spec["_improve"]) / throughput_lower_bound(problem)
    return opts


def variants(names: list[str]) -> None:
    import jaxplace as jp
    from jaxplace.objectives.throughput.polish import (
        mip_polish,
        partition_priorities,
        polish_applies,
    )
    from jaxplace.reference import decode_reference

    with open(STARTS, "rb") as f:
        starts = [(jp.Problem(g, k), a) for g, k, a in pickle.load(f)]
    starts = [(p, a) for p, a in starts if polish_applies(p)]
    print(f"{len(starts)} starts from {STARTS}; load {os.getloadavg()[0]:.2f}", flush=True)
    print("| variant | thread CPU s (sum) | max | cost after / before (gmean) | improved | "
          "vs base |")
    print("|---|---|---|---|---|---|")
    base = None
    for name in names:
        cpu, ratio = [], []
        for p, a in starts:
            from jaxplace.cost import evaluate_partition

            before = evaluate_partition(p, a).bottleneck
            c = time.thread_time()
            out = mip_polish(p, a, highs_options=highs_options(p, a, VARIANTS[name]))
            after = before
            if out is not None:
                after = min(before, decode_reference(p, partition_priorities(p, out[0])).cost)
            cpu.append(time.thread_time() - c)
            ratio.append(after / before)
        vs = "-" if base is None else \
            f"{gmean([x / y for x, y in zip(ratio, base, strict=True)]):.4f}"
        if name == "base":
            base = ratio
        print(f"| {name} | {sum(cpu):.2f} | {max(cpu):.2f} | {gmean(ratio):.4f} | "
              f"{sum(r < 1 - 1e-9 for r in ratio)} of {len(ratio)} | {vs} |", flush=True)
        print("    per problem CPU " + " ".join(f"{x:.2f}" for x in cpu)
              + " / ratio " + " ".join(f"{x:.4f}" for x in ratio), flush=True)
    print(f"load at the end {os.getloadavg()[0]:.2f}")


def other_starts(graph_seed: int) -> None:
    import jaxplace as jp
    from jaxplace.bench.search_time import instances
    from jaxplace.search.many import search_many

    probs = [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], graph_seed) if k == 4]
    t = time.perf_counter()
    rs = search_many(probs, seed=0, polish=False)
    print(f"{len(probs)} k = 4 problems of graph seed {graph_seed} searched in "
          f"{time.perf_counter() - t:.1f} s; n = {[p.n for p in probs]}", flush=True)
    with open(STARTS, "wb") as f:
        pickle.dump([(p.graph, p.k, r.partition.assignment) for p, r in
                     zip(probs, rs, strict=True)], f)


def budgets(values: list[int]) -> None:
    from jaxplace.objectives.throughput.polish import mip_polish, partition_priorities
    from jaxplace.reference import decode_reference
    from jaxplace.search.many import search_many

    probs = [p for p in suite_problems() if p.k == 4]
    search_many(probs, seed=0, budget=200, polish=False)  # compiles
    print(f"{len(probs)} problems at k = 4; load {os.getloadavg()[0]:.2f}", flush=True)
    print("| budget | search wall s | search process CPU s | polish thread CPU s | "
          "cost before polish / first | after polish / first |")
    print("|---|---|---|---|---|---|")
    first = None
    for b in values:
        w, c = time.perf_counter(), time.process_time()
        rs = search_many(probs, seed=0, budget=b, polish=False)
        wall, cpu = time.perf_counter() - w, time.process_time() - c
        pcpu, after = 0.0, []
        for p, r in zip(probs, rs, strict=True):
            t = time.thread_time()
            out = mip_polish(p, r.partition.assignment)
            cost = r.cost
            if out is not None:
                cost = min(cost, decode_reference(p, partition_priorities(p, out[0])).cost)
            pcpu += time.thread_time() - t
            after.append(cost)
        before = [r.cost for r in rs]
        if first is None:
            first = (before, after)
        rel = lambda x, y: gmean([u / v for u, v in zip(x, y, strict=True)])  # noqa: E731
        print(f"| {b} | {wall:.1f} | {cpu:.1f} | {pcpu:.1f} | {rel(before, first[0]):.4f} | "
              f"{rel(after, first[1]):.4f} |", flush=True)
    print(f"load at the end {os.getloadavg()[0]:.2f}")


# -- gil: does HiGHS's run() let other Python threads run? -----------------------------

def gil() -> None:
    import jaxplace as jp

    with open(STARTS, "rb") as f:
        starts = pickle.load(f)
    g, k, a = max(starts, key=lambda s: len(s[2]))
    p = jp.Problem(g, k)

    def count(seconds: float) -> float:
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(1000):
                n += 1
        return n / (time.perf_counter() - t0)

    alone = count(2.0)
    for callbacks in (False, True):
        box = {}
        th = threading.Thread(target=lambda c=callbacks, b=box: b.update(
            split_polish(p, a, callbacks=c)))
        th.start()
        time.sleep(0.05)
        n, t0 = 0, time.perf_counter()
        while th.is_alive():
            for _ in range(1000):
                n += 1
        dt = time.perf_counter() - t0
        th.join()
        print(f"n={p.n}, callbacks {callbacks}: HiGHS run {box['solve_wall']:.2f} s wall; "
              f"this thread counted {n / dt:,.0f}/s meanwhile against {alone:,.0f}/s alone "
              f"({n / dt / alone:.2f}); load {os.getloadavg()[0]:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["suite", "phases", "gil", "variants", "budget",
                                     "starts"])
    ap.add_argument("--budgets", default="6000,3000,2000")
    ap.add_argument("--graph-seed", type=int, default=1)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--passes", default="default,off")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    if a.what == "suite":
        suite(a.passes.split(","))
    elif a.what == "phases":
        phases(a.repeat)
    elif a.what == "starts":
        other_starts(a.graph_seed)
    elif a.what == "budget":
        budgets([int(v) for v in a.budgets.split(",")])
    elif a.what == "variants":
        variants(a.variants.split(","))
    else:
        gil()


if __name__ == "__main__":
    main()
