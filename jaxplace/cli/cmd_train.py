"""`jaxplace train CONFIG`: train (or resume) a priority policy from a JSON recipe."""

from __future__ import annotations

from jaxplace.cli.args import positive_int

HELP = "train a learned priority policy from a recipe (training/*.json)"
DESCRIPTION = ("Train a GNN priority policy by REINFORCE against the batched decoder. "
               "An existing run folder is resumed from its last checkpoint; metrics go "
               "to <out>/metrics.jsonl; Ctrl-C saves a checkpoint.")


def add_arguments(p) -> None:
    p.add_argument("config", help="training recipe (JSON), e.g. training/policy_regal.json")
    p.add_argument("--out", default=None, help="run folder (default runs/<name>)")
    p.add_argument("--export", default=None,
                   help="policy folder to write at the end (default <out>/policy)")
    p.add_argument("--steps", type=positive_int, default=None,
                   help="override the recipe's step count")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def run(args) -> int:
    import dataclasses

    from jaxplace.policy.train import load_config, train

    cfg = load_config(args.config)
    if args.steps is not None:
        cfg = dataclasses.replace(cfg, steps=args.steps)
    path = train(cfg, args.out, export=args.export,
                 progress=False if args.quiet else None, quiet=args.quiet)
    print(f"wrote {path}")
    return 0
