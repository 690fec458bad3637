"""Training pipelines from PyTorch modules: the plan through the training objective,
its costs checked against the modules, and a 2-process run whose optimizer step gives
the unsplit model's parameters."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.distributed.pipelining import pipeline  # noqa: E402

import jaxplace as jp  # noqa: E402
from jaxplace.torch import plan_pipeline, run_pipeline  # noqa: E402
from jaxplace.torch.models import GPT2, UnequalMLP  # noqa: E402
from jaxplace.torch._training_costs import saved_activation_bytes  # noqa: E402


def lm_loss(out, tgt):
    return nn.functional.cross_entropy(out.flatten(0, 1), tgt.flatten())


def _gpt():
    torch.manual_seed(0)
    m = GPT2(vocab=128, ctx=16, d=16, layers=4, heads=2)
    x = torch.randint(0, 128, (8, 8))
    y = torch.randint(0, 128, (8, 8))
    return m, x, y


def test_training_plan_is_the_objectives_optimum_and_torch_accepts_it():
    m, x, y = _gpt()
    plan = plan_pipeline(m, (x[:2],), 2, train=True, n_microbatches=4, device="cpu")
    assert plan.num_stages == 2 and plan.schedule == "1f1b"
    assert plan.proved_optimal and plan.lower_bound <= plan.step_time * (1 + 1e-9)
    # every other split at the boundaries simulates no faster
    for seg in range(1, len(plan.segment_starts)):
        other = plan.cost_of([plan.segment_starts[seg]])
        assert other.cost / 1e6 >= plan.step_time * (1 - 1e-9)
    assert plan.even is None or plan.even.cost / 1e6 >= plan.step_time * (1 - 1e-9)
    pipe = pipeline(m, mb_args=(x[:2],), split_spec=plan.split_spec)
    assert pipe.num_stages == 2
    # the 1F1B memory: parameters x (1 + grads + Adam's 2) + activations x min(p - i, m)
    for s in range(2):
        params = sum(p.numel() * 4 for p in pipe.get_stage_module(s).parameters())
        act = plan.stage_memory[s] - 4 * params
        assert list(plan.in_flight) == [2, 1]
        assert act >= 0
    np.testing.assert_allclose(plan.stage_times, plan.stage_fwd + plan.stage_bwd)
    assert "1f1b" in plan.summary()


def test_backward_is_derived_from_the_forward():
    m = UnequalMLP(widths=(8, 32, 4)).eval()
    plan = plan_pipeline(m, (torch.randn(4, 8),), 2, train=True, n_microbatches=2,
                         device="cpu", optimizer="sgd")
    g = plan.problem.graph
    ops = plan.ops
    lin = [i for i, o in enumerate(ops) if o.aten == "linear"]
    assert lin
    # linears: backward 2x forward; GELU 1x; the sum per segment is what the graph holds
    assert g.node_attrs["bwd_work"].sum() > g.work.sum()
    assert g.node_attrs["bwd_work"].sum() <= 2 * g.work.sum() * (1 + 1e-12)


def test_saved_activations_are_what_autograd_keeps():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
    x = torch.randn(5, 8)
    got = saved_activation_bytes(m, (x,), ["1", "2"])
    # linear saves its input (x: 5x8), tanh its output (5x32), the last linear its
    # input, which is tanh's output: one storage, counted where it is first saved
    assert list(got) == [5 * 8 * 4, 5 * 32 * 4, 0.0]
    # with the loss: its saved tensors and the output (kept by the last stage)
    got = saved_activation_bytes(m, (x,), ["1", "2"], loss_fn=lambda o, t: (o - t).pow(2)
                                 .sum(), target=torch.zeros(5, 4))
    assert got[2] >= 5 * 4 * 4 and got[:2].tolist() == [5 * 8 * 4, 5 * 32 * 4]


def test_memory_limit_below_the_fastest_split_moves_the_cut():
    m, x, y = _gpt()
    free = plan_pipeline(m, (x[:2],), 2, train=True, n_microbatches=4, device="cpu")
    limit = float(free.stage_memory.max()) - 1.0
    tight = plan_pipeline(m, (x[:2],), 2, train=True, n_microbatches=4, device="cpu",
                          memory_limit=limit)
    assert tight.stage_memory.max() <= limit
    assert tight.stage_starts != free.stage_starts
    assert tight.step_time >= free.step_time * (1 - 1e-9)
    with pytest.raises(jp.JaxplaceError, match="memory limit") as err:
        plan_pipeline(m, (x[:2],), 2, train=True, n_microbatches=4, device="cpu",
                      memory_limit=1.0)
    assert err.value.field == "memory_limit"


def test_profiled_costs_are_positive_and_cover_every_segment():
    m, x, y = _gpt()
    plan = plan_pipeline(m, (x[:2],), 2, train=True, n_microbatches=4, profile=True,
                         loss_fn=lm_loss, target=y[:2], repeats=2)
    assert plan.costs == "profiled"
    g = plan.problem.graph
    assert np.all(g.work >= 0) and g.work.sum() > 0 and g.node_attrs["bwd_work"].sum() > 0
    with pytest.raises(jp.JaxplaceError, match="loss_fn"):
        plan_pipeline(m, (x[:2],), 2, train=True, profile=True)


@pytest.mark.parametrize("schedule, v", [
    ("1f1b", 1), pytest.param("gpipe", 1, marks=pytest.mark.heavy),
    pytest.param("interleaved-1f1b", 2, marks=pytest.mark.heavy)])
def test_one_sgd_step_of_the_pipeline_equals_the_unsplit_models(schedule, v):
    m, x, y = _gpt()
    plan = plan_pipeline(m, (x[:2],), 2, train=True, schedule=schedule, n_microbatches=4,
                         n_virtual=v, device="cpu", optimizer="sgd")
    assert plan.num_ranks == 2 and plan.num_stages == 2 * v
    run = run_pipeline(plan, m, (x,), target=y, loss_fn=lm_loss, train=True, steps=1,
                       warmup=0, optimizer="sgd", lr=0.5, memory=False, timeout=200)
    ref = GPT2(vocab=128, ctx=16, d=16, layers=4, heads=2)
    ref.load_state_dict(m.state_dict())
    opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    lm_loss(ref(x), y).backward()
    opt.step()
    ref_params = dict(ref.named_parameters())
    assert set(run.parameters) == set(ref_params)
    moved = 0
    for name, p in ref_params.items():
        torch.testing.assert_close(run.parameters[name], p.detach(), atol=1e-5, rtol=0)
        moved += int(not torch.equal(p.detach(), m.state_dict()[name]))
    assert moved > len(ref_params) // 2  # the step changed the parameters
    # every action of the schedule ran, in torch's order on each rank
    from jaxplace.pipeline.schedule_orders import pipeline_order
    order = pipeline_order(schedule, 2, 4, v)
    for r in range(2):
        evs = sorted((e for e in run.events if e.rank == r), key=lambda e: e.start)
        assert [(e.kind, e.stage, e.microbatch) for e in evs] == order[r]
    assert run.step_times.shape == (1,) and run.stage_times.shape == (2 * v, 2)
    assert np.all(run.stage_times > 0)


def test_a_call_from_a_starting_process_names_the_main_guard(monkeypatch):
    """A spawned child re-importing a script that calls run_pipeline at top level is
    still starting (`_inheriting`): the call is refused, naming the guard."""
    import multiprocessing

    m, x, y = _gpt()
    plan = plan_pipeline(m, (x[:2],), 2, train=True, n_microbatches=4, device="cpu")
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True,
                        raising=False)
    inference = plan_pipeline(m, (x[:2],), 2)
    with pytest.raises(jp.JaxplaceError, match='__name__ == "__main__"'):
        run_pipeline(plan, m, (x,), target=y, loss_fn=lm_loss, train=True)
    with pytest.raises(jp.JaxplaceError, match='__name__ == "__main__"'):
        run_pipeline(inference, m, (x,), n_microbatches=2)


def test_training_run_refusals():
    m, x, y = _gpt()
    plan = plan_pipeline(m, (x[:2],), 2, train=True, n_microbatches=4, device="cpu")
    with pytest.raises(jp.JaxplaceError, match="loss_fn and target"):
        run_pipeline(plan, m, (x,), train=True)
    with pytest.raises(jp.JaxplaceError, match="divide into 4"):
        run_pipeline(plan, m, (x[:6],), target=y[:6], loss_fn=lm_loss, train=True)
    inference = plan_pipeline(m, (x[:2],), 2)
    with pytest.raises(jp.JaxplaceError, match="training plan"):
        run_pipeline(inference, m, (x,), target=y, loss_fn=lm_loss, train=True)
