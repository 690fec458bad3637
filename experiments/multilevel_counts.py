"""Multilevel search without a time limit: the old 60 s wall-clock default against the
count-bounded schedule (issue 51, item 4), side by side on the same graphs in one
process.

    python experiments/multilevel_counts.py [--base COMMIT] [--cases regal:2000,...]

`--base` (default 710a6d4) is the commit whose jaxplace/multilevel/{search,refine}.py
are the old search (loaded from git into fresh modules). Prints per case: the old cost
and wall, the new cost, wall and evaluations, and the ratio new / old.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types


def load_old(commit: str):
    """The multilevel search and refinement of `commit`, as fresh modules."""
    def src(path):
        return subprocess.check_output(["git", "show", f"{commit}:{path}"], text=True)
    refine = types.ModuleType("ml_old_refine")
    sys.modules["ml_old_refine"] = refine  # dataclasses look their module up
    exec(compile(src("jaxplace/multilevel/refine.py"), "old_refine", "exec"),
         refine.__dict__)
    s = src("jaxplace/multilevel/search.py").replace(
        "from jaxplace.multilevel.refine import", "from ml_old_refine import")
    search = types.ModuleType("ml_old_search")
    sys.modules["ml_old_search"] = search
    exec(compile(s, "old_search", "exec"), search.__dict__)
    return search.multilevel_search


def problem(case: str):
    import jaxplace as jp

    fam, n, k = (case.split(":") + ["16"])[:3]
    n, k = int(n), int(k)
    if fam == "gpt":
        from jaxplace.latency.models import gpt_like

        return jp.Problem(gpt_like(max(1, round((n - 13) / 50)), 1024, 16), k=k)
    from jaxplace.generators.regal import regal

    return jp.Problem(regal(1, n=n, model=None if fam == "regal" else fam), k=k)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="710a6d4")
    ap.add_argument("--cases", default="regal:2000,gpt:2000,regal:5000,gpt:5000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-old", action="store_true")
    args = ap.parse_args()
    from jaxplace.multilevel.search import multilevel_search
    from jaxplace.search.request import SearchRequest
    from jaxplace.search.stop import StopRule

    old = None if args.skip_old else load_old(args.base)
    print("case | n | old cost | old wall_s | new cost | new wall_s | new evals | "
          "cycles | coarse evals | new/old", flush=True)
    for case in args.cases.split(","):
        p = problem(case)
        row = [case, str(p.n)]
        oc = None
        if old is not None:
            t0 = time.perf_counter()
            r = old(SearchRequest(p, args.seed, 1, StopRule()))
            oc = r.cost
            row += [f"{r.cost:.6g}", f"{time.perf_counter() - t0:.1f}"]
        else:
            row += ["-", "-"]
        t0 = time.perf_counter()
        r = multilevel_search(SearchRequest(p, args.seed, 1, StopRule()))
        wall = time.perf_counter() - t0
        row += [f"{r.cost:.6g}", f"{wall:.1f}", str(r.evaluations), str(r.info["cycles"]),
                str(r.info.get("coarse", {}).get("evaluations")),
                "-" if oc is None else f"{r.cost / oc:.4f}"]
        assert not r.interrupted
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
