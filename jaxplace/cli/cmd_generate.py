"""`jaxplace generate FAMILY ...`: write a generated graph as networkx node-link JSON."""

from __future__ import annotations

import argparse

from jaxplace.cli.args import add_output_arg, check_output
from jaxplace.errors import JaxplaceError

# (flag, dest, type, help); a flag is passed to the generator only when given, and is
# an error for a family that has no such option.
_OPTIONS = (
    ("--n", "n", int, "regal: number of nodes (default: drawn in 50..200)"),
    ("--model", "model", str, "regal: random model (erdos_renyi, barabasi_albert, "
     "watts_strogatz, random_geometric, stochastic_block; default: drawn)"),
    ("--noise", "noise", str, "regal: 'local' (default) or 'global' work noise"),
    ("--param-mean", "param_mean", float, "regal: mean parameter size (default 0)"),
    ("--layers", "layers", int, "transformer: number of layers"),
    ("--d-model", "d_model", int, "transformer: model width"),
    ("--heads", "heads", int, "transformer: attention heads"),
    ("--seq", "seq", int, "transformer: sequence length"),
    ("--vocab", "vocab", int, "transformer: vocabulary size"),
    ("--ffn-mult", "ffn_mult", int, "transformer: MLP width / d_model"),
    ("--stages", "stages", None, "resnet: blocks per stage, e.g. 3,4,6,3"),
    ("--block", "block", str, "resnet: 'basic' or 'bottleneck'"),
    ("--modules", "modules", int, "inception: number of inception modules"),
    ("--depth", "depth", int, "unet: number of down/up levels"),
    ("--convs", "convs", int, "unet: convolutions per level"),
    ("--width", "width", int, "CNNs: base channel count"),
    ("--image", "image", int, "CNNs: input image side"),
    ("--classes", "classes", int, "CNNs: output classes"),
    ("--batch", "batch", int, "DNNs: batch size"),
    ("--jitter", "jitter", float, "DNNs: relative work jitter (default 0.1)"),
    ("--link-gbs", "link_gbs", float, "DNNs: inter-stage link bandwidth in GB/s "
     "(sets the size_out time units)"),
)


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


HELP = "generate a seeded graph (REGAL-like or DNN-like)"
DESCRIPTION = ("Generate a seeded, deterministic graph and write it as networkx node-link "
               "JSON (to stdout without -o).")


def add_arguments(p) -> None:
    from jaxplace.generators import GENERATORS  # only when this command is chosen

    p.add_argument("family", metavar="FAMILY", help=f"one of: {', '.join(GENERATORS)}")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    for flag, dest, typ, hlp in _OPTIONS:
        p.add_argument(flag, dest=dest, type=_int_list if dest == "stages" else typ,
                       default=None, help=hlp)
    p.add_argument("-k", type=int, default=None,
                   help="number of pipeline stages to record in the file")
    add_output_arg(p, "output JSON file (default: stdout)")


def run(args) -> int:
    from jaxplace.formats import nodelink_data, write_json
    from jaxplace.generators import generate, generator_options

    check_output(args.output)
    options = generator_options(args.family)  # raises on an unknown family
    kwargs = {}
    for flag, dest, _, _ in _OPTIONS:
        value = getattr(args, dest)
        if value is None:
            continue
        if dest not in options:
            raise JaxplaceError(f"option {flag} does not apply to family {args.family!r}")
        kwargs[dest] = value
    if args.k is not None and args.k < 1:
        raise JaxplaceError(f"must be at least 1, got {args.k}", field="-k")
    graph = generate(args.family, seed=args.seed, **kwargs)
    data = nodelink_data(graph, **({"k": args.k} if args.k is not None else {}))
    write_json(args.output if args.output else "-", data)
    return 0
