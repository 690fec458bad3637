"""The policy GNN's forward pass in NumPy (float64), for inference on one graph.

`PolicyModel.__call__` under `jax.jit` compiles one XLA program per padded graph
shape: a few seconds each on a 2-core CPU, against well under 0.1 s for the pass
itself, so a search that needs one forward pass per problem spent most of its
policy time compiling. This is the same function written with NumPy on the
unpadded graph (the real nodes' outputs do not depend on the padding, see
`jaxplace.policy.model`), so nothing compiles. It computes in float64 and returns
float32: it equals the flax model to float32 rounding (tests/policy/test_policy_numpy.py
checks the shipped policies on generated graphs), not bit for bit, so a draw from
the distribution can differ from the jitted model's in its last bits.

Models with global attention blocks (`ModelConfig.attention_layers` > 0) are not
covered (`supported`); `jaxplace.policy.inference.node_distribution` runs them
through the jitted model.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from jaxplace.policy.features import Featurized
from jaxplace.policy.model import ModelConfig

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
#: nnx.LayerNorm's default epsilon (the model uses the default).
LAYER_NORM_EPS = 1e-6


def supported(config: ModelConfig) -> bool:
    """Whether `forward` computes this architecture."""
    return not config.attention_layers


def parameter_shapes(config: ModelConfig) -> dict[str, tuple]:
    """{"layers/0/fwd/kernel": shape, ...}: the parameters `PolicyModel(config)` holds
    (attention-free configs; tests/policy/test_policy_numpy.py checks them against flax's)."""
    H = config.hidden
    out = {}

    def linear(name, fan_in, fan_out):
        out[f"{name}/bias"] = (fan_out,)
        out[f"{name}/kernel"] = (fan_in, fan_out)

    linear("embed", config.node_features + config.graph_features, H)
    linear("ctx_in", config.graph_features, H)
    for i in range(config.layers):
        p = f"layers/{i}"
        for name, fan_in in (("fwd", H), ("bwd", H), ("ten", H), ("mix", 5 * H),
                             ("out", H), ("ctx", 2 * H)):
            linear(f"{p}/{name}", fan_in, H)
        out[f"{p}/norm/bias"] = (H,)
        out[f"{p}/norm/scale"] = (H,)
    linear("head", 2 * H, H)
    linear("final", H, 2)
    return out


def float64_weights(flat: dict) -> dict[str, np.ndarray]:
    """{name: float64 array} from flat float32 weights (`checkpoint.check_flat`)."""
    return {k: np.asarray(v, np.float64) for k, v in flat.items()}


@contextmanager
def one_blas_thread():
    """Matrix products of this thread on one BLAS thread while inside.

    The products here are small (a few hundred rows by 128-640), where OpenBLAS
    still splits them over every core: on a loaded 2-core machine its threads then
    wait on each other and one forward pass took 0.5-1.2 s instead of 0.1 s (and
    once 15 s). NumPy's bundled OpenBLAS has a per-thread setting
    (`openblas_set_num_threads_local`, OpenBLAS >= 0.3.27), so no other thread is
    affected; with another BLAS (no such symbol) this changes nothing."""
    fn = _local_threads_setter()
    if fn is None:
        yield
        return
    before = fn(1)
    try:
        yield
    finally:
        fn(before)


def _local_threads_setter():
    import ctypes
    import glob
    import os

    here = os.path.dirname(np.__file__)
    for pattern in ("../numpy.libs/libscipy_openblas*", ".dylibs/libscipy_openblas*"):
        for lib in sorted(glob.glob(os.path.join(here, pattern))):
            try:
                fn = ctypes.CDLL(lib).openblas_set_num_threads_local
            except (OSError, AttributeError):
                continue
            fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
            return fn
    return None


def _gelu(x):
    """jax.nn.gelu's default (tanh) approximation."""
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * (x * x * x))))


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _linear(w, name, x):
    return x @ w[f"{name}/kernel"] + w[f"{name}/bias"]


def _layer_norm(w, name, x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + LAYER_NORM_EPS) * w[f"{name}/scale"] + w[f"{name}/bias"]


def _mean_plan(rows: np.ndarray, ids: np.ndarray, num: int) -> tuple:
    """What `_mean_of` needs to average row `rows[j]` into segment `ids[j]` (of
    `num`): the rows sorted by segment, where each segment starts, which segments
    occur, and the segment sizes (at least 1)."""
    order = np.argsort(ids, kind="stable")
    sid = ids[order]
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]]) if len(sid) else sid
    count = np.maximum(np.bincount(ids, minlength=num), 1).astype(np.float64)
    return rows[order], starts, sid[starts], count, num


def _mean_of(values: np.ndarray, plan: tuple) -> np.ndarray:
    """(num, H) per-segment means of the rows of `values` that `plan` picks (0 for an
    empty segment), as the model's segment_sum / count."""
    rows, starts, present, count, num = plan
    out = np.zeros((num, values.shape[1]))
    if len(rows):  # one sorted pass (np.add.at was 40% of the forward pass)
        out[present] = np.add.reduceat(values[rows], starts, axis=0)
    return out / count[:, None]


def forward(config: ModelConfig, w: dict[str, np.ndarray], f: Featurized
            ) -> tuple[np.ndarray, np.ndarray]:
    """(mean, log_std), each (n,) float32, of the model `config` with weights `w`
    (`float64_weights`) on the featurized graph `f` (`jaxplace.policy.features`)."""
    if not supported(config):
        raise ValueError("the NumPy forward pass has no attention blocks")
    with one_blas_thread():
        return _forward(config, w, f)


def _forward(c: ModelConfig, w: dict, f: Featurized) -> tuple[np.ndarray, np.ndarray]:
    n = len(f.node)
    src, dst = f.edges[:, 0], f.edges[:, 1]
    into_dst = _mean_plan(src, dst, n)  # predecessors' messages
    into_src = _mean_plan(dst, src, n)  # successors'
    into_tensor = _mean_plan(f.mem_node, f.mem_tensor, f.num_tensors)  # its members'
    into_node = _mean_plan(f.mem_tensor, f.mem_node, n)  # a node's tensors'
    graph = f.graph.astype(np.float64)
    x = np.concatenate([f.node.astype(np.float64), np.broadcast_to(graph, (n, len(graph)))],
                       axis=1)
    h = _gelu(_linear(w, "embed", x))
    ctx = _gelu(_linear(w, "ctx_in", graph))
    for i in range(c.layers):
        p = f"layers/{i}"
        fwd = _mean_of(_linear(w, f"{p}/fwd", h), into_dst)
        bwd = _mean_of(_linear(w, f"{p}/bwd", h), into_src)
        ten = _mean_of(_mean_of(_linear(w, f"{p}/ten", h), into_tensor), into_node)
        z = np.concatenate([h, fwd, bwd, ten, np.broadcast_to(ctx, h.shape)], axis=1)
        h = _layer_norm(w, f"{p}/norm", h + _linear(w, f"{p}/out",
                                                   _gelu(_linear(w, f"{p}/mix", z))))
        pooled = h.sum(0) / max(n, 1)
        ctx = ctx + _linear(w, f"{p}/ctx", _gelu(np.concatenate([pooled, ctx])))
    z = _gelu(_linear(w, "head", np.concatenate([h, np.broadcast_to(ctx, h.shape)], 1)))
    raw = _linear(w, "final", z)
    mean = c.mean_scale * np.tanh(raw[:, 0] / c.mean_scale)
    if c.dfs_anchor and f.anchor is not None:
        mean = mean + c.dfs_anchor * f.anchor.astype(np.float64)
    lo, hi = c.log_std_min, c.log_std_max
    b = math.log((c.init_log_std - lo) / (hi - c.init_log_std))
    log_std = lo + (hi - lo) * _sigmoid(raw[:, 1] + b)
    return mean.astype(np.float32), log_std.astype(np.float32)


__all__ = ["LAYER_NORM_EPS", "float64_weights", "forward", "one_blas_thread",
           "parameter_shapes", "supported"]
