"""from_jax names the ops of an NNX model by module path, and leaves the classes intact."""

import jax
import jax.numpy as jnp
from flax import nnx

import jaxplace as jp


class Block(nnx.Module):
    def __init__(self, rngs):
        self.q = nnx.Linear(4, 4, rngs=rngs)
        self.o = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, x):
        return self.o(jax.nn.relu(self.q(x))) + x


class Model(nnx.Module):
    def __init__(self, rngs):
        self.layers = nnx.List([Block(rngs) for _ in range(2)])
        self.head = nnx.Linear(4, 2, rngs=rngs)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def test_ops_are_named_by_module_path():
    original = nnx.Linear.__call__
    g = jp.from_jax(Model(nnx.Rngs(0)), jnp.ones((3, 4)))
    names = list(g.names)
    assert names[0] == "layers.0/q/dot_general_0"
    assert any(n.startswith("layers.1/o/dot_general") for n in names)
    assert names[-1].startswith("head/")
    # the residual add belongs to the block, not to its last Linear
    assert any(n.startswith("layers.0/add") for n in names)
    assert nnx.Linear.__call__ is original and Block.__call__ is Block.__dict__["__call__"]
    # a second model of the same classes traced afterwards is named the same way
    g2 = jp.from_jax(Model(nnx.Rngs(1)), jnp.ones((3, 4)))
    assert list(g2.names) == names
