"""Session 25 (issue 51, H1): the warm cost of jp.search's wider k rows, on the k = 8
graphs of the regal-time suite (the only ones whose program K_ROWS_FLOOR changes).

    JAXPLACE_CACHE_DIR= PYTHONPATH=<tree> nice python experiments/programs_s25_warm.py

Runs the bench's pass (`jaxplace.bench.search_time._pass`, jp.search per graph, seed
0 + i) twice in one process and prints each pass's wall and process CPU seconds (XLA's
and the search's threads included) and the costs; run it in a worktree of each
variant, back to back.
"""

from __future__ import annotations

import time

import jaxplace as jp
from jaxplace.bench.search_time import _pass, instances


def main() -> None:
    problems = [(i, jp.Problem(g, k)) for i, g, k in instances(30, [4, 8, 16], 0) if k == 8]
    for name in ("cold", "warm"):
        c0 = time.process_time()
        costs, _, wall = _pass(problems, "default", 0)
        print(f"{name}: {len(problems)} graphs, wall {wall:.1f} s, CPU "
              f"{time.process_time() - c0:.1f} s, costs {[round(c, 4) for c in costs]}",
              flush=True)


if __name__ == "__main__":
    main()
