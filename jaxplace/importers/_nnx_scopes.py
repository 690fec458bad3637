"""Module paths of a Flax NNX model as JAX name scopes, so traced ops are named by module.

NNX modules do not push a name scope when called, so a traced op only knows its
primitive (`dot_general_12`). While `module_scopes(model)` is active, calling a
submodule of `model` opens `jax.named_scope` with its attribute path relative to the
calling module (`layers.0`, then `attn`, then `q`), and the tracer's `name_stack`
turns into `layers.0/attn/q/dot_general_12`. The `__call__` of the model's module
classes is wrapped for the duration of the context only, and the wrapper acts only
on the instances of this model (others run unchanged).
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import wraps


def _label(path: tuple) -> str:
    return ".".join(str(p) for p in path)


@contextmanager
def module_scopes(model):
    """Name every op traced inside a call of `model` by its module path (see above)."""
    import jax
    from flax import nnx

    paths = {id(m): tuple(p) for p, m in nnx.iter_graph(model) if isinstance(m, nnx.Module)}
    owners = {}
    for _, m in nnx.iter_graph(model):
        if not isinstance(m, nnx.Module):
            continue
        for cls in type(m).__mro__:
            if "__call__" in cls.__dict__:
                owners.setdefault(cls, cls.__dict__["__call__"])
                break
    active: list[tuple] = [()]

    def wrap(original):
        @wraps(original)
        def call(self, *args, **kwargs):
            path = paths.get(id(self))
            if path is None or path == active[-1]:
                return original(self, *args, **kwargs)
            parent = active[-1]
            rel = path[len(parent):] if path[:len(parent)] == parent else path
            active.append(path)
            try:
                with jax.named_scope(_label(rel) or "root"):
                    return original(self, *args, **kwargs)
            finally:
                active.pop()
        return call

    for cls, original in owners.items():
        cls.__call__ = wrap(original)
    try:
        yield
    finally:
        for cls, original in owners.items():
            cls.__call__ = original
