"""JAX programs split by the planner into jitted stages (`jaxplace.pipeline.jax_stages`):
the staged outputs equal the program's, on one device and on two host devices."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxplace.pipeline.jax_stages import plan_jax, run_stages, stage_functions

TABLE = jnp.linspace(-1.0, 1.0, 8)  # a closed-over constant (a parameter to from_jax)


@jax.jit
def _inner(x, scale):
    return jnp.tanh(x * scale)


def _program(p, x):
    h = _inner(x @ p["w1"], 0.5)  # a jitted call (inlined) with a literal argument
    h = h @ p["w2"].T.reshape(32, 8) + p["b"]  # a parameter view folded into w2
    return {"y": jax.nn.softmax(h + TABLE), "norm": jnp.sum(h * h)}


def _params():
    k1, k2 = jax.random.split(jax.random.key(0))
    return {"w1": jax.random.normal(k1, (16, 32)) * 0.2,
            "w2": jax.random.normal(k2, (8, 32)) * 0.2, "b": jnp.arange(8.0) / 8}


def _close(a, b):
    for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_stages_equal_the_program(k):
    p, x = _params(), jax.random.normal(jax.random.key(1), (4, 16))
    plan = plan_jax(_program, x, params=p, k=k)
    assert plan.num_stages == len(stage_functions(plan)) <= k
    assert plan.split.proved_optimal
    _close(run_stages(plan, x), _program(p, x))
    x2 = x + 1.0  # other inputs and parameters than the traced ones
    p2 = jax.tree.map(lambda a: a * 1.5, p)
    _close(run_stages(plan, x2, params=p2), _program(p2, x2))


def test_stages_read_from_earlier_stages_and_hold_their_own_parameters():
    p, x = _params(), jnp.ones((4, 16))
    plan = plan_jax(_program, x, params=p, k=3)
    stages = stage_functions(plan)
    assert len(stages) == 3
    made: set[int] = set(plan.program.invals)
    for st in stages:
        assert set(st.reads) <= made
        made |= set(st.sends)
    # each of w1, w2 (through its folded transpose/reshape) and b is read by one op
    held = [v for st in stages for v in st.params]
    assert sorted(held) == sorted(v for v in plan.program.invals
                                  if plan.program.kind[v] == "p")


NNX_SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from flax import nnx
    from jaxplace.pipeline.jax_stages import plan_jax, run_stages

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.a = nnx.Linear(16, 64, rngs=rngs)
            self.b = nnx.Linear(64, 64, rngs=rngs)
            self.norm = nnx.LayerNorm(64, rngs=rngs)
            self.c = nnx.Linear(64, 8, rngs=rngs)

        def __call__(self, x):
            h = jax.nn.gelu(self.a(x))
            h = self.norm(h + jax.nn.relu(self.b(h)))
            return self.c(h)

    assert len(jax.devices()) == 2, jax.devices()
    net = Net(nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (4, 16))
    plan = plan_jax(net, x, k=2)
    assert plan.num_stages == 2, plan.split.starts
    out = run_stages(plan, x)
    assert out.devices() == {jax.devices()[1]}, out.devices()
    np.testing.assert_allclose(np.asarray(out), np.asarray(net(x)), rtol=1e-5, atol=1e-6)
    print("ok", plan.split.starts)
""")


def test_nnx_module_on_two_host_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", NNX_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok")
