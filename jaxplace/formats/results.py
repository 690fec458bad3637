"""Result JSON: assignment, blocks with per-block costs, bottleneck, bound, provenance."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.exact.pieces import pipeline_cost
from jaxplace.importers.provenance import (  # noqa: F401 (model_provenance: export reads it here)
    model_provenance,
    original_groups,
    source_model,
)
from jaxplace.jsonio import read_json, write_json
from jaxplace.objectives.throughput.cost import evaluate_partition, simple_lower_bound
from jaxplace.partition import Partition
from jaxplace.problem import Problem

FORMAT = "jaxplace-result/1"


def result_dict(problem: Problem, partition, *, method: str | None = None,
                seed: int | None = None, timings: dict | None = None,
                lower_bound: float | None = None, certificate: Any = None,
                source: str | None = None, extra: dict | None = None,
                schedule: Any = None, source_file: str | None = None) -> dict:
    """The JSON-ready result for `partition` (a Partition or a block per node).

    Blocks are renumbered in a topological order of the quotient graph, so block 0 is
    the first pipeline stage. The costs are recomputed with `evaluate_partition`.
    With `schedule` (the `VirtualPieces` of a non-contiguous split) the split need not
    be contiguous: blocks are numbered by their first virtual piece, each block says
    how many pieces it has, and "virtual_pieces" lists the pieces in pipeline order.
    """
    g = problem.graph
    assignment = getattr(partition, "assignment", partition)
    if schedule is None:
        cost = evaluate_partition(problem, assignment)
    else:
        cost = pipeline_cost(problem, assignment, schedule)
    used = [int(b) for b in cost.block_order if np.any(cost.assignment == b)]
    # Pipeline order within each device type: accelerators 0.., CPUs from k on.
    renumber = cost.stage_ids()
    a = np.array([renumber[int(b)] for b in cost.assignment], dtype=np.int64)
    lb = simple_lower_bound(problem) if lower_bound is None else float(lower_bound)
    blocks = []
    for b in used:
        members = np.flatnonzero(cost.assignment == b)
        blocks.append({
            "block": renumber[b], "device": cost.device_types[b],
            "nodes": [g.node_ids[v] for v in members],
            "work": cost.work[b], "io_in": cost.io_in[b], "io_out": cost.io_out[b],
            "param": cost.param[b], "overflow": cost.overflow[b], "total": cost.total[b]})
    out = {
        "format": FORMAT, "source": source, "num_nodes": g.num_nodes, "k": problem.k,
        "cpus": problem.cpus, "bandwidth": problem.bandwidth, "memory": problem.memory,
        "capacity": problem.capacity, "method": method, "seed": seed,
        "bottleneck": cost.bottleneck, "lower_bound": lb,
        "ratio": cost.bottleneck / lb if lb > 0 else None,
        "assignment": a, "node_ids": list(g.node_ids), "blocks": blocks,
        "timings": timings or {},
    }
    order = getattr(partition, "order", None)
    if order is not None:
        out["order"] = [g.node_ids[v] for v in order]
    grouped = original_groups(g)
    if grouped is not None:  # a coarsened/fused import: the block of every original op
        out["original_ops"] = [{"name": name, "group": g.node_ids[i], "block": int(a[i])}
                               for name, i in grouped]
    if certificate is not None:
        out["certificate"] = certificate.to_dict() if hasattr(certificate, "to_dict") \
            else certificate
    if schedule is not None:
        per = schedule.per_device(problem.num_blocks)
        for b, entry in zip(used, blocks, strict=True):
            entry["pieces"] = int(per[b])
        out["contiguous"] = False
        out["virtual_pieces"] = schedule.to_dict(problem, renumber)
    model = source_model(g, source_file, source)
    if model is not None:
        out["source_model"] = model
    out.update(extra or {})
    return out


def save_result(path: str | os.PathLike, problem: Problem, partition, **kwargs) -> dict:
    """Write the result JSON atomically; returns the dict written. The problem's
    objective writes it (`Objective.result_dict`), from a search `Result`, a
    `Partition` or a block per node (`jaxplace.objectives.latency._result` for latency)."""
    return write_result(path, problem.objective_impl.result_dict(problem, partition,
                                                                 **kwargs))


#: What every result JSON holds: `export` and `certify --partition` read it.
RESULT_FIELDS = ("format", "method", "assignment", "lower_bound")


def write_result(path: str | os.PathLike, data: dict) -> dict:
    """Write a result dict atomically; returns it. The one writer of results:
    `save_result` (a Problem's objective builds the dict) and the modes with their own
    cost model (a model config split over a cluster) both write through it."""
    missing = [k for k in RESULT_FIELDS if k not in data]
    if missing:
        raise JaxplaceError(f"a result needs {', '.join(missing)}", field="result")
    write_json(path, data)
    return data


def load_assignment(path: str | os.PathLike, problem: Problem):
    """The block of every node of `problem` from a result JSON (matched by node id):
    an (n,) int64 array, or a `Partition` with its stage devices for a stage plan on
    unequal devices. A result another objective wrote (its `format`) is refused."""
    source = str(path)
    data = read_json(source)
    if not isinstance(data, dict) or not ("assignment" in data or "fpgas" in data):
        raise JaxplaceError("missing field 'assignment' (or 'fpgas' of a dnn-partitioning "
                            "split)", source=source)
    obj = problem.objective_impl
    fmt = data.get("format")
    if isinstance(fmt, str) and fmt != obj.result_format:
        raise JaxplaceError(f"is a {fmt} result; the problem is {obj.label}, whose "
                            f"results are {obj.result_format}", source=source,
                            field="format")
    from jaxplace.formats.neurips import is_neurips_result, read_neurips_result

    if is_neurips_result(data):
        a = read_neurips_result(data, problem, source)
        try:
            evaluate_partition(problem, a)
        except JaxplaceError as exc:
            raise exc.with_source(source) from None
        return a
    a = data["assignment"]
    g = problem.graph
    if not isinstance(a, list) or len(a) != g.num_nodes:
        raise JaxplaceError(f"has {len(a) if isinstance(a, list) else '?'} entries for "
                            f"{g.num_nodes} nodes", source=source, field="assignment")
    ids = data.get("node_ids")
    if ids is not None:
        pos = {v: i for i, v in enumerate(ids)}
        missing = [v for v in g.node_ids if v not in pos]
        if missing or len(ids) != g.num_nodes:
            raise JaxplaceError(f"node ids do not match the graph (e.g. {missing[:1]})",
                                source=source, field="node_ids")
        a = [a[pos[v]] for v in g.node_ids]
    bad = [b for b in a if isinstance(b, bool) or not isinstance(b, int | float)
           or not float(b).is_integer()]
    if bad:
        raise JaxplaceError(f"not integer blocks (e.g. {bad[0]!r})", source=source,
                            field="assignment")
    arr = _cpu_blocks_renumbered(problem, data, np.asarray(a, dtype=np.int64))
    part = arr
    if "stage_devices" in data:  # a stage plan: which device runs each stage
        part = _staged(problem, data, arr, source)
    # an objective whose results carry more than the assignment (latency: the saved
    # event order) rebuilds the partition they stand for, so it reloads at its cost
    loaded = getattr(obj, "loaded_partition", None)
    if loaded is not None:
        part = loaded(problem, data, part, source)
    try:
        evaluate_partition(problem, part,
                           contiguous=data.get("contiguous", True) is not False)
    except JaxplaceError as exc:
        raise exc.with_source(source) from None
    return part


def _cpu_blocks_renumbered(problem: Problem, data: dict, a: np.ndarray) -> np.ndarray:
    """Blocks of a result saved under another k, in `problem`'s numbering: a result
    numbers its CPU blocks from its own k (the CLI caps k at the placement units), so
    CPU block `saved_k + i` is `problem.k + i` here."""
    k0, c0 = data.get("k"), data.get("cpus")
    if not (_count(k0) and _count(c0)) or c0 == 0 or k0 == problem.k:
        return a
    out = a.copy()
    cpu = a >= k0
    out[cpu] = problem.k + (a[cpu] - k0)
    return out


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


#: Problem fields a result records, and the command-line flag that sets each.
SAVED_FIELDS = {"k": "-k", "cpus": None, "bandwidth": "--bandwidth",
                "memory": "--memory", "capacity": "--capacity"}


def saved_fields(path: str | os.PathLike) -> dict:
    """The `SAVED_FIELDS` a result file records (those it has)."""
    data = read_json(str(path))
    return {f: data[f] for f in SAVED_FIELDS if f in data} if isinstance(data, dict) \
        else {}


def saved_problem(path: str | os.PathLike, problem: Problem,
                  given: tuple[str, ...] = ()) -> Problem:
    """`problem` with the fields its result file records (`SAVED_FIELDS`): a partition
    is costed and certified under the problem it was saved with. A field named in
    `given` (set explicitly, e.g. on the command line) that the file records with
    another value is a one-line JaxplaceError naming both. Problems on a cluster take
    their fields from the cluster and are returned as they are."""
    source = str(path)
    data = saved_fields(source)
    if problem.cluster is not None:
        return problem
    changes = {}
    for name, flag in SAVED_FIELDS.items():
        if name not in data:
            continue
        saved, now = data[name], getattr(problem, name)
        if saved == now or (isinstance(saved, int | float) and isinstance(now, int | float)
                            and not isinstance(saved, bool) and float(saved) == now):
            continue
        if name in given:
            raise JaxplaceError(f"the partition was saved with {name} = {saved}, but "
                                f"{flag or name} asks {now}: drop {flag or name} or "
                                "partition again", source=source, field=name)
        changes[name] = saved
    if not changes:
        return problem
    try:
        return problem.replace(**changes)
    except JaxplaceError as exc:
        raise exc.with_source(source) from None


def _staged(problem: Problem, data: dict, a: np.ndarray, source: str):
    """The `Partition` of stage plan `a` with the devices `stage_devices` names."""
    names = list(getattr(problem.instance, "device_names", ()) or ())
    stage_devices = data["stage_devices"]
    if not isinstance(stage_devices, list) or any(d not in names for d in stage_devices):
        raise JaxplaceError(f"names devices the cluster lacks (it has {', '.join(names)})",
                            source=source, field="stage_devices")
    order = problem.graph.topo_order
    return Partition(order, (), a, math.nan,
                     devices=tuple(names.index(d) for d in stage_devices))
