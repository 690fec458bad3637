"""Learned priority policy: a GNN proposes node priorities, trained by REINFORCE.

REGAL (Paliwal et al., ICLR 2020) and one-shot priority sampling (Jeon et al., ICLR
2023): a graph neural network maps a problem's scale-free features to a distribution
over priority vectors; Kahn + SliceGraph decode them. See `train` for the estimator
and `distribution` for the distribution;
`jaxplace.policy.train.train(config)` trains one from a recipe, `distributed` the same
data-parallel over processes and hosts, and `experts` holds search solutions of a
training pool to learn from (expert iteration).

    from jaxplace.policy import load_policy, node_distribution, sample_priorities
    pol = load_policy(problem=problem)  # the shipped policy for it (`routing`)
    dist = node_distribution(pol, problem)
    X = sample_priorities(dist, jax.random.key(0), 100)  # (100, n), pure JAX
"""

from jaxplace.policy.data import DataConfig, problem_set
from jaxplace.policy.distribution import greedy_priorities, sample_priorities
from jaxplace.policy.features import dfs_ranks
from jaxplace.policy.inference import (
    Policy,
    default_policy_path,
    load_policy,
    node_distribution,
    policy_from_model,
)
from jaxplace.policy.model import ModelConfig, PolicyModel
from jaxplace.policy.routing import (
    COLOCATION_POLICY,
    DEFAULT_POLICY,
    ORPHAN_POLICY,
    SHIPPED_POLICIES,
    anchor_value,
    default_policy_name,
)

__all__ = [
    "COLOCATION_POLICY",
    "DataConfig",
    "DEFAULT_POLICY",
    "ModelConfig",
    "ORPHAN_POLICY",
    "Policy",
    "PolicyModel",
    "SHIPPED_POLICIES",
    "anchor_value",
    "default_policy_name",
    "default_policy_path",
    "dfs_ranks",
    "greedy_priorities",
    "load_policy",
    "node_distribution",
    "policy_from_model",
    "problem_set",
    "sample_priorities",
]
