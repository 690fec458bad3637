"""The latency objective's results: the JSON (`FORMAT`: per op its device, start and
finish, per transfer its tensor, devices and times, the makespan and the bounds) and
the lines the CLI prints (`report_lines`)."""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.importers.provenance import original_groups, source_model
from jaxplace.objectives.latency.baselines import eft_greedy
from jaxplace.objectives.latency.instance import Schedule, Transfer
from jaxplace.objectives.latency.reference import critical_path
from jaxplace.objectives.latency.reference import lower_bound as closed_form_bound
from jaxplace.objectives.latency.search import ScheduledPartition
from jaxplace.objectives.latency._summary import device_summary, device_table
from jaxplace.partition import Partition

FORMAT = "jaxplace-latency-result/1"


def schedule_of(problem, found) -> Schedule:
    """The Schedule of a search Result, a Schedule, or a Partition / assignment (then
    `Objective.evaluate_partition`'s: the replay of the schedule it carries, else its
    earliest-start schedule)."""
    if isinstance(found, Schedule):
        return found
    sched = getattr(found, "schedule", None)
    if isinstance(sched, Schedule) and not isinstance(found, Partition):
        return sched  # a search Result's own schedule
    # a Partition, a reloaded one too: its schedule replayed (a file's start times may
    # not be a valid schedule; their replay is)
    part = getattr(found, "partition", found)  # an ndarray's is numpy's sort method
    part = found if callable(part) else part
    return problem.objective_impl.evaluate_partition(problem, part).schedule


def latency_result_dict(problem, found, *, method: str | None = None,
                        seed: int | None = None, timings: dict | None = None,
                        lower_bound: float | None = None, source: str | None = None,
                        extra: dict | None = None, source_file: str | None = None,
                        certificate=None, **_ignored) -> dict:
    """The JSON-ready result of a latency schedule (`found`: see `schedule_of`): per op
    its device (by name), start and finish (seconds), per transfer the tensor (index
    and producer), source and destination devices, start and finish, and the
    makespan."""
    schedule = schedule_of(problem, found)
    inst = problem.latency
    g, names = problem.graph, inst.device_names
    dev = np.asarray(schedule.device)
    ops = [{"id": g.node_ids[v], "device": names[dev[v]] if dev[v] >= 0 else None,
            "start": float(schedule.start[v]), "finish": float(schedule.finish[v])}
           for v in range(g.num_nodes)]
    transfers = [{"tensor": t.tensor, "producer": g.node_ids[int(g.tensor_producer[t.tensor])],
                  "bytes": float(inst.tensor_bytes[t.tensor]), "source": names[t.src],
                  "destination": names[t.dst], "start": t.start, "finish": t.finish}
                 for t in schedule.transfers]
    lb = closed_form_bound(inst) if lower_bound is None else float(lower_bound)
    out = {
        "format": FORMAT, "objective": "latency", "source": source,
        "cluster": problem.cluster.name, "num_nodes": g.num_nodes, "method": method,
        "seed": seed, "makespan": schedule.makespan, "lower_bound": lb,
        "ratio": schedule.makespan / lb if lb > 0 else None,
        "critical_path": critical_path(inst), "eft_makespan": eft_greedy(inst).makespan,
        "devices": device_summary(inst, schedule),
        "assignment": dev, "node_ids": list(g.node_ids), "ops": ops,
        "transfers": transfers, "timings": timings or {},
    }
    grouped = original_groups(g)
    if grouped is not None:  # a coarsened/fused import: every original op too
        out["original_ops"] = [{"name": name, "group": g.node_ids[i], **ops[i]}
                               for name, i in grouped]
        for entry in out["original_ops"]:
            del entry["id"]
    model = source_model(g, source_file, source)
    if model is not None:
        out["source_model"] = model
    if certificate is not None:
        out["certificate"] = (certificate.to_dict() if hasattr(certificate, "to_dict")
                              else certificate)
    out.update(extra or {})
    return out


def saved_partition(problem, data: dict, assignment, source: str):
    """The `ScheduledPartition` of a saved result (`latency_result_dict`): the device of
    every op with the saved starts of its ops and transfers, whose replay costs the
    saved makespan (`Latency.evaluate_partition`). A result without "ops" is the bare
    assignment; a malformed "ops" or "transfers" entry is a JaxplaceError naming it."""
    ops = data.get("ops")
    if ops is None:
        return assignment
    g, inst = problem.graph, problem.latency
    a = np.asarray(assignment, np.int64)
    if not isinstance(ops, list) or len(ops) != g.num_nodes:
        raise JaxplaceError(f"must list the {g.num_nodes} ops", source=source, field="ops")
    pos = {v: i for i, v in enumerate(g.node_ids)}
    start = np.full(g.num_nodes, np.nan)
    for j, op in enumerate(ops):
        s = op.get("start") if isinstance(op, dict) else None
        i = pos.get(op.get("id")) if isinstance(op, dict) else None
        if i is None or not _time(s):
            raise JaxplaceError("needs an op id of the graph and a finite start >= 0",
                                source=source, field=f"ops[{j}]")
        start[i] = float(s)
    names = list(inst.device_names)
    transfers = []
    for j, t in enumerate(data.get("transfers") or []):
        e = t.get("tensor") if isinstance(t, dict) else None
        ok = (isinstance(e, int) and not isinstance(e, bool) and 0 <= e < g.num_tensors
              and t.get("destination") in names and _time(t.get("start")))
        if not ok:
            raise JaxplaceError("needs a tensor index of the graph, a destination device "
                                "and a finite start >= 0", source=source,
                                field=f"transfers[{j}]")
        src = int(a[g.tensor_producer[e]])
        dst = names.index(t["destination"])
        s = float(t["start"])
        transfers.append(Transfer(e, src, dst, s, s + inst.transfer_time(e, src, dst)))
    n = g.num_nodes
    finish = start + inst.times[np.arange(n), a]
    order = np.lexsort((np.argsort(g.topo_order), start))
    sched = Schedule(a, start, finish, tuple(transfers))
    return ScheduledPartition(order, (), a, float(np.max(finish)), schedule=sched)


def _time(x) -> bool:
    return (isinstance(x, int | float) and not isinstance(x, bool) and np.isfinite(x)
            and x >= 0)


def report_lines(problem, found, certificate=None) -> list[str]:
    """The device table of the schedule (`found`: see `schedule_of`), the critical
    path (every op on its fastest device, free transfers) and the EFT greedy baseline
    for comparison, and the certificate's bound in milliseconds when there is one."""
    inst, sched = problem.latency, schedule_of(problem, found)
    eft, mk = eft_greedy(inst).makespan, sched.makespan
    lines = [device_table(inst, sched),
             f"critical path {critical_path(inst) * 1e3:.6g} ms   EFT greedy "
             f"{eft * 1e3:.6g} ms ({eft / mk:.3f}x)"]
    if certificate is not None:
        lb = certificate.lower_bound
        lines.append(f"certificate: lower bound {lb * 1e3:.6g} ms ({certificate.method})   "
                     f"makespan {mk * 1e3:.6g} ms   ratio "
                     + (f"{mk / lb:.4f}" if lb > 0 else "n/a"))
    return lines


__all__ = ["FORMAT", "latency_result_dict", "report_lines", "saved_partition",
           "schedule_of"]
