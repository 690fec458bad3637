"""Recipe of the policy `policies/gnn-v1` (see its MODEL_CARD.md).

    python training/policy_regal.py            # = the command below
    python -m jaxplace.policy.train training/policy_regal.json \
        --out runs/gnn-v1 --export policies/gnn-v1

Trains from scratch (or resumes runs/gnn-v1 from its last checkpoint) with the
hyperparameters and seed in policy_regal.json, then writes the weights, config.json
and metrics.jsonl to policies/gnn-v1. Deterministic under the seed on one machine.
"""

from pathlib import Path

from jaxplace.policy.train import main

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    root = HERE.parent
    raise SystemExit(main([str(HERE / "policy_regal.json"), "--out",
                           str(root / "runs" / "gnn-v1"), "--export",
                           str(root / "policies" / "gnn-v1")]))
