"""Run one HiGHS solve in a fresh process: a pickled (arrays, kwargs) on stdin, a pickled
result dict on stdout. Started as a script (not `-m`), so the jaxplace package (and
whatever it imports) is not loaded; only numpy and highspy.
"""

import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _highs import result_to_dict, solve_arrays  # noqa: E402


def main() -> None:
    arrays, kwargs = pickle.load(sys.stdin.buffer)
    res = solve_arrays(arrays, **kwargs)
    res.col_value = None  # keep the reply small
    sys.stdout.buffer.write(pickle.dumps(result_to_dict(res)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
