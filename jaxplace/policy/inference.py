"""Using a trained policy: load it, and turn a Problem into per-node distributions.

    pol = load_policy()                       # the shipped default (gnn-v3)
    pol = load_policy(problem=problem)        # the shipped policy for this problem
    dist = node_distribution(pol, problem)    # {"mean": (n,), "log_std": (n,)}
    X = sample_priorities(dist, key, 100)     # (100, n) in (0, 1), pure JAX
    x = greedy_priorities(dist)               # (n,) the mode
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import jax
import numpy as np
from flax import nnx

from jaxplace.errors import JaxplaceError
from jaxplace.policy import checkpoint as ck
from jaxplace.policy import features as F
from jaxplace.policy.model import ModelConfig, pure_apply
from jaxplace.policy.routing import DEFAULT_POLICY, default_policy_name
from jaxplace.problem import Problem


@dataclass(frozen=True, eq=False)
class Policy:
    """A loaded policy: architecture, parameters (an `nnx.State`), and metadata."""

    config: ModelConfig
    params: nnx.State
    graphdef: object = field(repr=False)
    meta: dict = field(default_factory=dict, repr=False)
    path: str | None = None

    def __repr__(self) -> str:
        return (f"Policy({self.meta.get('name', '?')!r}, hidden={self.config.hidden}, "
                f"layers={self.config.layers}, path={self.path!r})")


def default_policy_path(name: str = DEFAULT_POLICY) -> Path:
    """Where the shipped policy `name` lives: `jaxplace/policies/<name>`, package data
    of the installed package and of a source checkout alike."""
    return Path(__file__).resolve().parents[1] / "policies" / name


def load_policy(path: str | None = None, problem: Problem | None = None) -> Policy:
    """Load a policy directory; None: the shipped policy for `problem`
    (`jaxplace.policy.routing.default_policy_name`), DEFAULT_POLICY without one.
    Raises `JaxplaceError` naming the file when it is missing, truncated or of
    another architecture."""
    p = default_policy_path(default_policy_name(problem)) if path is None else Path(path)
    cfg, params, meta = ck.read_policy(p)
    graphdef, _ = ck.model_template(cfg)
    return Policy(cfg, params, graphdef, meta, str(p))


def policy_from_model(model, meta: dict | None = None) -> Policy:
    """A Policy around an in-memory `PolicyModel` (e.g. right after training)."""
    graphdef, params = nnx.split(model)
    return Policy(model.config, params, graphdef, meta or {}, None)


@partial(jax.jit, static_argnames=("graphdef",))
def _forward(graphdef, params, inputs):
    return pure_apply(graphdef)(params, inputs)


def node_distribution(policy: Policy, problem: Problem,
                      anchor: float = 0.0) -> dict[str, np.ndarray]:
    """Per-node Gaussian parameters for `problem`: {"mean", "log_std"}, each (n,)
    float32 NumPy. Shapes are padded to powers of two, so graphs of similar sizes
    share a compile (`Featurized.coarse_sizes`). `anchor` != 0 adds anchor x
    `dfs_ranks(problem)` to the means: the policy's distribution pulled toward the
    DFS order (used on graphs with free units, where that order alone beats the
    policy's mode), on top of the model's own
    `ModelConfig.dfs_anchor`."""
    if not isinstance(problem, Problem):
        raise JaxplaceError(f"expected a Problem, got {type(problem).__name__}",
                            field="problem")
    f = F.featurize(problem, anchor=bool(policy.config.dfs_anchor))
    inputs = F.pad(f, f.coarse_sizes)
    mean, log_std = _forward(policy.graphdef, policy.params, inputs)
    n = problem.n
    mean = np.asarray(mean, np.float32)[:n]
    if anchor:
        mean = (mean + anchor * F.dfs_ranks(problem)).astype(np.float32)
    return {"mean": mean, "log_std": np.asarray(log_std, np.float32)[:n]}
