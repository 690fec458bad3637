"""A module called twice in a row is not a module boundary: SplitPoint.BEGINNING would
cut before each of its calls, giving torch more stages than the plan."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402
from torch.distributed.pipelining import pipeline  # noqa: E402

from jaxplace.torch import module_boundaries, plan_pipeline  # noqa: E402
from jaxplace.torch.trace import from_torch  # noqa: E402


class _TwiceInARow(nn.Module):
    """a, then b twice back to back (its ops one contiguous run), then c; b is by far
    the heaviest, so a planner that may cut before b would."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Sequential(nn.Linear(16, 256), nn.Tanh(), nn.Linear(256, 16))
        self.c = nn.Linear(16, 16)

    def forward(self, x):
        return self.c(self.b(self.b(self.a(x))))


def test_a_module_called_twice_in_a_row_is_no_boundary():
    torch.manual_seed(0)
    m, x = _TwiceInARow().eval(), torch.randn(4, 16)
    _, ops = from_torch(m, (x,))
    b_ops = [i for i, o in enumerate(ops) if "b" in o.modules]
    assert b_ops == list(range(b_ops[0], b_ops[-1] + 1))  # one contiguous run
    assert len({o.calls[o.modules.index("b")] for o in ops if "b" in o.modules}) == 2
    names = set(module_boundaries(ops).values())
    assert "b" not in names and not any(n.startswith("b.") for n in names)
    assert "c" in names


def test_plan_with_a_module_called_twice_gives_torch_k_stages():
    torch.manual_seed(0)
    m, x = _TwiceInARow().eval(), torch.randn(4, 16)
    plan = plan_pipeline(m, (x[:2],), k=2)
    assert plan.num_stages == 2
    pipe = pipeline(m, mb_args=(x[:2],), split_spec=plan.split_spec)
    assert pipe.num_stages == plan.num_stages
