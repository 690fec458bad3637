"""Arguments shared by subcommands (input graph, problem parameters, model-file cost
model, outputs) and their checks. Everything here is light to import: building the
parser must not load JAX, HiGHS or networkx."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jaxplace.cmdline import check_output, positive_int, seconds  # noqa: F401 (the commands import them here)
from jaxplace.errors import JaxplaceError


def note(message: str) -> None:
    """A one-line remark on stderr (not an error)."""
    print(f"jaxplace: note: {message}", file=sys.stderr)


# -- argparse types -----------------------------------------------------------------

def settled(args: argparse.Namespace, **changes) -> argparse.Namespace:
    """A copy of the parsed arguments with some values settled (a default that depends
    on the input, say); the parsed arguments themselves are never changed."""
    return argparse.Namespace(**(vars(args) | changes))


# -- the input graph and the problem ------------------------------------------------

def add_input_args(p: argparse.ArgumentParser) -> None:
    """FILE / --example, -k and the cost parameters, plus the model-file flags."""
    p.add_argument("file", nargs="?", help="graph file: node-link JSON, NeurIPS 2020 JSON, "
                   "or .onnx")
    p.add_argument("--example", nargs="?", const="transformer", metavar="FAMILY",
                   help="use a built-in generated example instead of a file "
                   "(default: a small transformer)")
    p.add_argument("-k", type=int, default=None,
                   help="number of pipeline stages (default: from the file); at most the "
                   "number of placement units")
    p.add_argument("--bandwidth", type=float, default=None, help="inter-stage bandwidth B")
    p.add_argument("--memory", type=float, default=None,
                   help="overflow budget M: parameters beyond it cost (param - M) / B")
    p.add_argument("--capacity", type=float, default=None,
                   help="hard per-stage parameter limit")
    add_model_args(p)
    add_workload_args(p)


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """What a model config (Hugging Face config.json) is costed for."""
    g = p.add_argument_group("model configs (config.json): the workload costed")
    g.add_argument("--mode", choices=("training", "inference", "decode"), default=None,
                   help="training (default: forward + backward, weights, gradients, Adam "
                   "state and stashed activations resident), inference (prefill, KV "
                   "cache) or decode (one new token per sequence)")
    g.add_argument("--seq-len", type=positive_int, default=None, metavar="TOKENS",
                   help="tokens per sequence (default: the model's max positions, at "
                   "most 4096)")
    g.add_argument("--micro-batch", type=positive_int, default=None, metavar="SEQS",
                   help="sequences per micro-batch (default 1)")


#: (dest, flag) of the workload flags (`add_workload_args`).
_WORKLOAD_FLAGS = (("mode", "--mode"), ("seq_len", "--seq-len"),
                   ("micro_batch", "--micro-batch"))


def workload_options(args) -> dict:
    """The workload flags given, as `Workload` fields."""
    return {dest: getattr(args, dest) for dest, _ in _WORKLOAD_FLAGS
            if getattr(args, dest, None) is not None}


def workload_line(meta: dict) -> str | None:
    """One line naming the workload a model config's graph was costed for (None for
    other graphs)."""
    wl = meta.get("workload")
    if meta.get("format") != "hf-config" or not isinstance(wl, dict):
        return None
    held = {"training": "weights, gradients, Adam state and stashed activations",
            "inference": "weights and KV cache", "decode": "weights and KV cache"}
    return (f"workload: {wl['mode']}, sequence {wl['seq_len']} tokens, micro-batch "
            f"{wl['micro_batch']}, {wl['dtype']}, {wl['in_flight']} micro-batches in "
            f"flight; resident: {held.get(wl['mode'], '?')} (--mode, --seq-len, "
            "--micro-batch change it)")


def _device_names() -> list[str]:
    """Names in the device-profile data file, read without importing the importers
    (which load JAX); `get_device` is the authority when a name is checked."""
    import importlib.util
    import json

    try:
        spec = importlib.util.find_spec("jaxplace.importers")
        folder = Path(next(iter(spec.submodule_search_locations)))
        return [n for n in json.loads((folder / "devices.json").read_text())
                if not n.startswith("_")]
    except (OSError, ValueError, StopIteration, AttributeError):
        return []


def add_model_args(p: argparse.ArgumentParser, *, default_device: str | None = None) -> None:
    """The roofline cost-model flags for model files (.onnx), one set for every command."""
    g = p.add_argument_group("model files (.onnx): roofline cost model")
    names = ", ".join(_device_names())
    g.add_argument("--device", default=default_device,
                   help=f"device profile: {names} (default h100; `jaxplace import "
                   "--list-devices` describes them)")
    g.add_argument("--peak-tflops", type=float, metavar="TF",
                   help="override the matrix-unit peak, TFLOP/s (all dtypes)")
    g.add_argument("--mem-bw", type=float, metavar="GBS",
                   help="override the device-memory bandwidth, GB/s")
    g.add_argument("--link-bw", type=float, metavar="GBS",
                   help="override the stage-to-stage link bandwidth, GB/s")
    g.add_argument("--launch-us", type=float, metavar="US",
                   help="override the per-op launch overhead, microseconds")
    g.add_argument("--coarsen", nargs="?", const=True, default=False, type=coarsen_mode,
                   metavar="fusion",
                   help="fuse chains of cheap elementwise ops into their producer; "
                        "`--coarsen fusion`: MOIRAI's fusion rules (conv+bn+relu, "
                        "matmul+bias+act, elementwise chains; importers.fusion); results "
                        "map back to the original ops. Put the model file first or "
                        "write --coarsen=fusion")
    g.add_argument("--fusion", choices=("runtime", "none"), default=None,
                   help="runtime (default): cost the graph as an optimizing runtime "
                        "launches it (MatMul+bias -> Gemm, GELU -> Gelu, attention -> "
                        "Attention, Transpose/Split feeding matrix ops free; "
                        "importers.runtime_fusion); none: every ONNX op as exported")
    g.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a symbolic ONNX dimension, e.g. --dim batch=8 "
                        "(repeatable; others default to 1)")


COARSEN_MODES = ("fusion",)


def coarsen_mode(value: str) -> str:
    """The value of `--coarsen VALUE` (plain `--coarsen` is True)."""
    import argparse

    if value not in COARSEN_MODES:
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(COARSEN_MODES)} or no value, got {value!r} "
            "(put the model file before --coarsen)")
    return value


_MODEL_FLAGS = (("device", "--device"), ("peak_tflops", "--peak-tflops"),
                ("mem_bw", "--mem-bw"), ("link_bw", "--link-bw"),
                ("launch_us", "--launch-us"), ("coarsen", "--coarsen"), ("dim", "--dim"),
                ("fusion", "--fusion"))


def device_from_args(args):
    """The DeviceProfile selected by the `add_model_args` flags (h100 by default);
    an unknown name is a JaxplaceError listing the known ones."""
    from jaxplace.importers.devices import get_device

    return get_device(args.device or "h100", peak_tflops=args.peak_tflops,
                      mem_bw_gbs=args.mem_bw, link_bw_gbs=args.link_bw,
                      launch_us=args.launch_us)


def dims_from_args(args) -> dict[str, int]:
    out = {}
    for item in getattr(args, "dim", []) or []:
        name, sep, val = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = int(val)
            if out[name] <= 0:
                raise ValueError
        except ValueError:
            raise JaxplaceError(f"expected NAME=POSITIVE_INT, got {item!r}",
                                field="--dim") from None
    return out


def model_options(args) -> dict:
    """Keyword arguments of `load_model_file` from the model flags."""
    return {"device": device_from_args(args), "coarsen": args.coarsen,
            "fusion": getattr(args, "fusion", None) or "runtime",
            "dim_values": dims_from_args(args)}


def _is_model_file(path: str) -> bool:
    from jaxplace.formats import MODEL_SUFFIXES

    return Path(path).suffix.lower() in MODEL_SUFFIXES


def _refuse_python(source: str) -> None:
    """A Python file (or `file.py:Class`) is not a graph: say what takes a module."""
    if Path(source.split(":")[0] if ".py:" in source else source).suffix.lower() == ".py":
        raise JaxplaceError("a Python file is not a graph file; plan a PyTorch module in "
                            "Python with jaxplace.torch.plan_pipeline (docs/torch.md), or "
                            "export it with torch.onnx.export and partition the .onnx",
                            source=source)


def load_input(args, *, default_k: int | None = None):
    """(Problem, source name) from the FILE / --example arguments.

    k is capped at the number of placement units (more stages than units only adds
    empty ones), with a note on stderr. Model flags are checked for every input (an
    unknown --device is an error even for a JSON graph) and apply to model files.
    """
    from jaxplace.formats import load_graph, problem_from_graph

    if args.k is not None and args.k < 1:
        raise JaxplaceError(f"must be at least 1, got {args.k}", field="-k")
    given = [flag for dest, flag in _MODEL_FLAGS if getattr(args, dest, None)]
    options = model_options(args) if given else {}  # validates --device and the rest
    if args.example is not None:
        if args.file is not None:
            raise JaxplaceError("give a FILE or --example, not both")
        from jaxplace.generators import example

        graph = example(args.example)
        source = f"example:{args.example}"
    elif args.file is None:
        raise JaxplaceError("no input: give a graph FILE or --example")
    else:
        source = args.file
        _refuse_python(source)
        if _is_model_file(source):
            graph = load_graph(source, **(options or model_options(args)))
        else:
            graph = load_graph(source)
            if graph.meta.get("format") == "hf-config" and workload_options(args):
                graph = load_graph(source, **workload_options(args))
    if given and not (args.file and _is_model_file(args.file)):
        note(f"{', '.join(given)} only apply to model files (.onnx); ignored for {source}")
    wl_given = [flag for dest, flag in _WORKLOAD_FLAGS if getattr(args, dest, None)
                is not None]
    if wl_given and graph.meta.get("format") != "hf-config":
        note(f"ignored for {source}: {', '.join(wl_given)} (for model configs, "
             "config.json, only)")
    line = workload_line(graph.meta)
    if line is not None:
        print(line, file=sys.stderr)
    k = args.k
    if k is None and "k" not in graph.meta and "maxFPGAs" not in graph.meta:
        k = default_k
    problem = problem_from_graph(graph, k, source=source, bandwidth=args.bandwidth,
                                 memory=args.memory, capacity=args.capacity)
    units = problem.graph.units.num_units
    if problem.k > units:
        note(f"k={problem.k} exceeds the {units} placement units of {source}; using k={units}")
        problem = problem.replace(k=units)
    return problem, source


def add_problem_args(p: argparse.ArgumentParser) -> None:
    """`add_input_args` plus --cluster and --objective: the problem options that
    `partition` and `certify` share (`problem_from_args`)."""
    from jaxplace.objectives.registry import problem_objectives

    add_input_args(p)
    p.add_argument("--cluster", default=None, metavar="FILE_OR_EXAMPLE",
                   help="cluster file (devices, memory, links) or a shipped example: "
                   "moirai_inter, moirai_intra; k defaults to its device count")
    p.add_argument("--objective", choices=problem_objectives(), default=None,
                   help="throughput (default): pipeline stages, the bottleneck; latency: "
                   "the makespan of one inference on --cluster")


#: Fields of a `Problem` that the input and its flags set (errors name the input).
_PROBLEM_FIELDS = ("k", "bandwidth", "memory", "capacity", "cpus", "supported_on_accel",
                   "graph", "objective")


def problem_from_args(args):
    """(Problem, source name) of `add_problem_args`: the input's problem with --cluster
    and --objective applied; the objective the Problem resolves to checks (and
    refuses, naming the option) what it does not model."""
    cluster = None
    if args.cluster:
        from jaxplace.cluster import load_cluster

        cluster = load_cluster(args.cluster)
    base, source = load_input(args, default_k=1 if cluster is not None else None)
    if cluster is None and args.objective is None:
        return base, source
    # -k as load_input settled it (capped at the placement units); with a cluster and
    # no -k, k is the cluster's device count
    k = None if cluster is not None and args.k is None else base.k
    changes = {"k": k, "cluster": cluster}
    if cluster is not None and "device" in base.graph.meta and args.capacity is None:
        changes["capacity"] = None  # the import device's memory: the cluster's replace it
    if args.objective is not None:
        changes["objective"] = args.objective
    try:
        return base.replace(**changes), source
    except JaxplaceError as exc:  # a problem option of the input, else the cluster's
        mine = exc.field in _PROBLEM_FIELDS or not args.cluster
        raise exc.with_source(source if mine else args.cluster) from None


# -- outputs --------------------------------------------------------------------------

def add_output_arg(p: argparse.ArgumentParser, help: str) -> None:
    p.add_argument("-o", "--output", default=None, metavar="PATH",
                   help=help + " (written atomically: replaced only when complete)")


def add_quiet_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar (bars appear only when stderr is a terminal)")
