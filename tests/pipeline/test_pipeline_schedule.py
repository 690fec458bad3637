"""The schedule simulator: its action orders are torch.distributed.pipelining's, its
timelines the plain relaxation's, its bubbles the schedules' closed forms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from jaxplace.errors import JaxplaceError
from jaxplace.pipeline.schedule import simulate_schedule
from jaxplace.pipeline.schedule_orders import pipeline_order
from jaxplace.pipeline._schedule_reference import reference_schedule

RANKS = range(2, 9)
CHUNKS = {"gpipe": (1,), "1f1b": (1,), "interleaved-1f1b": (1, 2, 3),
          "zero-bubble": (1, 2), "zbv": (2,)}


def _valid(schedule, p, m):
    rounds = max(1, m // p)
    if schedule == "1f1b" and m < p:
        return False
    return not (schedule in ("interleaved-1f1b", "zero-bubble") and m % rounds)


# --- torch's own orders -------------------------------------------------------------

class _RecordingStage:
    """Stands in for a PipelineStage: no communication, records each compute call."""

    def __init__(self, index, n, log):
        self.stage_index, self.num_stages, self.log = index, n, log
        self.is_first, self.is_last = index == 0, index == n - 1

    def __getattr__(self, name):
        if name.startswith("get_"):
            return lambda *a, **k: []
        return lambda *a, **k: None

    def forward_one_chunk(self, i, *a, **k):
        self.log.append(("F", self.stage_index, i))

    def backward_one_chunk(self, i, **k):
        self.log.append(("B", self.stage_index, i))


def _torch_executed(cls, p, m, rank):
    """The compute calls the single-stage schedule's own step makes on `rank`."""
    log = []
    sched = cls(_RecordingStage(rank, p, log), m, loss_fn=lambda out, tgt: 0)
    sched._initialize_stage = lambda *a, **k: None
    sched._step_microbatches([()] * m, [{}] * m, [None] * m, None)
    return log


def _torch_multi_order(cls, p, m, v, zero_bubble_bubbles=False):
    """The multi-stage schedule's `pipeline_order` (what its runtime executes), built by
    torch's own per-rank construction without a process group."""
    sched = object.__new__(cls)
    sched.pp_group_size, sched._n_microbatches, sched.n_local_stages = p, m, v
    sched._num_stages = sched.num_stages = p * v
    sched.number_of_rounds = max(1, m // p)
    sched.microbatches_per_round = m // sched.number_of_rounds
    sched.pipeline_order = {r: sched._calculate_single_rank_operations(r) for r in range(p)}
    if zero_bubble_bubbles:
        sched.pipeline_order = sched._add_bubbles_to_actions(p * v)
    kinds = {"F": "F", "B": "B", "I": "B", "W": "W"}
    return [[(kinds[a.computation_type.value], a.stage_index, a.microbatch_index)
             for a in sched.pipeline_order[r]
             if a is not None and a.computation_type.value in kinds] for r in range(p)]


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
def test_single_stage_orders_are_what_torch_executes(name):
    S = pytest.importorskip("torch.distributed.pipelining.schedules")
    cls = {"gpipe": S.ScheduleGPipe, "1f1b": S.Schedule1F1B}[name]
    n = 0
    for p in RANKS:
        for m in range(1, 2 * p + 2):
            if not _valid(name, p, m):
                with pytest.raises(JaxplaceError, match="n_microbatches"):
                    pipeline_order(name, p, m)
                with pytest.raises(ValueError):
                    _torch_executed(cls, p, m, 0)
                continue
            ours = pipeline_order(name, p, m)
            for r in range(p):
                assert ours[r] == _torch_executed(cls, p, m, r), (name, p, m, r)
                n += 1
    assert n > 100


@pytest.mark.parametrize("name", ["interleaved-1f1b", "zero-bubble", "zbv"])
def test_multi_stage_orders_equal_torchs(name):
    S = pytest.importorskip("torch.distributed.pipelining.schedules")
    cls = {"interleaved-1f1b": S.ScheduleInterleaved1F1B,
           "zero-bubble": S.ScheduleInterleavedZeroBubble,
           "zbv": S.ScheduleZBVZeroBubble}[name]
    n = 0
    for p, v in itertools.product(RANKS, CHUNKS[name]):
        for m in range(1, 2 * p + 3):
            if not _valid(name, p, m):
                with pytest.raises(JaxplaceError, match="n_microbatches"):
                    pipeline_order(name, p, m, v)
                continue
            theirs = _torch_multi_order(cls, p, m, v, name == "zero-bubble")
            assert pipeline_order(name, p, m, v) == theirs, (name, p, m, v)
            n += 1
    assert n > 50


def test_every_action_once_and_dependencies_in_time():
    rng = np.random.default_rng(3)
    for name, vs in CHUNKS.items():
        for p, v in itertools.product((2, 3, 5), vs):
            m = 2 * p
            s = p * v
            fwd, bwd = rng.uniform(0.1, 1, s), rng.uniform(0.1, 2, s)
            send = rng.uniform(0, 0.3, s - 1)
            t = simulate_schedule(name, fwd, bwd, m, send=send, n_virtual=v)
            kinds = ("F", "B", "W") if name in ("zero-bubble", "zbv") else ("F", "B")
            comp = {(e.kind, e.stage, e.microbatch): e for e in t.events
                    if e.kind in kinds}
            assert len(comp) == len(kinds) * s * m
            for r in range(p):  # no two events of one rank overlap
                evs = sorted((e for e in t.events if e.rank == r), key=lambda e: e.start)
                assert all(a.end <= b.start + 1e-12 for a, b in zip(evs, evs[1:]))
                assert [(e.kind, e.stage, e.microbatch) for e in evs
                        if e.kind in kinds] == list(t.order[r])
            sends = {(e.kind, e.stage, e.microbatch): e for e in t.events
                     if e.kind.startswith("SEND")}
            for (k, st, j), e in comp.items():
                assert t.stage_rank[st] == e.rank
                if k == "F" and st > 0:
                    prev = comp[("F", st - 1, j)]
                    ready = sends.get(("SEND_F", st - 1, j), prev).end
                    assert e.start >= ready - 1e-12
                if k == "B":
                    if st == s - 1:
                        assert e.start >= comp[("F", st, j)].end - 1e-12
                    else:
                        nxt = comp[("B", st + 1, j)]
                        ready = sends.get(("SEND_B", st + 1, j), nxt).end
                        assert e.start >= ready - 1e-12
                if k == "W":
                    assert e.start >= comp[("B", st, j)].end - 1e-12


@pytest.mark.parametrize("name", list(CHUNKS))
def test_simulator_equals_the_relaxation_reference(name):
    rng = np.random.default_rng(11)
    for p, v in itertools.product((2, 3, 4), CHUNKS[name]):
        for m in (p, 2 * p, 3 * p):
            s = p * v
            fwd, bwd = rng.uniform(0, 1, s), rng.uniform(0, 2, s)
            send = rng.uniform(0, 0.5, s - 1)
            kw = {"weight": bwd * rng.uniform(0, 1, s)} if name in ("zero-bubble", "zbv") \
                else {}
            fast = simulate_schedule(name, fwd, bwd, m, send=send, n_virtual=v, **kw)
            ref = reference_schedule(name, fwd, bwd, m, send=send, n_virtual=v, **kw)
            assert fast.step_time == pytest.approx(ref.step_time, rel=1e-12)
            for a, b in zip(fast.events, ref.events, strict=True):
                assert (a.rank, a.kind, a.stage, a.microbatch) == \
                    (b.rank, b.kind, b.stage, b.microbatch)
                assert a.start == pytest.approx(b.start, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
def test_bubble_closed_form_equal_stages(name):
    for p in RANKS:
        for m in (p, p + 1, 2 * p, 4 * p):
            f, b = 0.7, 1.3
            t = simulate_schedule(name, [f] * p, [b] * p, m)
            assert t.step_time == pytest.approx((m + p - 1) * (f + b), rel=1e-12)
            np.testing.assert_allclose(t.bubble, (p - 1) / (m + p - 1), rtol=1e-12)


def test_interleaved_bubble_closed_form():
    """Narayanan et al. 2021: the bubble shrinks by v: (p - 1) / (v m + p - 1) with
    equal chunks, when m is a multiple of p."""
    for p, v in itertools.product(RANKS, (2, 3)):
        for m in (p, 2 * p):
            t = simulate_schedule("interleaved-1f1b", [1.0] * (p * v), [2.0] * (p * v), m,
                                  n_virtual=v)
            np.testing.assert_allclose(t.bubble, (p - 1) / (v * m + p - 1), rtol=1e-12)


def test_zero_bubble_h1_closed_form():
    """Qi et al. 2024, ZB-H1 with F = B = W = t: a bubble of (p - 1) t, a third of 1F1B's."""
    for p in RANKS:
        for m in (p, 2 * p):
            t = simulate_schedule("zero-bubble", [1.0] * p, [2.0] * p, m)
            assert t.step_time == pytest.approx(3 * m + p - 1, rel=1e-12)
            one = simulate_schedule("1f1b", [1.0] * p, [2.0] * p, m)
            assert one.step_time - 3 * m == pytest.approx(3 * (p - 1), rel=1e-12)


def test_in_flight_activations():
    for p in RANKS:
        for m in (p, 2 * p):
            g = simulate_schedule("gpipe", [1.0] * p, [1.0] * p, m)
            assert list(g.in_flight) == [m] * p
            o = simulate_schedule("1f1b", [1.0] * p, [1.0] * p, m)
            assert list(o.in_flight) == [min(p - i, m) for i in range(p)]


def test_unequal_stage_bottleneck_governs_the_steady_state():
    """With one slow stage and many microbatches the step approaches m times its time."""
    fwd, bwd = [1.0, 3.0, 1.0], [2.0, 6.0, 2.0]
    for m in (64, 256):
        t = simulate_schedule("1f1b", fwd, bwd, m)
        assert m * 9.0 <= t.step_time <= m * 9.0 + 2 * (3 + 6)  # fill and drain only


def test_sends_on_the_sender_and_zero_length_allowed():
    t = simulate_schedule("gpipe", [1.0, 1.0], [1.0, 1.0], 2, send=0.5)
    sends = [e for e in t.events if e.kind.startswith("SEND")]
    assert {(e.kind, e.rank) for e in sends} == {("SEND_F", 0), ("SEND_B", 1)}
    assert all(e.end - e.start == pytest.approx(0.5) for e in sends)
    z = simulate_schedule("gpipe", [1.0, 1.0], [1.0, 1.0], 2)
    assert sum(e.kind.startswith("SEND") for e in z.events) == 4
    assert z.step_time < t.step_time


@pytest.mark.parametrize("kwargs, field", [
    ({"schedule": "pipedream"}, "schedule"),
    ({"fwd": [1.0, -1.0]}, "fwd"),
    ({"bwd": [1.0]}, "bwd"),
    ({"send": [1.0, 2.0]}, "send"),
    ({"n_microbatches": 0}, "n_microbatches"),
    ({"schedule": "1f1b", "n_microbatches": 1}, "n_microbatches"),
    ({"schedule": "zbv"}, "n_virtual"),
    ({"weight": [0.5, 0.5]}, "weight"),
    ({"schedule": "zero-bubble", "weight": [5.0, 0.5]}, "weight"),
    ({"fwd": [1.0, float("nan")]}, "fwd"),
])
def test_bad_input_is_one_clear_error(kwargs, field):
    args = {"schedule": "gpipe", "fwd": [1.0, 1.0], "bwd": [1.0, 1.0], "n_microbatches": 4}
    args.update(kwargs)
    with pytest.raises(JaxplaceError) as err:
        simulate_schedule(args.pop("schedule"), args.pop("fwd"), args.pop("bwd"),
                          args.pop("n_microbatches"), **args)
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_same_input_same_timeline():
    a = simulate_schedule("zbv", [1, 2, 3, 4], [2, 2, 2, 2], 6, n_virtual=2, send=0.1)
    b = simulate_schedule("zbv", [1, 2, 3, 4], [2, 2, 2, 2], 6, n_virtual=2, send=0.1)
    assert a.events == b.events and a.order == b.order and a.step_time == b.step_time
    np.testing.assert_array_equal(a.bubble, b.bubble)
