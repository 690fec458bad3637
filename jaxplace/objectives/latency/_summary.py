"""Per-device figures of a schedule and their text table (CLI and result JSON)."""

from __future__ import annotations

import numpy as np

from jaxplace.objectives.latency.instance import LatencyInstance, Schedule


def device_summary(inst: LatencyInstance, s: Schedule) -> list[dict]:
    """One dict per device: name, ops, busy seconds, memory bytes, capacity, bytes
    sent and received."""
    dev = np.asarray(s.device)
    out = []
    for p, name in enumerate(inst.device_names):
        on = dev == p
        sent = sum(inst.tensor_bytes[t.tensor] for t in s.transfers if t.src == p)
        recv = sum(inst.tensor_bytes[t.tensor] for t in s.transfers if t.dst == p)
        out.append({"device": name, "ops": int(on.sum()),
                    "busy": float(inst.times[on, p].sum()) if on.any() else 0.0,
                    "memory": float(inst.memory[on].sum()),
                    "capacity": float(inst.capacity[p]),
                    "sent_bytes": float(sent), "received_bytes": float(recv)})
    return out


def device_table(inst: LatencyInstance, s: Schedule) -> str:
    """A text table of `device_summary` (times in ms, memory in GB)."""
    rows = device_summary(inst, s)
    mk = s.makespan
    w = max(6, *(len(r["device"]) for r in rows))
    lines = [f"{'device':<{w}}  {'ops':>6}  {'busy ms':>10}  {'util':>6}  "
             f"{'memory GB':>10}  {'of GB':>8}  {'sent MB':>9}  {'recv MB':>9}"]
    for r in rows:
        util = r["busy"] / mk if mk > 0 and np.isfinite(mk) else 0.0
        lines.append(f"{r['device']:<{w}}  {r['ops']:>6}  {r['busy'] * 1e3:>10.4g}  "
                     f"{util:>6.1%}  {r['memory'] / 1e9:>10.4g}  {r['capacity'] / 1e9:>8.4g}  "
                     f"{r['sent_bytes'] / 1e6:>9.4g}  {r['received_bytes'] / 1e6:>9.4g}")
    return "\n".join(lines)


__all__ = ["device_summary", "device_table"]
