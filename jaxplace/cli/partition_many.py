"""`jaxplace partition-many FILE... | DIR -k 2,4,8`: many problems in one batched run.

Every graph file given (or found in a folder: .json and .onnx, sorted) is searched for
every k of `-k` by one `jp.search_many` call: problems are bucketed by padded size, each
bucket one compiled program. As each problem finishes its result JSON is written to the
output folder (`<file stem>.k<k>.json`, the format of `jaxplace partition -o`) and a line
is appended to the JSONL summary (file, k, cost, lower bound, ratio, evaluations,
seconds, interrupted, output). `--ray ADDRESS` runs the buckets as Ray tasks on a
cluster (`--ray local`: a local one). `--mode` picks the batched search (default:
auto, island BRKGA on GPUs).

Ctrl-C stops the run: every finished result is kept, every unfinished problem writes its
best so far (marked interrupted in the summary); exit status 130.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from jaxplace.cli.cmd_partition import settle_bound
from jaxplace.cli.runner import Found, Runner
from jaxplace.cmdline import positive_int, seconds
from jaxplace.errors import JaxplaceError

HELP = "partition many graphs (and k values) in one batched search"
DESCRIPTION = __doc__.split("\n\n", 1)[1].strip()
#: Graph files picked from a folder.
SUFFIXES = (".json", ".onnx")
SUMMARY = "summary.jsonl"
#: --mode choices: search_many's modes and "auto" (its platform choice).
MODES = ("auto", "default", "islands")


def _ks(text: str) -> list[int]:
    try:
        ks = [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected k values like 2,4,8, got {text!r}") \
            from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"k values must be at least 1, got {text!r}")
    return sorted(set(ks), key=ks.index)


def add_arguments(p) -> None:
    p.add_argument("inputs", nargs="+", metavar="FILE|DIR",
                   help="graph files (node-link JSON, NeurIPS JSON, .onnx) or folders")
    p.add_argument("-k", dest="ks", type=_ks, default=None,
                   help="comma-separated stage counts, e.g. 2,4,8 (default: each file's)")
    p.add_argument("--budget", type=positive_int, default=None,
                   help="decoder evaluations per problem")
    p.add_argument("--time-limit", type=seconds, default=None,
                   help="seconds for the whole run (compile time included)")
    p.add_argument("--seed", type=int, default=0, help="every problem searches with this seed")
    p.add_argument("-o", "--output-dir", default="jaxplace-results", metavar="DIR",
                   help="folder for the result files and the summary (created)")
    p.add_argument("--summary", default=None, metavar="PATH",
                   help=f"JSONL summary (default: DIR/{SUMMARY})")
    p.add_argument("--max-programs", type=positive_int, default=8,
                   help="at most this many padded shapes (compiled programs)")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="local: problems searched at once on host threads (default: one "
                        "per core)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="run the buckets as Ray tasks on this cluster ('local': start one)")
    p.add_argument("--ray-cpus", type=positive_int, default=1,
                   help="CPU cores per Ray task")
    p.add_argument("--mode", choices=MODES, default="auto",
                   help="the batched search: 'default' (BRKGA then a local search per "
                        "problem), 'islands' (island BRKGA sized to the device, every "
                        "problem of a bucket in one call; local runs only) or 'auto' "
                        "(islands on GPUs, default elsewhere and under --ray)")
    p.add_argument("-q", "--quiet", action="store_true", help="no line per result")


def graph_files(inputs) -> list[Path]:
    """The graph files of FILE / DIR arguments, in order (folders: sorted)."""
    out = []
    for x in inputs:
        p = Path(x)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.suffix.lower() in SUFFIXES
                           and q.is_file())
            if not found:
                raise JaxplaceError(f"no graph files ({', '.join(SUFFIXES)}) in {p}",
                                    field="inputs")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise JaxplaceError(f"no such file or folder: {p}", field="inputs")
    return out


def load_jobs(files: list[Path], ks: list[int] | None) -> list[tuple[Path, object]]:
    """[(file, Problem)] for every file and k (k: the file's when `ks` is None)."""
    from jaxplace.formats import load_problem

    jobs = []
    for f in files:
        if ks is None:  # the file's k (an error naming the file when it has none)
            jobs.append((f, load_problem(f)))
            continue
        for k in ks:
            jobs.append((f, load_problem(f, k=k)))
    return jobs


def output_name(file: Path, k: int, taken: set) -> str:
    """`<stem>.k<k>.json`, made unique when two inputs share a stem."""
    name, i = f"{file.stem}.k{k}.json", 1
    while name in taken:
        i += 1
        name = f"{file.stem}-{i}.k{k}.json"
    taken.add(name)
    return name


def run(args) -> int:
    """The command (see the module doc); 130 after Ctrl-C, else 0."""
    from jaxplace import search_many
    from jaxplace.formats import save_result

    mode = args.mode
    if mode == "islands" and args.ray:
        raise JaxplaceError("mode 'islands' runs on this process's devices: not with "
                            "--ray", field="--mode")
    mode = None if mode == "auto" and not args.ray else ("default" if mode == "auto"
                                                         else mode)
    if args.ray:  # before any output: a missing Ray leaves nothing behind
        from jaxplace.search.many.api import require_executor

        require_executor("ray")
    jobs = load_jobs(graph_files(args.inputs), args.ks)
    out_dir = Path(args.output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise JaxplaceError(f"{out_dir} exists and is not a folder", field="--output-dir")
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = Path(args.summary) if args.summary else out_dir / SUMMARY
    taken: set = set()
    names = [output_name(f, p.k, taken) for f, p in jobs]
    t0 = time.perf_counter()
    # the run stays in this thread: the Runner's first Ctrl-C only sets `cancel`, so
    # every problem writes its best so far; a second one interrupts at once
    with open(summary, "w") as log, Runner(quiet=True) as runner:
        def write(i: int, r) -> None:
            f, p = jobs[i]
            path = out_dir / names[i]
            lower, _, proved_by = settle_bound(p, Found(r, "many", r.evaluations,
                                                        r.wall_time, info=r.info))
            extra = {"found_by": r.info.get("found_by", "many")}
            if proved_by and r.cost <= lower * (1 + 1e-6):
                extra["proved_by"] = proved_by
            save_result(path, p, r, method="many", seed=args.seed, lower_bound=lower,
                        source_file=str(f), timings={"search_s": r.wall_time}, extra=extra)
            rec = dict(file=str(f), k=p.k, cost=r.cost, lower_bound=lower,
                       ratio=r.cost / lower if lower > 0 else None, **extra,
                       evaluations=r.evaluations, seconds=round(r.wall_time, 3),
                       interrupted=r.interrupted, output=str(path))
            log.write(json.dumps(rec) + "\n")
            log.flush()
            if not args.quiet:
                said = (f"proven optimal by {extra['proved_by']}" if "proved_by" in extra
                        else f"{rec['ratio'] or 0:.4f}x the lower bound")
                print(f"{f.name} k={p.k}: cost {r.cost:.6g} ({said})"
                      f"{' interrupted' if r.interrupted else ''} -> {path}", flush=True)

        search_many([p for _, p in jobs], budget=args.budget, time_limit=args.time_limit,
                    seed=args.seed, max_programs=args.max_programs, on_result=write,
                    cancel=runner.cancel, executor="ray" if args.ray else "local",
                    ray_address=None if args.ray in (None, "local") else args.ray,
                    num_cpus=args.ray_cpus, workers=args.workers, mode=mode)
    print(f"{len(jobs)} problems in {time.perf_counter() - t0:.1f} s; summary: {summary}",
          flush=True)
    return runner.exit_status()


__all__ = ["add_arguments", "graph_files", "load_jobs", "run"]
