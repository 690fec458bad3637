"""Same results before and after a refactor: the costs of `jp.search` (the default and
brkga at a fixed budget), `search_many` and `jp.certify`'s lower bound on fixed problems,
written as JSON to compare two checkouts.

    python experiments/same_results.py after.json
    git worktree add /tmp/at COMMIT && PYTHONPATH=/tmp/at python experiments/same_results.py before.json
    python -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); \
print({k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)})" before.json after.json
"""

import json
import sys

import jaxplace as jp
from jaxplace.generators import regal_set
from jaxplace.search.many import search_many


def main(path: str) -> None:
    out = {}
    problems = [jp.Problem(g, k=k) for g in regal_set(4, seed=11) for k in (2, 5, 8)]
    for i, p in enumerate(problems):
        out[f"brkga{i}"] = jp.search(p, "brkga", budget=1500, seed=3).cost
        r = jp.search(p, budget=1500, seed=3)
        out[f"default{i}"] = r.cost
        if i % 3 == 0:
            out[f"lb{i}"] = jp.certify(p, r.partition).lower_bound
    for i, r in enumerate(search_many(problems[:6], budget=1500, seed=5)):
        out[f"many{i}"] = r.cost
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
    print(f"{path}: {len(out)} figures")


if __name__ == "__main__":
    main(sys.argv[1])
