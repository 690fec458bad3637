"""The per-rank action orders of the pipeline schedules torch.distributed.pipelining
runs, computed without torch.

Each order is a list per rank of (kind, stage, microbatch): kind "F" (forward), "B"
(backward; under the zero-bubble schedules only the input-gradient part, torch's "I")
and "W" (weight gradient). The constructions follow torch's own
(`torch.distributed.pipelining.schedules`: `ScheduleGPipe`, `Schedule1F1B`,
`ScheduleInterleaved1F1B`, `ScheduleInterleavedZeroBubble`, `ScheduleZBVZeroBubble`)
with the idle slots and the gradient reductions left out, so a simulated timeline runs
the actions in the order torch does; tests compare them with torch's.

Schedules: GPipe (Huang et al. 2019), 1F1B (PipeDream-Flush, Narayanan et al. 2021),
interleaved 1F1B (Narayanan et al. 2021, v chunks per rank, stage s on rank s mod p),
zero bubble ZB-H1 / ZB1P (Qi et al. 2024, `zero-bubble`: backward split into B and W)
and its V-shaped variant (`zbv`: two chunks per rank, stage s and 2p - 1 - s on rank s).
"""

from __future__ import annotations

from collections import defaultdict

from jaxplace.errors import JaxplaceError

Action = tuple[str, int, int]  # (kind, global stage, microbatch)

#: schedule name -> (torch class name, chunks per rank: None for any, else the number)
SCHEDULES: dict[str, tuple[str, int | None]] = {
    "gpipe": ("ScheduleGPipe", 1),
    "1f1b": ("Schedule1F1B", 1),
    "interleaved-1f1b": ("ScheduleInterleaved1F1B", None),
    "zero-bubble": ("ScheduleInterleavedZeroBubble", None),
    "zbv": ("ScheduleZBVZeroBubble", 2),
}

#: schedules whose backward is split into B (input gradient) and W (weight gradient)
SPLIT_BACKWARD = frozenset({"zero-bubble", "zbv"})


def check_schedule(schedule: str, p: int, n_virtual: int, m: int) -> None:
    """A one-line error for a schedule name, rank count, chunk count or microbatch
    count that torch's schedule refuses or that has no meaning."""
    if schedule not in SCHEDULES:
        raise JaxplaceError(f"unknown schedule {schedule!r}; known: "
                            f"{', '.join(SCHEDULES)}", field="schedule")
    if int(p) < 1:
        raise JaxplaceError("must be at least 1", field="ranks")
    if int(m) < 1 or int(m) != m:
        raise JaxplaceError(f"must be a positive integer, not {m!r}", field="n_microbatches")
    need = SCHEDULES[schedule][1]
    if need is not None and n_virtual != need:
        raise JaxplaceError(f"schedule {schedule!r} runs {need} chunk(s) per rank, not "
                            f"{n_virtual}", field="n_virtual")
    if int(n_virtual) < 1:
        raise JaxplaceError("must be at least 1", field="n_virtual")
    if schedule == "1f1b" and m < p:
        raise JaxplaceError(f"1F1B needs at least as many microbatches as stages "
                            f"({m} < {p})", field="n_microbatches")
    if schedule in ("interleaved-1f1b", "zero-bubble"):
        rounds = max(1, m // p)
        if m % rounds:
            raise JaxplaceError(f"{m} microbatches are not a multiple of the {rounds} "
                                f"rounds the schedule runs over {p} ranks",
                                field="n_microbatches")


def stage_rank(schedule: str, p: int, n_virtual: int) -> list[int]:
    """(p * n_virtual,) rank of each global stage: looped (s mod p) or, for `zbv`,
    V-shaped (stage s and 2p - 1 - s on rank s)."""
    if schedule == "zbv":
        return [s if s < p else 2 * p - 1 - s for s in range(2 * p)]
    return [s % p for s in range(p * n_virtual)]


def pipeline_order(schedule: str, p: int, m: int, n_virtual: int = 1) -> list[list[Action]]:
    """Per rank, the compute actions in the order the schedule runs them."""
    check_schedule(schedule, p, n_virtual, m)
    if schedule == "gpipe":
        return [[("F", r, j) for j in range(m)] + [("B", r, j) for j in range(m)]
                for r in range(p)]
    if schedule == "1f1b":
        return [_one_f_one_b(r, p, m) for r in range(p)]
    if schedule == "zbv":
        return [_zbv(r, p, m) for r in range(p)]
    return [_interleaved(r, p, m, n_virtual, schedule == "zero-bubble") for r in range(p)]


def _one_f_one_b(r: int, p: int, m: int) -> list[Action]:
    warm = min(p - 1 - r, m)
    out = [("F", r, j) for j in range(warm)]
    for j in range(m - warm):
        out += [("F", r, warm + j), ("B", r, j)]
    return out + [("B", r, j) for j in range(m - warm, m)]


def _interleaved(r: int, p: int, m: int, v: int, zero_bubble: bool) -> list[Action]:
    """torch's `_get_1f1b_rank_ops` with its warm-up count (`_get_warmup_ops`)."""
    rounds = max(1, m // p)
    per_round = m // rounds
    warm = min((v - 1) * per_round + (1 if zero_bubble else 2) * (p - 1 - r), m * v)
    total = m * v
    steady = total - warm

    def fwd_stage(op: int) -> int:
        return ((op // per_round) % v) * p + r

    def bwd_stage(op: int) -> int:
        return (v - 1 - ((op - warm) // per_round) % v) * p + r

    nf: dict[int, int] = defaultdict(int)
    nb: dict[int, int] = defaultdict(int)
    nw: dict[int, int] = defaultdict(int)
    out: list[Action] = []
    b_ops: list[int] = []

    def take(counter: dict[int, int], stage: int) -> int:
        counter[stage] += 1
        return counter[stage] - 1

    def weight(op_index: int) -> None:
        s = bwd_stage(b_ops[op_index])
        out.append(("W", s, take(nw, s)))

    n_w = 0
    for op in range(warm + steady + warm):
        if op < warm:
            s = fwd_stage(op)
            out.append(("F", s, take(nf, s)))
            continue
        if op < warm + steady:
            s = fwd_stage(op)
            out.append(("F", s, take(nf, s)))
        s = bwd_stage(op)
        out.append(("B", s, take(nb, s)))
        b_ops.append(op)
        # ZB1P: rank r delays its first W by r backward ops, then one W per B
        if zero_bubble and op - warm >= r:
            weight(n_w)
            n_w += 1
    while zero_bubble and n_w < len(b_ops):
        weight(n_w)
        n_w += 1
    return out


def _zbv(r: int, p: int, m: int) -> list[Action]:
    """torch's `ScheduleZBVZeroBubble._calculate_single_rank_operations`."""
    n = max(2 * p - 1, m)  # torch pads to a full V and drops the extra microbatches
    c0, c1 = r, 2 * p - 1 - r
    cnt = {"f0": 0, "f1": 0, "b0": 0, "b1": 0}
    out: list[Action] = []

    def act(kind: str, stage: int, key: str | None, j: int | None = None) -> None:
        if key is not None:
            j = cnt[key]
            cnt[key] += 1
        out.append((kind, stage, j))

    for _ in range(2 * (p - r) - 1):
        act("F", c0, "f0")
    for _ in range(r):
        act("F", c1, "f1")
        act("F", c0, "f0")
    for _ in range(p - r):
        act("F", c1, "f1")
        act("B", c1, None, cnt["b1"])
        act("W", c1, "b1")
    while cnt["f1"] < cnt["f0"] or cnt["f0"] < n:
        if cnt["f0"] < n:
            act("F", c0, "f0")
        act("B", c0, None, cnt["b0"])
        act("W", c0, "b0")
        act("F", c1, "f1")
        act("B", c1, None, cnt["b1"])
        act("W", c1, "b1")
    w0, w1 = cnt["b0"], cnt["b1"]
    for _ in range(r):
        act("B", c0, "b0")
        act("B", c1, "b1")
    for _ in range(p - r):
        act("B", c0, "b0")
        out.append(("W", c0, w0))
        w0 += 1
    out += [("W", c1, j) for j in range(w1, cnt["b1"])]
    out += [("W", c0, j) for j in range(w0, cnt["b0"])]
    return [a for a in out if a[2] < m]

