"""HiGHS option A/B on the bottleneck MIP (notes/bench_bounds.md): python notes/bottleneck_options.py OPTION=VALUE|default GRAPH K TIME_LIMIT"""
import sys, time
import jaxplace as jp
from jaxplace.generators import regal_set
from jaxplace.bounds import _highs
from jaxplace.bounds.bottleneck import bottleneck_bound
opt = sys.argv[1]; gi = int(sys.argv[2]); k = int(sys.argv[3]); tl = float(sys.argv[4])
orig = _highs._new_highs
def patched(**kw):
    h = orig(**kw)
    if opt != "default":
        name, val = opt.split("=")
        v = {"true": True, "false": False}.get(val, val)
        try: v = int(val)
        except ValueError:
            try: v = float(val)
            except ValueError: pass
        if val in ("on", "off", "choose"): v = val
        h.setOptionValue(name, v)
    return h
_highs._new_highs = patched
g = regal_set(3, seed=0)[gi]
p = jp.Problem(g, k)
L = jp.simple_lower_bound(p)
t = time.time()
res, _ = bottleneck_bound(p, time_limit=tl)
print(opt, gi, k, f"bound/L {res.bound / L:.4f} status {res.status} nodes {res.nodes} {time.time()-t:.1f}s", flush=True)
