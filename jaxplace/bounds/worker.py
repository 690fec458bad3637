"""One HiGHS solve in this process: a pickled (arrays, kwargs) on stdin, a pickled
result dict on stdout.

Started by bottleneck-guess as `python -m jaxplace.bounds.worker` with the parent's
interpreter (`sys.executable`), one process per solve, because HiGHS's thread count
is process-wide (see `jaxplace.highs.HighsScheduler`). Uses only `jaxplace.highs`
(numpy, highspy).
"""

from __future__ import annotations

import pickle
import sys

from jaxplace.highs import result_to_dict, solve_arrays


def main() -> None:
    arrays, kwargs = pickle.load(sys.stdin.buffer)
    res = solve_arrays(arrays, **kwargs)
    res.col_value = None  # keep the reply small
    sys.stdout.buffer.write(pickle.dumps(result_to_dict(res)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
