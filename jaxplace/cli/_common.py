"""Arguments shared by subcommands: the input graph and the problem parameters."""

from __future__ import annotations

import argparse

from jaxplace.errors import JaxplaceError


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def add_input_args(p: argparse.ArgumentParser, *, need_k: bool = True) -> None:
    p.add_argument("file", nargs="?", help="graph file: node-link JSON, NeurIPS 2020 JSON, "
                   "or .onnx")
    p.add_argument("--example", nargs="?", const="transformer", metavar="FAMILY",
                   help="use a built-in generated example instead of a file "
                   "(default: a small transformer)")
    p.add_argument("-k", type=int, default=None,
                   help="number of pipeline stages (default: from the file)")
    p.add_argument("--bandwidth", type=float, default=None, help="inter-stage bandwidth B")
    p.add_argument("--memory", type=float, default=None,
                   help="overflow budget M: parameters beyond it cost (param - M) / B")
    p.add_argument("--capacity", type=float, default=None,
                   help="hard per-stage parameter limit")
    p.add_argument("--device", default=None, help="device profile for model files (.onnx)")


def load_input(args, *, default_k: int | None = None):
    """(Problem, source name) from the FILE / --example arguments."""
    from jaxplace.formats import load_graph, problem_from_graph

    if args.k is not None and args.k < 1:
        raise JaxplaceError(f"must be at least 1, got {args.k}", field="-k")
    if args.example is not None:
        if args.file is not None:
            raise JaxplaceError("give a FILE or --example, not both")
        from jaxplace.generators import example

        graph = example(args.example)
        source = f"example:{args.example}"
    elif args.file is None:
        raise JaxplaceError("no input: give a graph FILE or --example")
    else:
        opts = {"device": args.device} if args.device else {}
        graph = load_graph(args.file, **opts)
        source = args.file
    k = args.k
    if k is None and "k" not in graph.meta and "maxFPGAs" not in graph.meta:
        k = default_k
    problem = problem_from_graph(graph, k, source=source, bandwidth=args.bandwidth,
                                 memory=args.memory, capacity=args.capacity)
    return problem, source
