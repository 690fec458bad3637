"""The plain reference a schedule simulation is checked against: every action's start
as the longest path through its constraints, found by relaxing all of them until none
moves (Bellman-Ford on a DAG; slow, obviously right).

Constraints of action a (in its rank's order after action q):
start(a) >= end(q) + send after q; start(a) >= end(d) + send of d's boundary, for each
input d of a (F from the previous stage, B from the next, W from its own B).
"""

from __future__ import annotations

from jaxplace.errors import JaxplaceError
from jaxplace.pipeline.schedule import (
    ScheduleEvent,
    ScheduleTimeline,
    action_time,
    dependencies,
    send_after,
    stage_costs,
    timeline,
)
from jaxplace.pipeline.schedule_orders import pipeline_order, stage_rank


def reference_schedule(schedule: str, fwd, bwd, n_microbatches: int, *, send=0.0,
                       n_virtual: int = 1, weight=None) -> ScheduleTimeline:
    """`simulate_schedule`'s timeline, computed by fixed-point relaxation."""
    n_stages = len(fwd)
    p = n_stages // n_virtual
    order = pipeline_order(schedule, p, n_microbatches, n_virtual)
    costs = stage_costs(schedule, fwd, bwd, n_stages, send=send, weight=weight)
    where = stage_rank(schedule, p, n_virtual)
    acts = [(r, a) for r, rank_acts in enumerate(order) for a in rank_acts]
    start = {a: 0.0 for _, a in acts}

    def send_of(a, boundary):
        return 0.0 if boundary is None else float(costs.send[boundary])

    def ready(a):  # when a's output has left its rank
        b = send_after(a, n_stages, where)
        return start[a] + action_time(a, costs) + send_of(a, b)

    for _ in range(len(acts) + 1):
        changed = False
        for r, a in acts:
            i = order[r].index(a)
            lows = [ready(order[r][i - 1])] if i else []
            for d, b in dependencies(a, n_stages, where):
                lows.append(start[d] + action_time(d, costs) + send_of(d, b))
            low = max(lows, default=0.0)
            if low > start[a]:
                start[a] = low
                changed = True
        if not changed:
            break
    else:
        raise JaxplaceError("the schedule's order has a cycle", field="schedule")
    events = []
    for r, a in acts:
        end = start[a] + action_time(a, costs)
        events.append(ScheduleEvent(r, a[1], a[2], a[0], start[a], end))
        b = send_after(a, n_stages, where)
        if b is not None:
            events.append(ScheduleEvent(r, a[1], a[2], "SEND_" + a[0], end,
                                        end + send_of(a, b)))
    return timeline(schedule, order, events, where)
