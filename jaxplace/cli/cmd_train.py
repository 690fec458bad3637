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
    d = p.add_argument_group(
        "data-parallel over processes (jax.distributed; every process runs the same "
        "command, process 0 writes the run folder)")
    d.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="process 0's address (default $JAX_COORDINATOR_ADDRESS)")
    d.add_argument("--num-processes", default=None, metavar="N",
                   help="number of processes (default $JAX_NUM_PROCESSES)")
    d.add_argument("--process-id", default=None, metavar="I",
                   help="this process, 0 .. N-1 (default $JAX_PROCESS_ID)")


def run(args) -> int:
    import dataclasses

    from jaxplace.policy import distributed
    from jaxplace.policy.train import load_config, train

    cluster = distributed.cluster_from(args.coordinator, args.num_processes,
                                       args.process_id)
    cfg = load_config(args.config)
    if args.steps is not None:
        cfg = dataclasses.replace(cfg, steps=args.steps)
    if cluster is not None:  # before anything runs on JAX
        distributed.initialize(cluster)
    path = train(cfg, args.out, export=args.export,
                 progress=False if args.quiet else None, quiet=args.quiet)
    if cluster is None or cluster.process_id == 0:
        print(f"wrote {path}")
    else:
        print(f"process {cluster.process_id} of {cluster.num_processes}: done "
              "(process 0 writes the run folder and the policy)")
    return 0
