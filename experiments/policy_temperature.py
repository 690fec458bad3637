"""The policy's sampling temperature: every log_std + log(T), the mode unchanged
(probe for issue 12; experiments/policy_temperature.md). Runs the policy bench with the
distribution patched, printing its usual log (compare logs with experiments/bench_cmp.py).

    python experiments/policy_temperature.py T [jaxplace bench policy arguments ...]
"""
import math
import sys

import jaxplace.search.policy as sp
from jaxplace.cli.main import main

T = float(sys.argv[1])
_padded = sp.padded_distribution


def tempered(req, policy, anchor=0.0):
    d = dict(_padded(req, policy, anchor))
    d["log_std"] = d["log_std"] + math.log(T)
    return d


sp.padded_distribution = tempered
sys.exit(main(["bench", "policy", *sys.argv[2:]]))
