"""jaxplace.torch: plans that torch.distributed.pipelining accepts, costs from the
importers' roofline model checked against the modules themselves, and a 2-process
GPipe run whose outputs equal the whole model's."""

from __future__ import annotations

import dataclasses
import operator
from collections import Counter

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.distributed.pipelining import SplitPoint, pipeline  # noqa: E402

import jaxplace as jp  # noqa: E402
from jaxplace.importers import roofline as rl  # noqa: E402
from jaxplace.torch import (  # noqa: E402
    module_boundaries,
    plan_pipeline,
    repeated_layers,
    run_pipeline,
)
from jaxplace.torch._aten_costs import aten_name  # noqa: E402
from jaxplace.torch.models import GPT2, ResNet, UnequalMLP  # noqa: E402
from jaxplace.torch.trace import from_torch  # noqa: E402


def _gpt():
    torch.manual_seed(0)
    return GPT2(vocab=256, ctx=32, d=32, layers=4, heads=2).eval(), torch.randint(0, 256, (4, 16))


def _resnet():
    torch.manual_seed(0)
    return ResNet(blocks=(1, 2, 1, 1), width=4, classes=10).eval(), torch.randn(2, 3, 32, 32)


def _state_bytes(mod) -> int:
    """Parameter and buffer bytes, less BatchNorm's step counters (eval never reads them)."""
    bufs = [b for n, b in mod.named_buffers() if not n.endswith("num_batches_tracked")]
    return sum(t.numel() * t.element_size() for t in (*mod.parameters(), *bufs))


def test_linear_flops_and_parameter_bytes_match_the_module():
    m = UnequalMLP(widths=(8, 32, 4, 16)).eval()
    graph, ops = from_torch(m, (torch.randn(3, 8),))
    lin = [i for i, o in enumerate(ops) if o.aten == "linear"]
    assert len(lin) == 3
    expect = sum(2 * 3 * layer[0].in_features * layer[0].out_features for layer in m.layers)
    assert graph.node_attrs["flops"][lin].sum() == expect
    assert graph.size_param.sum() == _state_bytes(m)
    # GELU: transcendental, 4 FLOPs per element (the roofline module's convention)
    gelu = [i for i, o in enumerate(ops) if o.aten == "gelu"]
    assert graph.node_attrs["flops"][gelu[0]] == rl.TRANSCENDENTAL_FLOPS * 3 * 32


def test_conv_flops_match_forward_hooks():
    m, x = _resnet()
    expect = []

    def hook(mod, inp, out):
        expect.append(2 * out.numel() * mod.in_channels // mod.groups
                      * mod.kernel_size[0] * mod.kernel_size[1])

    hs = [c.register_forward_hook(hook) for c in m.modules() if isinstance(c, nn.Conv2d)]
    with torch.no_grad():
        m(x)
    for h in hs:
        h.remove()
    graph, ops = from_torch(m, (x,))
    conv = [i for i, o in enumerate(ops) if o.aten.startswith("conv")]
    np.testing.assert_array_equal(graph.node_attrs["flops"][conv], expect)
    assert graph.size_param.sum() == _state_bytes(m)


def test_boundaries_skip_shared_modules_and_name_the_outermost():
    m, x = _resnet()
    _, ops = from_torch(m, (x,))
    b = module_boundaries(ops)
    names = list(b.values())
    assert "layer2" in names and "layer2.1" in names and "fc" in names
    assert "layer2.0" not in names  # begins where layer2 begins: the outermost is named
    assert "relu" in names  # the stem's, called once
    assert not any(n.endswith(".relu") for n in names)  # a block's runs three times
    assert [f for f, _ in repeated_layers(ops)] == ["layer1.0", "layer2.0", "layer2.1",
                                                    "layer3.0", "layer4.0"]


@pytest.mark.parametrize("make,k", [(_gpt, 3), (_resnet, 2)])
def test_split_spec_is_accepted_and_stages_hold_the_planned_parameters(make, k):
    m, x = make()
    plan = plan_pipeline(m, (x[:2],), k=k)
    assert plan.num_stages == k
    assert all(v == SplitPoint.BEGINNING for v in plan.split_spec.values())
    assert plan.lower_bound <= plan.split.bottleneck * (1 + 1e-9)
    assert plan.split.bottleneck >= plan.op_split.bottleneck * (1 - 1e-9)
    assert plan.even is None or plan.split.bottleneck <= plan.even.bottleneck * (1 + 1e-9)
    pipe = pipeline(m, mb_args=(x[:2],), split_spec=plan.split_spec)
    assert pipe.num_stages == k
    got = [_state_bytes(pipe.get_stage_module(s)) for s in range(k)]
    np.testing.assert_array_equal(got, plan.param_bytes)
    for s in range(k):  # each stage runs exactly the ATen ops the plan gave it
        theirs = Counter(aten_name(n.target) for mod in pipe.get_stage_module(s).modules()
                         for n in getattr(getattr(mod, "graph", None), "nodes", ())
                         if n.op == "call_function" and n.target is not operator.getitem)
        mine = Counter(o.aten for o, a in zip(plan.ops, plan.split.assignment, strict=True)
                       if a == s)
        assert theirs == mine


def test_even_split_of_layers_is_costed():
    m, x = _gpt()
    plan = plan_pipeline(m, (x[:2],), k=2)
    assert plan.layers == tuple(f"transformer.h.{i}" for i in range(4))
    # stage 0 sends the hidden state (2 x 16 tokens x width 32, fp32) and nothing else
    assert list(plan.activation_bytes) == [2 * 16 * 32 * 4, 0]
    assert plan.even.starts[1] == plan.ops.index(
        next(o for o in plan.ops if "transformer.h.2" in o.modules))


class _NoSubmodules(nn.Module):
    """Four matmuls on raw parameters: no module boundary to cut at."""

    def __init__(self):
        super().__init__()
        self.w = nn.ParameterList(nn.Parameter(torch.randn(64, 64)) for _ in range(4))

    def forward(self, x):
        for w in self.w:
            x = torch.tanh(x @ w)
        return x


def test_coarse_boundaries_are_reported_with_an_op_level_split():
    plan = plan_pipeline(_NoSubmodules(), (torch.randn(8, 64),), k=2)
    assert plan.num_stages == 1 and plan.split_spec == {}
    assert plan.coarse and any("only 0 module boundaries" in n for n in plan.notes)
    assert plan.op_split.bottleneck < plan.split.bottleneck
    assert len(plan.op_split_points) == 1
    before = plan.op_split_points[0]["before_op"]
    assert before == plan.ops[plan.op_split.starts[1]].name
    assert f"pipe_split() before op {before}" in plan.summary()


def test_weights_that_fit_no_stage_are_refused():
    from jaxplace.importers import get_device

    m, x = _gpt()
    tiny = dataclasses.replace(get_device("h100"), memory_bytes=1e5)  # < one stage's weights
    with pytest.raises(jp.JaxplaceError, match="fits the weights"):
        plan_pipeline(m, (x[:2],), k=2, device=tiny)


def test_unsupported_objective_is_refused():
    m, x = _gpt()
    with pytest.raises(jp.JaxplaceError, match="objective 'latency'"):
        plan_pipeline(m, (x,), k=2, objective="latency")


def test_two_process_pipeline_equals_the_model():
    m, x = _gpt()
    plan = plan_pipeline(m, (x[:2],), k=2)
    run = run_pipeline(plan, m, (x,), n_microbatches=2, timeout=150)
    with torch.no_grad():
        ref = m(x)
    err = (run.outputs - ref).abs().max() / ref.abs().max()
    assert float(err) <= 1e-5
    assert run.measured_ms.shape == (2,) and np.all(run.measured_ms > 0)
    np.testing.assert_array_equal(run.predicted_us, plan.stage_times)
    assert "measured ms" in run.table()


def test_run_past_its_deadline_is_stopped():
    m, x = _gpt()
    plan = plan_pipeline(m, (x[:2],), k=2)
    with pytest.raises(jp.JaxplaceError, match="did not finish within"):
        run_pipeline(plan, m, (x,), n_microbatches=2, timeout=0.5)


def test_a_module_already_split_by_pipeline_is_cleaned_for_the_stages():
    import pickle

    from jaxplace.torch.run import without_split_wrappers

    m, x = _gpt()
    plan = plan_pipeline(m, (x[:2],), k=3)
    pipeline(m, mb_args=(x[:2],), split_spec=plan.split_spec)  # wraps m's modules in place
    with pytest.raises(AttributeError, match="_split_before_forward"):
        pickle.loads(pickle.dumps(m))  # what a spawned stage process would do
    clean = pickle.loads(pickle.dumps(without_split_wrappers(m)))
    assert pipeline(clean, mb_args=(x[:2],), split_spec=plan.split_spec).num_stages == 3


def test_without_torch_the_error_names_the_extra():
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None\n"
            "import jaxplace as jp\n"
            "from jaxplace.torch import plan_pipeline\n"
            "try:\n    plan_pipeline(object(), (), k=2)\n"
            "except jp.JaxplaceError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "pip install 'jaxplace[torch]'" in out.stdout, out.stderr[-2000:]


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["resnet", "vit", "mlp"])
def test_two_process_pipeline_equals_the_model_other_models(name):
    from jaxplace.torch.models import ViT

    torch.manual_seed(0)
    m, x = {"resnet": _resnet,
            "vit": lambda: (ViT(image=32, patch=8, d=32, layers=4, heads=2, classes=10),
                            torch.randn(4, 3, 32, 32)),
            "mlp": lambda: (UnequalMLP(), torch.randn(4, 512))}[name]()
    m.eval()
    plan = plan_pipeline(m, (x[:2],), k=2)
    run = run_pipeline(plan, m, (x,), n_microbatches=2, timeout=300)
    with torch.no_grad():
        ref = m(x)
    assert float((run.outputs - ref).abs().max() / ref.abs().max()) <= 1e-5
