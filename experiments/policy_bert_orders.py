"""Why the policies' samples cost 4.0 x L on bert_l-3_training while fixed orders are
optimal: each shipped policy's means and stds there, the cost of its greedy order and
of 1,000 samples, against uniform random orders, the node-index order and the DFS
order; and the same samples with their free units put next to their data
(`place_free_units`, as the default search's seeds).

    python experiments/policy_bert_orders.py [POLICY_DIR ...]
"""

import glob
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxplace as jp
from jaxplace.bench.workloads import default_folder  # $JAXPLACE_DATA/dnn-partitioning
from jaxplace.policy.distribution import sample_priorities
from jaxplace.policy.inference import default_policy_path, load_policy, node_distribution
from jaxplace.search.baselines import dfs_order, order_to_priorities, place_free_units

path = glob.glob(f"{default_folder()}/throughput/*/bert_l-3_training.json")[0]
p = jp.load_problem(path)
lb = jp.simple_lower_bound(p)
g, u = p.graph, p.graph.units
score = jax.jit(jp.Evaluator(p).score_fn())


def ratios(X):
    return np.asarray(score(jnp.asarray(np.asarray(X, np.float32)))) / lb


def free_placed(x):
    up = np.full(u.num_units, -np.inf)
    np.maximum.at(up, u.unit_of, np.asarray(x, np.float64))
    return np.asarray(place_free_units(g, up), np.float32)[u.unit_of]


def show(name, X):
    c, f = ratios(X), ratios(np.stack([free_placed(x) for x in X]))
    print(f"{name:28s} min {c.min():.4f} median {np.median(c):.4f} at 4.0: "
          f"{int(np.sum(c > 3.9999))}/{len(c)} | free units placed: min {f.min():.4f} "
          f"median {np.median(f):.4f}")


n = p.n
print(f"bert_l-3_training: n {n}, k {p.k}, cpus {p.cpus}, units {u.num_units}")
show("node index order", ((n - np.arange(n)) / n)[None])
show("DFS order", order_to_priorities(dfs_order(g))[None])
show("uniform random x1000", np.random.default_rng(0).random((1000, n)))
dirs = sys.argv[1:] or [str(default_policy_path(m)) for m in ("gnn-v3", "gnn-v3-train")]
for d in dirs:
    dist = node_distribution(load_policy(d), p)
    m = dist["mean"]
    print(f"{d}: means {m.min():.3f}..{m.max():.3f}, mean std "
          f"{np.exp(dist['log_std']).mean():.3f}")
    show("  greedy", np.asarray(jax.nn.sigmoid(m))[None])
    show("  samples x1000", np.asarray(sample_priorities(dist, jax.random.key(0), 1000)))
