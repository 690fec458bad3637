"""The latency objective's results: the JSON (`FORMAT`: per op its device, start and
finish, per transfer its tensor, devices and times, the makespan and the bounds) and
the lines the CLI prints (`report_lines`)."""

from __future__ import annotations

import numpy as np

from jaxplace.importers.provenance import original_groups, source_model
from jaxplace.latency.baselines import eft_greedy
from jaxplace.latency.instance import Schedule
from jaxplace.latency.reference import critical_path
from jaxplace.latency.reference import lower_bound as closed_form_bound
from jaxplace.latency.summary import device_summary, device_table

FORMAT = "jaxplace-latency-result/1"


def schedule_of(problem, found) -> Schedule:
    """The Schedule of a search Result, a Schedule, or a Partition / assignment (then
    its earliest-start schedule, `Objective.evaluate_partition`)."""
    if isinstance(found, Schedule):
        return found
    sched = getattr(found, "schedule", None)
    if isinstance(sched, Schedule):
        return sched
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


__all__ = ["FORMAT", "latency_result_dict", "report_lines", "schedule_of"]
