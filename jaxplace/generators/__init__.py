"""Seeded, deterministic graph generators: REGAL-like random DAGs and DNN-like families."""

from jaxplace.generators.regal import MODELS, derive_seed, regal, regal_set

__all__ = ["MODELS", "derive_seed", "regal", "regal_set"]
