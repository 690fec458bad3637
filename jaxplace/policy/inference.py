"""Using a trained policy: load it, and turn a Problem into per-node distributions.

    pol = load_policy()                       # the shipped default (gnn-v3)
    pol = load_policy(problem=problem)        # the shipped policy for this problem
    dist = node_distribution(pol, problem)    # {"mean": (n,), "log_std": (n,)}
    X = sample_priorities(dist, key, 100)     # (100, n) in (0, 1), pure JAX
    x = greedy_priorities(dist)               # (n,) the mode
"""

from __future__ import annotations

from functools import cached_property, partial
from pathlib import Path

import jax
import numpy as np
from flax import nnx

from jaxplace.errors import JaxplaceError
from jaxplace.policy import _checkpoint as ck
from jaxplace.policy import features as F
from jaxplace.policy import _numpy_forward as numpy_forward
from jaxplace.policy.model import ModelConfig, pure_apply
from jaxplace.policy.routing import DEFAULT_POLICY, default_policy_name
from jaxplace.problem import Problem


class Policy:
    """A loaded policy: architecture (`config`), parameters (`params`, an
    `nnx.State`, with `graphdef` the model's structure) and metadata.

    A policy read from a file holds its checked weights as arrays and builds the flax
    model's State only when `params` or `graphdef` is first read (about a second: the
    model is built abstractly to get them); the NumPy forward pass that
    `node_distribution` runs needs neither, so loading a policy to search with costs
    the file read only."""

    def __init__(self, config: ModelConfig, params: nnx.State | None = None,
                 graphdef=None, meta: dict | None = None, path: str | None = None, *,
                 weights: dict | None = None):
        if params is None and weights is None:
            raise ValueError("a Policy needs params or weights")
        self.config = config
        self.meta = {} if meta is None else meta
        self.path = path
        self._weights = weights  # {name: float32 array} checked against config
        if params is not None:
            self.__dict__["params"] = params
        if graphdef is not None:
            self.__dict__["graphdef"] = graphdef

    def __repr__(self) -> str:
        return (f"Policy({self.meta.get('name', '?')!r}, hidden={self.config.hidden}, "
                f"layers={self.config.layers}, path={self.path!r})")

    @cached_property
    def params(self) -> nnx.State:
        return ck.state_from_flat(self.config, self._weights)

    @cached_property
    def graphdef(self):
        return ck.model_template(self.config)[0]

    @cached_property
    def numpy_weights(self) -> dict:
        """The parameters as flat float64 NumPy arrays, converted once per policy."""
        flat = self._weights
        if flat is None:
            flat = ck._flat(nnx.to_pure_dict(self.params))
        return numpy_forward.float64_weights(flat)


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
    cfg, flat, meta = ck.read_policy_weights(p)
    return Policy(cfg, meta=meta, path=str(p), weights=flat)


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
    float32 NumPy. Computed in NumPy (`jaxplace.policy._numpy_forward`: no XLA
    compile; equal to the jitted model to float32 rounding); a model with attention
    blocks runs jitted, its shapes padded to powers of two so that graphs of similar
    sizes share a compile (`Featurized.coarse_sizes`). `anchor` != 0 adds anchor x
    `dfs_ranks(problem)` to the means: the policy's distribution pulled toward the
    DFS order (used on graphs with free units, where that order alone beats the
    policy's mode), on top of the model's own
    `ModelConfig.dfs_anchor`."""
    if not isinstance(problem, Problem):
        raise JaxplaceError(f"expected a Problem, got {type(problem).__name__}",
                            field="problem")
    f = F.featurize(problem, anchor=bool(policy.config.dfs_anchor))
    n = problem.n
    if numpy_forward.supported(policy.config):
        mean, log_std = numpy_forward.forward(policy.config, policy.numpy_weights, f)
    else:
        mean, log_std = _forward(policy.graphdef, policy.params, F.pad(f, f.coarse_sizes))
    mean = np.asarray(mean, np.float32)[:n]
    if anchor:
        mean = (mean + anchor * F.dfs_ranks(problem)).astype(np.float32)
    return {"mean": mean, "log_std": np.asarray(log_std, np.float32)[:n]}
