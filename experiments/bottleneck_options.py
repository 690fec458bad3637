"""HiGHS option A/B on the bottleneck MIP (experiments/bench_bounds.md).

    python experiments/bottleneck_options.py OPTION=VALUE|default GRAPH K TIME_LIMIT

GRAPH indexes regal_set(3, seed=0); prints the bound over the simple bound, the
status, the branch-and-bound nodes and the wall time.
"""

import sys
import time

import jaxplace as jp
from jaxplace import highs
from jaxplace.bounds.bottleneck import bottleneck_bound
from jaxplace.generators import regal_set


def _value(text):
    """An option value from the command line: bool, int, float or string."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main(opt: str, graph: int, k: int, time_limit: float) -> None:
    plain = highs.new_highs

    def with_option(**kw):
        h = plain(**kw)
        if opt != "default":
            name, val = opt.split("=")
            h.setOptionValue(name, _value(val))
        return h

    highs.new_highs = with_option  # a scratch A/B: the library keeps its defaults
    p = jp.Problem(regal_set(3, seed=0)[graph], k)
    L = jp.simple_lower_bound(p)
    t = time.time()
    res, _ = bottleneck_bound(p, time_limit=time_limit)
    print(opt, graph, k, f"bound/L {res.bound / L:.4f} status {res.status} "
          f"nodes {res.nodes} {time.time() - t:.1f}s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
