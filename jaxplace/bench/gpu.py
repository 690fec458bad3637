"""`jaxplace bench gpu`: the GPU figures in one command, one JSON, one table.

Three parts, each written to the JSON and the markdown as soon as it is done (a run
stopped by a timeout keeps the parts before):

1. decoder: candidates/s of each decoder implementation (`lanes`, the library
   default, and `fused`, the Pallas kernel) on the C++ yardstick's random DAG
   (`bench decode`'s `random_dag`; p = 6 / n, so the mean degree stays near 6),
   k = 16, float32, per population size; compile (the first call, on one chunk) apart;
   the maximum relative error against the float64 reference (`objectives.throughput.reference`)
   on the first `sample` rows. A cell whose predicted time (from the previous size's
   rate) exceeds `--max-cell-seconds` is skipped and says so; an implementation that
   fails (e.g. a kernel the device's compiler refuses) records its one-line error.
2. train: seconds per policy-training step (the recipe's batch; the first chunk,
   which holds the compile, apart).
3. suite: the regal-time suite (`bench batch`) through `search_many` in a fresh
   worker (cold wall from the worker's start, warm wall, compile ~ cold - warm)
   against the C++ brkga-10000 peer built and run on the same host; its mode is
   search_many's automatic choice (`auto_mode`: "islands" on a GPU, "default" on a
   CPU), recorded as `mode`.
4. islands: the same graphs through `search_many(mode="islands")` (wide island BRKGA
   populations, every problem of a bucket in one call, MIP polish at k <= 4 as in the
   default mode) in this process, one row per island shape (islands x population x
   generations: the size's, or each `--islands`, so one run sweeps the shape and the
   budget) and decoder (`--island-impls`: "auto", the library's choice, and/or "lanes"
   / "fused"): cold (with its compiles, unless an earlier row compiled the same
   program, i.e. the same islands, population and decoder: `compiled_before`) and
   warm, compile ~ cold - warm, cost against the suite part's C++ costs, and whether
   the warm pass repeats the cold one's costs bit for bit. Rows are written as they
   finish.

Sizes: `gpu` (P = 10^4, 10^5, 10^6 at n = 200 and 1,000; 30 graphs), `small` (what
a CPU runs in minutes; the fused kernel then runs in Pallas's interpret mode, at
small P only), `tiny` (the CI test), `auto` (gpu on a GPU, small elsewhere).
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from jaxplace.bench import batch, search_time
from jaxplace.bench.cpp_peer import CppUnavailable
from jaxplace.bench.decode import _graph_from_nodes, kernel_work, random_dag
from jaxplace.bench.runs import markdown_table
from jaxplace.bench.search_time import instances, run_cpp
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.reference import evaluate_reference
from jaxplace.problem import Problem

HELP = ("GPU figures in one run: decoder candidates/s (lanes vs fused), one training "
        "step, the regal-time suite via search_many vs C++ brkga-10000")

#: name: decoder sizes (n list, P list, float64 sample rows), fused interpret cap,
#: training chunk, suite graphs, island search (islands, population, generations)
SIZES = {
    "gpu": dict(ns=(200, 1000), pops=(10_000, 100_000, 1_000_000), sample=(64, 16),
                interpret_max=0, chunk=10, suite=30, islands=(4, 2048, 40)),
    "small": dict(ns=(200,), pops=(256, 2_048, 16_384), sample=(32,), interpret_max=256,
                  chunk=2, suite=3, islands=(2, 64, 20)),
    "tiny": dict(ns=(24,), pops=(40,), sample=(8,), interpret_max=64, chunk=1, suite=1,
                 islands=(2, 8, 2)),
}
PARTS = ("decoder", "train", "suite", "islands", "cpu_suite")
#: Decoder rows: the library's decoders, then the sparse kernel with its integer state
#: in scratch memory and with the per-candidate bound at a search-like threshold
#: (`TAU_QUANTILE` of the sample's reference costs).
IMPLS = ("lanes", "fused", "sparse", "sparse-indexed", "sparse-tau")
KERNELS = ("fused", "sparse", "sparse-indexed", "sparse-tau")
TAU_QUANTILE = 0.1
#: Decoders of the islands part ("auto": the library's choice on the platform).
ISLAND_IMPLS = ("auto", "lanes", "fused", "sparse")
#: Generations between migrations in the islands part (the accelerator default's): a
#: compiled call runs that many, so shapes differing only in generations share one
#: program (a problem past its count is frozen until the call ends).
MIGRATE_EVERY = 10
K = 16


def add_arguments(p) -> None:
    p.add_argument("--size", choices=("auto",) + tuple(SIZES), default="auto",
                   help="problem sizes (auto: gpu on a GPU, small elsewhere)")
    p.add_argument("--parts", default=",".join(PARTS),
                   help=f"comma-separated, of {', '.join(PARTS)}")
    p.add_argument("--impls", default=",".join(IMPLS), help="decoder implementations")
    p.add_argument("--out", default=".", help="folder for bench_gpu.json and bench_gpu.md")
    p.add_argument("--max-cell-seconds", type=float, default=60.0,
                   help="skip a decoder cell predicted to take longer than this")
    p.add_argument("--recipe", default="training/policy_regal.json",
                   help="training recipe timed by the train part")
    p.add_argument("--suite-count", type=int, default=None,
                   help="graphs of the regal-time suite (default: the size's)")
    p.add_argument("--islands", action="append", default=None, metavar="IxPxG",
                   help="islands part: an island shape, islands x population (per "
                   "island) x generations, e.g. 4x1024x20 (the budget per problem is "
                   "I*P*(G+1)); repeat it to sweep (default: the size's shape)")
    p.add_argument("--island-impls", default="auto",
                   help=f"islands part: decoders, comma-separated, of "
                   f"{', '.join(ISLAND_IMPLS)} (auto: the library's choice)")
    p.add_argument("--decoder-seconds", type=float, default=None,
                   help="decoder part: skip the cells after this many seconds (the "
                   "smaller graph's cells run first)")
    p.add_argument("--island-polish", default="auto",
                   help="islands part: the MIP polish, comma-separated, of auto (the "
                   "library's rule: k <= 4), on, off; one row each")
    p.add_argument("--refine-steps", default="auto",
                   help="islands part: device refinement rounds, comma-separated (auto: "
                   "the platform's default; 0: off); one row each")
    p.add_argument("--seed", type=int, default=0)


def _size(name: str) -> tuple[str, dict]:
    import jax

    if name == "auto":
        name = "gpu" if jax.default_backend() == "gpu" else "small"
    return name, SIZES[name]


def machine() -> dict:
    import jax

    dev = jax.devices()[0]
    return dict(platform=dev.platform, device=getattr(dev, "device_kind", str(dev)),
                devices=jax.device_count(), jax=jax.__version__, host=platform.node(),
                cpus=os.cpu_count(), load=list(os.getloadavg()),
                date=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))


def dag_problem(n: int, seed: int):
    return Problem(_graph_from_nodes(*random_dag(n, min(6.0 / n, 0.5), seed)), K)


def max_rel_error(got, want) -> float:
    """Largest |got - want| / |want| over finite references; inf if the infinities
    differ."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.array_equal(np.isinf(got), np.isinf(want)):
        return float("inf")
    fin = np.isfinite(want)
    return float(np.max(np.abs(got[fin] - want[fin]) / np.abs(want[fin]), initial=0.0))


class KernelRunner:
    """The sparse kernel outside `Evaluator` (its scratch-memory and bounded variants):
    `runner(X)` -> (P,) float64 costs, in chunks of `fused_chunk_size` rows on a GPU
    (interpret mode elsewhere: 64)."""

    def __init__(self, problem, impl: str, tau: float | None, on_gpu: bool):
        import jax

        from jaxplace.decoder.evaluator import fused_chunk_size
        from jaxplace.decoder.fused import fused_spec
        from jaxplace.decoder.layout import device_graph, problem_spec
        from jaxplace.decoder.sparse_fused import score_prio

        self.impl, self.tau = impl, tau
        self.spec = fused_spec(problem_spec(problem))
        _, self.g = device_graph(problem, self.spec)
        self.n = problem.n
        self.chunk = fused_chunk_size(self.spec) if on_gpu else 64
        indexed = impl == "sparse-indexed"
        self.fn = jax.jit(lambda g, X: score_prio(self.spec, g, X, tau=tau, indexed=indexed))

    def __call__(self, X: np.ndarray) -> np.ndarray:
        out = []
        for i in range(0, len(X), self.chunk):
            part = X[i:i + self.chunk]
            Xp = np.zeros((len(part), self.spec.N), np.float32)
            Xp[:, :self.n] = part
            out.append(np.asarray(self.fn(self.g, Xp), np.float64))
        return np.concatenate(out)


def _warm_up(ev, X: np.ndarray, P: int) -> float:
    """Compile the programs a call on P rows runs (its chunk shape; lanes: also the
    block window picked from a first call's costs) on at most one round of chunks;
    returns the seconds taken."""
    from jaxplace.decoder.batching import plan_chunks

    if isinstance(ev, KernelRunner):
        t0 = time.perf_counter()
        ev(X[:min(P, ev.chunk)])
        return time.perf_counter() - t0
    plan = plan_chunks(P, spec=ev.spec, itemsize=ev.itemsize, batching=ev.batching)
    rows = X[:min(P, plan.size * max(plan.threads, 1))]
    t0 = time.perf_counter()
    for _ in range(2 if ev.impl == "lanes" else 1):
        ev(rows)
    return time.perf_counter() - t0


def decoder_rows(cfg: dict, impls, *, seed: int, max_cell_seconds: float, on_gpu: bool,
                 log=print, seconds: float | None = None) -> list[dict]:
    """One record per (n, impl, P): rate, compile, error, or why it was skipped
    (`seconds`: the part's budget; later cells are skipped)."""
    t_part = time.perf_counter()
    from jaxplace.decoder import Evaluator

    rows = []
    for n, sample in zip(cfg["ns"], cfg["sample"], strict=True):
        problem = dag_problem(n, seed)
        X = np.random.default_rng(seed).random((max(cfg["pops"]), n), dtype=np.float32)
        t0 = time.perf_counter()
        want = evaluate_reference(problem, X[:sample])
        ref_s = time.perf_counter() - t0
        work = kernel_work(problem)
        tau = float(np.quantile(want[np.isfinite(want)], TAU_QUANTILE))
        log(f"decoder n={n}: element ops per candidate: " + ", ".join(
            f"{k} {v:,.0f}" for k, v in work.items()) + f"; tau {tau:.4g}")
        for impl in impls:
            rate = None
            # rows per call: the library's default (the fused kernel on a GPU: up to
            # 256 MiB of keys, `decoder.evaluator.fused_chunk_size`)
            if impl in ("sparse-indexed", "sparse-tau"):
                ev = KernelRunner(problem, impl, tau if impl == "sparse-tau" else None,
                                  on_gpu)
            else:
                ev = Evaluator(problem, impl=impl,
                               window="auto" if impl == "lanes" else None)
            ops = {"fused": work["fused"], "sparse": work["sparse"],
                   "sparse-tau": work["sparse"],
                   "sparse-indexed": work["sparse_indexed"]}.get(impl)
            for P in cfg["pops"]:
                rec = dict(n=n, impl=impl, P=P, k=K, edges=problem.graph.num_edges,
                           elem_ops=ops)
                limit = (cfg["interpret_max"] if impl in KERNELS and not on_gpu
                         else None)
                predicted = P / rate if rate else None
                if seconds is not None and time.perf_counter() - t_part > seconds:
                    rec["skipped"] = f"the part's {seconds:.0f} s were spent"
                elif limit is not None and P > limit:
                    rec["skipped"] = f"interpret mode (no GPU): P > {limit}"
                elif predicted is not None and predicted > max_cell_seconds:
                    rec["skipped"] = f"predicted {predicted:.0f} s > {max_cell_seconds:.0f} s"
                if "skipped" in rec:
                    rows.append(rec)
                    log(f"decoder n={n} {impl} P={P}: skipped ({rec['skipped']})")
                    continue
                try:
                    first_s = _warm_up(ev, X, P)
                except Exception as exc:  # noqa: BLE001 - a kernel the device refuses
                    rec["error"] = f"{type(exc).__name__}: {exc}"[:300]  # is a figure
                    rows.append(rec)
                    log(f"decoder n={n} {impl} P={P}: failed: {rec['error']}")
                    break
                t0 = time.perf_counter()
                costs = ev(X[:P])
                wall = time.perf_counter() - t0
                rate = P / wall
                got = costs[:sample]
                if impl == "sparse-tau":  # exact below tau, +inf or exact above
                    below = want < tau
                    rec["above_tau"] = float(np.mean(np.isinf(costs)))
                    rec["tau"] = tau
                    got = np.where(below | np.isfinite(got), got, want)
                rec.update(wall_s=wall, rate=rate, first_call_s=first_s,
                           max_rel_error=max_rel_error(got, want),
                           sample=sample, reference_s=ref_s)
                rows.append(rec)
                log(f"decoder n={n} {impl} P={P}: {rate:,.0f} candidates/s "
                    f"(max rel. error {rec['max_rel_error']:.2g})")
    return rows


def train_row(recipe: str, chunk: int, size: str) -> dict:
    """Seconds per training step of `recipe` (a small pool; the compile apart)."""
    from jaxplace.policy.train import load_config, train

    if not Path(recipe).is_file():
        return dict(recipe=recipe, skipped="recipe file not found (run from the repository)")
    cfg = load_config(recipe)
    over = dict(steps=2 * chunk, chunk=chunk, pool=64, validation=2, val_samples=2,
                checkpoint_every=2 * chunk, validate_every=2 * chunk, tie_probe=0,
                warmup=0)
    if size == "tiny":
        over.update(graphs=2, samples=2, pool=4)
    cfg = dataclasses.replace(cfg, **over)
    with tempfile.TemporaryDirectory(prefix="jaxplace-bench-train-") as tmp:
        t0 = time.perf_counter()
        train(cfg, Path(tmp) / "run", export=Path(tmp) / "policy", progress=False,
              quiet=True)
        total = time.perf_counter() - t0
        walls = [json.loads(line) for line in
                 (Path(tmp) / "run" / "metrics.jsonl").read_text().splitlines()]
    walls = [w["wall"] for w in walls if w["step"] > 0]
    return dict(recipe=recipe, graphs=cfg.graphs, samples=cfg.samples,
                ppo_epochs=cfg.ppo_epochs, chunk=chunk, first_chunk_s=walls[0],
                step_s=(walls[1] - walls[0]) / chunk, total_s=total)


def suite_rows(count: int, seed: int, platform: str | None = None) -> dict:
    """search_many over the regal-time suite vs C++ brkga-10000 (bench batch's
    workers); `platform` "cpu": the worker runs on the host's CPUs (JAX_PLATFORMS=cpu,
    the CPU's figure from the same commit on the same host)."""
    parser = argparse.ArgumentParser()
    batch.add_arguments(parser)  # bench batch's own defaults, so a new option there
    args = parser.parse_args(["--count", str(count), "--seed", str(seed)])  # holds here
    saved = os.environ.get("JAX_PLATFORMS")
    if platform is not None:
        os.environ["JAX_PLATFORMS"] = platform
    try:
        many = batch._run_many(args)
    finally:
        if platform is not None:
            if saved is None:
                os.environ.pop("JAX_PLATFORMS", None)
            else:
                os.environ["JAX_PLATFORMS"] = saved
    from jaxplace.search.many.islands_mode import auto_mode

    out = dict(count=count, mode=auto_mode(platform), platform=platform or "default",
               repeatable=bool(many["costs"] == many["warm_costs"]), many=dict(
        total_cold_s=many["total_s"], import_s=many["import_s"], cold_s=many["cold_s"],
        warm_s=many["warm_s"], compile_s=max(many["cold_s"] - many["warm_s"], 0.0),
        programs_compiled=many["programs_compiled"], costs=many["costs"],
        warm_costs=many["warm_costs"], devices=many["devices"]))
    try:
        cpp = search_time.run_cpp(args, [4, 8, 16])
    except CppUnavailable as exc:
        out["cpp"] = dict(skipped=str(exc))
        return out
    out["cpp"] = dict(total_s=cpp["total_s"], build_s=cpp["build_s"], costs=cpp["costs"])
    ratio = np.asarray(many["costs"], np.float64) / np.asarray(cpp["costs"], np.float64)
    out["cost_ratio"] = batch._gm(ratio)
    out["warm_cost_ratio"] = batch._gm(np.asarray(many["warm_costs"], np.float64)
                                       / np.asarray(cpp["costs"], np.float64))
    out["wall_ratio_cold"] = many["total_s"] / cpp["total_s"]
    out["wall_ratio_warm"] = many["warm_s"] / cpp["total_s"]
    return out


def cpp_costs(count: int, seed: int) -> dict:
    """The C++ peer alone over the suite's graphs (the islands part's yardstick when
    the suite part does not run): {"costs", "total_s"} or {"skipped": why}."""
    try:
        cpp = run_cpp(argparse.Namespace(count=count, seed=seed), [4, 8, 16])
    except CppUnavailable as exc:
        return dict(skipped=str(exc))
    return dict(costs=cpp["costs"], total_s=cpp["total_s"], build_s=cpp["build_s"])


def island_shape(text: str) -> tuple[int, int, int]:
    """(islands, population, generations) of "IxPxG", or a JaxplaceError."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or \
            int(parts[0]) < 1 or int(parts[1]) < 4:
        raise JaxplaceError(f"expected ISLANDSxPOPULATIONxGENERATIONS (islands >= 1, "
                            f"population >= 4), e.g. 4x1024x20; got {text!r}",
                            field="--islands")
    return int(parts[0]), int(parts[1]), int(parts[2])


def islands_row(count: int, seed: int, shape: tuple, cpp_costs=None, impl: str = "auto",
                polish: bool | None = None, refine_steps: int | None = None) -> dict:
    """`search_many(mode="islands")` over the suite's graphs, twice in this process
    (cold: with the compiles; warm), cost against the C++ peer's costs when given;
    `impl`: the islands' decoder ("auto": the library's choice; `impl_used` says which
    ran); `polish`: the MIP polish (None: the library's rule); `refine_steps`: the
    device refinement's rounds (None: the platform's default)."""
    from jaxplace.search.many import search_many

    islands, population, generations = shape
    probs = [Problem(g, k) for _, g, k in instances(count, [4, 8, 16], seed)]
    budget = islands * population * (generations + 1)
    kw = dict(mode="islands", budget=budget, seed=seed, islands=islands,
              population=population, migrate_every=MIGRATE_EVERY, polish=polish)
    if impl != "auto":
        kw["impl"] = impl
    if refine_steps is not None:
        kw["refine_steps"] = int(refine_steps)
    t0 = time.perf_counter()
    rs = search_many(probs, **kw)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = search_many(probs, **kw)
    warm = time.perf_counter() - t0
    costs = [r.cost for r in rs]
    used = sorted({r.info["impl"] for r in rs if "impl" in r.info})  # none: all exact
    refined = [r.info["refine"] for r in rs if "refine" in r.info]
    out = dict(count=count, islands=islands, population=population,
               generations=generations, budget=budget, impl=impl,
               polish="auto" if polish is None else ("on" if polish else "off"),
               refine_steps=(refined[0]["steps"] if refined else 0),
               refined=sum(bool(x.get("improved")) for x in refined),
               refine_error=next((x["error"] for x in refined if "error" in x), None),
               impl_used=",".join(used) or "-", migrate_every=kw["migrate_every"],
               evaluations=float(np.mean([r.evaluations for r in rs])), cold_s=cold,
               warm_s=warm, compile_s=max(cold - warm, 0.0), costs=costs,
               repeatable=all(a.cost == b.cost and np.array_equal(a.priorities, b.priorities)
                              for a, b in zip(rs, again, strict=True)))
    if cpp_costs is not None and len(cpp_costs) == count:
        out["cost_ratio"] = batch._gm(np.asarray(costs) / np.asarray(cpp_costs, np.float64))
    return out


def _polish_choice(text: str) -> bool | None:
    t = text.strip()
    if t not in ("auto", "on", "off"):
        raise JaxplaceError(f"expected auto, on or off, got {t!r}", field="--island-polish")
    return None if t == "auto" else t == "on"


def _refine_choice(text: str) -> int | None:
    t = text.strip()
    if t == "auto":
        return None
    if not t.isdigit():
        raise JaxplaceError(f"expected auto or an integer >= 0, got {t!r}",
                            field="--refine-steps")
    return int(t)


def _f(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def markdown(rec: dict) -> str:
    m = rec["machine"]
    lines = [f"# jaxplace bench gpu ({rec['size']}), {m['date']}", "",
             f"{m['device']} ({m['platform']}, {m['devices']} device(s)), jax {m['jax']}, "
             f"host {m['host']} ({m['cpus']} CPUs, load {m['load'][0]:.2f} at the start"
             + (f", {m['load_end'][0]:.2f} at the end" if "load_end" in m else "") + ")", ""]
    dec = rec.get("decoder")
    if dec is not None:
        rows = []
        for r in dec:
            note = r.get("skipped") or r.get("error") or ""
            if "above_tau" in r:
                note = (note + f" tau {r['tau']:.4g}: {100 * r['above_tau']:.0f}% above"
                        ).strip()
            rows.append([r["n"], r["impl"], f"{r['P']:,}" if "P" in r else "-",
                         _f(r.get("rate"), ",.0f"), _f(r.get("first_call_s"), ".1f"),
                         _f(r.get("max_rel_error"), ".2g"),
                         _f(r.get("elem_ops"), ",.0f"), note])
        lines += ["## Decoder (float32, k = 16; error vs the float64 reference on a "
                  "sample)", "", markdown_table(
                      ["n", "impl", "P", "candidates/s", "first calls s (compile)",
                       "max rel. error", "element ops / candidate (counted)",
                       "note"], rows), ""]
    tr = rec.get("train")
    if tr is not None:
        lines += ["## Policy training step", ""]
        if "step_s" in tr:
            lines.append(f"{tr['recipe']}: {tr['graphs']} graphs x {tr['samples']} samples"
                         f" per step, PPO epochs {tr['ppo_epochs']}: {tr['step_s']:.4f} s "
                         f"per step (first chunk of {tr['chunk']}, with the compile: "
                         f"{tr['first_chunk_s']:.1f} s)")
        else:
            lines.append(f"{tr['recipe']}: {tr.get('skipped') or tr.get('error')}")
        lines.append("")
    for key, title in (("suite", "this device"), ("cpu_suite", "the host's CPUs")):
        lines += suite_markdown(rec.get(key), title)
    isl = rec.get("islands")
    if isl is not None:
        lines += islands_markdown(isl if isinstance(isl, list) else [isl])
        cpp = rec.get("islands_cpp")
        if cpp is not None:
            lines += [f"C++ brkga-10000 (1 core) on these graphs: {cpp['total_s']:.1f} s"
                      if "total_s" in cpp else f"C++ peer: {cpp.get('skipped')}", ""]
    return "\n".join(lines)


def suite_markdown(su: dict | None, title: str) -> list[str]:
    """The lines of a suite part (None: not run)."""
    if su is None:
        return []
    lines = [f"## Regal-time suite ({su.get('count')} graphs) via search_many on {title} "
             f"(mode {su.get('mode', 'default')}; warm repeats cold bit for bit: "
             f"{su.get('repeatable', '-')})", ""]
    if "error" in su:
        lines.append(su["error"])
    else:
        mk, cpp = su["many"], su["cpp"]
        rows = [["search_many", f"{mk['total_cold_s']:.1f}", f"{mk['compile_s']:.1f}",
                 f"{mk['warm_s']:.1f}", _f(su.get("cost_ratio"), ".4f"),
                 _f(su.get("wall_ratio_cold"), ".2f"),
                 _f(su.get("wall_ratio_warm"), ".2f")]]
        if "total_s" in cpp:
            rows.append(["C++ brkga-10000 (1 core)", f"{cpp['total_s']:.1f}", "-",
                         f"{cpp['total_s']:.1f}", "1", "1", "1"])
        lines.append(markdown_table(
            ["method", "cold wall s", "compile s (cold - warm)", "warm wall s",
             "cost / C++", "cold wall / C++", "warm wall / C++"], rows))
        if "skipped" in cpp:
            lines.append(f"C++ peer: {cpp['skipped']}")
    lines.append("")
    return lines


def islands_markdown(rows: list) -> list[str]:
    """The islands part's lines: one table row per shape and decoder."""
    count = next((r.get("count") for r in rows), None)
    lines = [f"## search_many(mode=\"islands\") over the suite's {count} graphs (one "
             "process)", ""]
    table = []
    for r in rows:
        shape = (f"{r['islands']} x {r['population']} x {r['generations']}"
                 if "islands" in r else "-")
        if "error" in r:
            table.append([shape, r.get("impl", "-"), "-", r.get("polish", "-"), "-", "-",
                          "-", "-", "-", "-", "-", r["error"]])
            continue
        table.append([shape, r.get("impl", "-"), r.get("impl_used", "-"),
                      r.get("polish", "-"),
                      f"{r.get('refine_steps', 0)} ({r.get('refined', 0)} improved)",
                      f"{r['budget']:,}", f"{r['evaluations']:,.0f}",
                      f"{r['cold_s']:.1f}", f"{r['compile_s']:.1f}", f"{r['warm_s']:.1f}",
                      _f(r.get("cost_ratio"), ".4f"),
                      f"bit for bit: {r['repeatable']}"
                      + ("; compiled by an earlier row" if r.get("compiled_before") else "")
                      + (f"; refinement failed: {r['refine_error']}"
                         if r.get("refine_error") else "")])
    lines += [markdown_table(
        ["islands x population x generations", "impl", "ran", "polish",
         "device refinement rounds", "budget / problem",
         "mean evaluations", "cold wall s", "compile s (cold - warm)", "warm wall s",
         "cost / C++", "warm repeats cold"], table), ""]
    return lines


def run(args) -> int:
    import jax

    size, cfg = _size(args.size)
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    island_impls = [i.strip() for i in args.island_impls.split(",") if i.strip()]
    bad = (sorted(set(parts) - set(PARTS)) + sorted(set(impls) - set(IMPLS))
           + sorted(set(island_impls) - set(ISLAND_IMPLS)))
    if bad:
        raise JaxplaceError(f"unknown part(s) or impl(s): {', '.join(bad)}",
                            field="--parts/--impls/--island-impls")
    shapes = [island_shape(t) for t in args.islands] if args.islands else [cfg["islands"]]
    polishes = [_polish_choice(t) for t in args.island_polish.split(",") if t.strip()]
    refines = [_refine_choice(t) for t in args.refine_steps.split(",") if t.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    on_gpu = jax.default_backend() == "gpu"
    rec = dict(size=size, machine=machine(), parts=parts)

    def save():
        (out / "bench_gpu.json").write_text(json.dumps(rec, indent=1) + "\n")
        (out / "bench_gpu.md").write_text(markdown(rec) + "\n")

    save()
    if "decoder" in parts:
        rec["decoder"] = decoder_rows(cfg, impls, seed=args.seed, on_gpu=on_gpu,
                                      max_cell_seconds=args.max_cell_seconds,
                                      seconds=args.decoder_seconds)
        save()
    if "train" in parts:
        try:
            rec["train"] = train_row(args.recipe, cfg["chunk"], size)
        except Exception as exc:  # noqa: BLE001 - recorded, the other parts still run
            rec["train"] = dict(recipe=args.recipe, error=f"{type(exc).__name__}: {exc}")
        save()
    if "suite" in parts:
        count = args.suite_count or cfg["suite"]
        try:
            rec["suite"] = suite_rows(count, args.seed)
        except Exception as exc:  # noqa: BLE001
            rec["suite"] = dict(count=count, error=f"{type(exc).__name__}: {exc}")
        save()
    if "islands" in parts:
        count = args.suite_count or cfg["suite"]
        cpp = rec.get("suite", {}).get("cpp", {}).get("costs")
        if cpp is None and "suite" not in parts:  # the yardstick of the cost column
            rec["islands_cpp"] = cpp_costs(count, args.seed)
            cpp = rec["islands_cpp"].get("costs")
            save()
        rec["islands"] = []
        compiled = set()
        rows = [(shape, impl, polish, steps) for shape in shapes for impl in island_impls
                for polish in polishes for steps in refines]
        for shape, impl, polish, steps in rows:
            # one compiled program per (islands, population, decoder)
            program = (shape[0], shape[1], impl)
            try:
                row = islands_row(count, args.seed, shape, cpp, impl, polish, steps)
            except Exception as exc:  # noqa: BLE001 - recorded, the next row runs
                row = dict(count=count, islands=shape[0], population=shape[1],
                           generations=shape[2], impl=impl,
                           error=f"{type(exc).__name__}: {exc}"[:300])
            row["compiled_before"] = program in compiled
            compiled.add(program)
            rec["islands"].append(row)
            print(f"islands {shape[0]}x{shape[1]}x{shape[2]} {impl} polish "
                  f"{row.get('polish')} refine {row.get('refine_steps')}: "
                  + (row.get("error") or f"cold {row['cold_s']:.1f} s, warm "
                     f"{row['warm_s']:.1f} s, cost / C++ "
                     f"{_f(row.get('cost_ratio'), '.4f')}, warm repeats cold "
                     f"{row['repeatable']}"), flush=True)
            save()
    if "cpu_suite" in parts:  # the CPU's figure, same commit, same host
        count = args.suite_count or cfg["suite"]
        try:
            rec["cpu_suite"] = suite_rows(count, args.seed, platform="cpu")
        except Exception as exc:  # noqa: BLE001
            rec["cpu_suite"] = dict(count=count, error=f"{type(exc).__name__}: {exc}")
        save()
    rec["machine"]["load_end"] = list(os.getloadavg())
    save()
    print(markdown(rec))
    print(f"wrote {out / 'bench_gpu.json'} and {out / 'bench_gpu.md'}")
    return 0


__all__ = ["HELP", "ISLAND_IMPLS", "SIZES", "add_arguments", "decoder_rows", "island_shape",
           "islands_markdown", "islands_row", "markdown", "max_rel_error", "run",
           "suite_rows", "train_row"]


def _main(argv=None) -> int:
    """`python -m jaxplace.bench.gpu`: the same bench without the CLI."""
    p = argparse.ArgumentParser(prog="python -m jaxplace.bench.gpu", description=HELP)
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(_main())
