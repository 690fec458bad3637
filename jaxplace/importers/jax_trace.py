"""Import a JAX/Flax program as a CompGraph by tracing it with `jax.make_jaxpr`.

Nothing is executed and nothing is downloaded: arguments may be arrays or
`jax.ShapeDtypeStruct`s. The graph has one node per jaxpr equation, with these rules:

- Call-like primitives (`jit`/`pjit`, `closed_call`, `custom_jvp_call`,
  `custom_vjp_call`, `remat`/`checkpoint`, and any other primitive whose single
  sub-jaxpr has the equation's arity) are inlined: their bodies' equations become
  nodes; the node name carries the call's name as a scope.
- Loops are kept as one node: `scan` costs its body times `length`; `while` costs
  its body times the trip count when it is visible in the jaxpr (a counter started
  at a literal and compared with `lt` against a literal), else once (the number of
  such loops is reported in `meta["unknown_trip_counts"]`); `cond` costs its slowest
  branch (ties: the one with more FLOPs). A pipeline cannot split a loop body
  anyway: every iteration needs the whole body.
- Tensors are the equations' output variables; an equation with several outputs
  produces several tensors of one node (hyperedges). Graph inputs that are not
  parameters (activations) are not nodes: their transfer into the first stage is
  not charged.
- Parameters: leaves of `params` (passed as `fn(params, *args)`), or of the
  arguments named by `param_argnums`, or arrays the function closes over (jaxpr
  constants), are not nodes. Each parameter's bytes are charged once, to its first
  consumer in program order (`size_param`): a weight read by several ops of one
  stage is resident once. A view op (reshape, broadcast, transpose, convert, ...)
  whose only input is a parameter is folded into the parameter (a bias reshape is
  not an op of its own), so the parameter is charged to the real consumer.

Units: `work` in microseconds of roofline time on the device; `size_out` and the
tensor sizes in microseconds of link transfer (bytes / link bandwidth), so use
`Problem(..., bandwidth=1.0)`; `size_param` in bytes. `meta` records the device
profile and the problem defaults `bandwidth` = 1 and `capacity` = device memory (bytes),
which `jaxplace.load_problem` applies to saved graphs. Raw counts are kept in
`node_attrs`: `flops`, `bytes_moved`, `out_bytes`, `param_bytes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers import roofline as rl
from jaxplace.importers.builder import GraphBuilder
from jaxplace.importers.coarsen import coarsen as _coarsen
from jaxplace.importers.devices import DeviceProfile, get_device
from jaxplace.importers.fusion import fuse
from jaxplace.importers._nnx_scopes import module_scopes

_CALL_KEYS = ("jaxpr", "call_jaxpr", "fun_jaxpr")
_PARAM_VIEW_OPS = frozenset({"reshape", "broadcast_in_dim", "squeeze", "expand_dims",
                             "transpose", "convert_element_type", "copy", "stop_gradient",
                             "bitcast_convert_type", "copy_p"})


def _aval_bytes(aval) -> float:
    shape = getattr(aval, "shape", ())
    dtype = getattr(aval, "dtype", None)
    if dtype is None:
        return 0.0
    try:
        itemsize = np.dtype(dtype).itemsize
    except TypeError:
        itemsize = getattr(dtype, "itemsize", 4)
    return float(rl.numel(shape) * itemsize)


def _is_literal(atom) -> bool:
    from jax.extend.core import Literal

    return isinstance(atom, Literal)


def _is_drop(atom) -> bool:
    from jax.extend.core import DropVar

    return isinstance(atom, DropVar)


def _sub_jaxprs(eqn):
    """(jaxpr, consts) of every sub-jaxpr in an equation's params."""
    from jax.extend.core import ClosedJaxpr, Jaxpr

    out = []

    def visit(v):
        if isinstance(v, ClosedJaxpr):
            out.append((v.jaxpr, list(v.consts)))
        elif isinstance(v, Jaxpr):
            out.append((v, []))
        elif isinstance(v, (tuple, list)):
            for x in v:
                visit(x)

    for v in eqn.params.values():
        visit(v)
    return out


def inline_body(eqn):
    """The body to inline for a call-like equation, or None."""
    if eqn.primitive.name in rl.CONTROL_OPS:
        return None
    from jax.extend.core import ClosedJaxpr, Jaxpr

    for key in _CALL_KEYS:
        v = eqn.params.get(key)
        if isinstance(v, ClosedJaxpr):
            body, consts = v.jaxpr, list(v.consts)
        elif isinstance(v, Jaxpr):
            body, consts = v, []
        else:
            continue
        if len(body.invars) == len(eqn.invars) and len(body.outvars) == len(eqn.outvars):
            return body, consts
    return None


def _while_trips(eqn) -> int | None:
    """Trip count of `while` when it is `for i in range(lo, hi)` with literal bounds."""
    p = eqn.params
    cond = p["cond_jaxpr"].jaxpr
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    if len(cond.eqns) != 1 or cond.eqns[0].primitive.name != "lt":
        return None
    a, b = cond.eqns[0].invars
    if _is_literal(a) or not _is_literal(b) or a not in cond.invars:
        return None
    j = cond.invars.index(a) - cn
    if j < 0:
        return None
    init = eqn.invars[cn + bn + j]
    if not _is_literal(init):
        return None
    try:
        return max(int(b.val) - int(init.val), 0)
    except (TypeError, ValueError):
        return None


class _Cost:
    """Roofline cost of one equation (recursively for loops and calls)."""

    def __init__(self, device: DeviceProfile):
        self.device = device
        self.unknown_trips = 0
        self.unknown_ops: set[str] = set()

    def eqn(self, eqn) -> tuple[float, float, float]:
        """(flops, bytes_moved, time_s) of one equation."""
        prim = eqn.primitive.name
        body = inline_body(eqn)
        if body is not None:
            return self.jaxpr(body[0])
        if prim == "scan":
            f, b, t = self.jaxpr(eqn.params["jaxpr"].jaxpr)
            n = int(eqn.params["length"])
            return f * n, b * n, t * n
        if prim == "while":
            trips = _while_trips(eqn)
            if trips is None:
                self.unknown_trips += 1
                trips = 1
            fb, bb, tb = self.jaxpr(eqn.params["body_jaxpr"].jaxpr)
            fc, bc, tc = self.jaxpr(eqn.params["cond_jaxpr"].jaxpr)
            return ((fb + fc) * trips, (bb + bc) * trips, (tb + tc) * trips + tc)
        if prim == "cond":
            costs = [self.jaxpr(br.jaxpr) for br in eqn.params["branches"]]
            return max(costs, key=lambda c: (c[2], c[0]))  # slowest, then most FLOPs
        subs = _sub_jaxprs(eqn)
        if subs:  # other higher-order primitive: its bodies, once
            tot = [self.jaxpr(j) for j, _ in subs]
            return tuple(float(sum(c[i] for c in tot)) for i in range(3))
        return self.primitive(eqn)

    def jaxpr(self, jaxpr) -> tuple[float, float, float]:
        f = b = t = 0.0
        for e in jaxpr.eqns:
            df, db, dt = self.eqn(e)
            f, b, t = f + df, b + db, t + dt
        return f, b, t

    def primitive(self, eqn) -> tuple[float, float, float]:
        prim = eqn.primitive.name
        cat = rl.classify(prim)
        if cat == "view":
            return 0.0, 0.0, 0.0
        # literals are scalar immediates, not memory traffic; keep operand positions
        ins = [v.aval for v in eqn.invars]
        moved_in = [v.aval for v in eqn.invars if not _is_literal(v)]
        outs = [v.aval for v in eqn.outvars]
        in_elems = sum(rl.numel(getattr(a, "shape", ())) for a in ins)
        out_elems = sum(rl.numel(getattr(a, "shape", ())) for a in outs)
        nbytes = sum(_aval_bytes(a) for a in moved_in) + sum(_aval_bytes(a) for a in outs)
        dtype = getattr(outs[0], "dtype", "float32") if outs else "float32"
        matrix = False
        if prim in ("dot_general", "ragged_dot_general"):
            (lc, _rc), _ = eqn.params["dimension_numbers"]
            flops = rl.dot_flops(ins[0].shape, outs[0].shape, lc)
            dtype, matrix = ins[0].dtype, True
        elif prim == "conv_general_dilated":
            rhs_spec = eqn.params["dimension_numbers"].rhs_spec
            w = ins[1].shape
            flops = rl.conv_flops(outs[0].shape, w[rhs_spec[1]], [w[d] for d in rhs_spec[2:]])
            dtype, matrix = ins[0].dtype, True
        elif prim == "reduce_window_sum" or prim.startswith("reduce_window"):
            dims = eqn.params.get("window_dimensions", ())
            flops = float(out_elems * rl.numel(dims))
        elif prim in ("sort", "top_k"):
            n = max(int(ins[0].shape[-1]) if ins[0].shape else 1, 2)
            flops = float(in_elems * np.log2(n))
        else:
            if cat == "unknown":
                self.unknown_ops.add(prim)
            flops = rl.generic_flops(prim, in_elems, out_elems)
        t = rl.op_time(flops, nbytes, self.device, dtype, matrix=matrix)
        return float(flops), float(nbytes), float(t)


class _Tracer:
    def __init__(self, device: DeviceProfile, consts_as_params: bool):
        self.b = GraphBuilder(device)
        self.cost = _Cost(device)
        self.consts_as_params = consts_as_params
        self.const_ids: dict[int, int] = {}

    def const_source(self, value, name: str):
        nbytes = float(np.asarray(value).nbytes) if hasattr(value, "shape") else 0.0
        if not self.consts_as_params or nbytes <= 8:
            return ("c",)
        key = id(value)
        if key not in self.const_ids:
            self.const_ids[key] = self.b.add_param(name, nbytes)
        return ("p", self.const_ids[key])

    def walk(self, jaxpr, in_src: Sequence[tuple], const_src: Sequence[tuple],
             scope: str) -> list[tuple]:
        """Add the equations of `jaxpr` as nodes; returns the sources of its outputs.
        A source is ("t", tensor) for an op output, ("p", param), ("x",) for a graph
        input that is not a parameter, ("c",) for a literal or small constant."""
        env: dict[Any, tuple] = {}
        for v, s in zip(jaxpr.constvars, const_src, strict=True):
            env[v] = s
        for v, s in zip(jaxpr.invars, in_src, strict=True):
            env[v] = s

        def read(a):
            return ("c",) if _is_literal(a) else env.get(a, ("c",))

        for eqn in jaxpr.eqns:
            src = [read(a) for a in eqn.invars]
            prim = eqn.primitive.name
            stack = str(getattr(eqn.source_info, "name_stack", "") or "")
            body = inline_body(eqn)
            if body is not None:
                inner, consts = body
                sub = "/".join(s for s in (scope, stack, str(eqn.params.get("name", "")))
                               if s)
                csrc = [self.const_source(c, f"{sub}/const{i}") for i, c in enumerate(consts)]
                outs = self.walk(inner, src, csrc, sub)
                for v, s in zip(eqn.outvars, outs, strict=True):
                    if not _is_drop(v):
                        env[v] = s
                continue
            live = [s for s in src if s[0] != "c"]
            if (prim in _PARAM_VIEW_OPS and len(live) == 1 and live[0][0] == "p"
                    and len(eqn.outvars) == 1):
                env[eqn.outvars[0]] = live[0]
                continue
            flops, nbytes, t = self.cost.eqn(eqn)
            where = "/".join(s for s in (scope, stack) if s)
            name = f"{prim}_{len(self.b.nodes)}"
            _, tids = self.b.add_node(
                f"{where}/{name}" if where else name, prim, flops, nbytes, t,
                in_tensors=sorted({s[1] for s in src if s[0] == "t"}),
                in_params=[s[1] for s in src if s[0] == "p"],
                out_bytes=[_aval_bytes(v.aval) for v in eqn.outvars])
            for v, tid in zip(eqn.outvars, tids, strict=True):
                if not _is_drop(v):
                    env[v] = ("t", tid)
        return [read(a) for a in jaxpr.outvars]


def from_jax(fn: Callable, *example_args, params: Any = None,
             param_argnums: int | Sequence[int] | None = None,
             device: str | DeviceProfile = "h100", coarsen: bool | str = False,
             consts_as_params: bool = True, name: str | None = None) -> CompGraph:
    """Trace `fn` with `jax.make_jaxpr` and return its computation graph.

    Args:
        fn: a function of arrays, or a `flax.nnx.Module` (its state is the params).
        *example_args: arrays or `jax.ShapeDtypeStruct`s (pytrees allowed).
        params: a pytree of parameters; the traced call is `fn(params, *example_args)`.
        param_argnums: alternatively, which positional `example_args` are parameters.
        device: a profile name (see `device_names()`) or a DeviceProfile.
        coarsen: fuse chains of cheap elementwise ops into their producer
            (`jaxplace.importers.coarsen`); "fusion": MOIRAI's fusion-rule coarsening
            with fused roofline costs (`jaxplace.importers.fusion`).
        consts_as_params: treat arrays closed over by `fn` as parameters.
        name: stored as `meta["name"]`.

    Returns:
        A CompGraph; see the module docstring for units and conventions.
    """
    import jax

    dev = get_device(device)
    try:
        from flax import nnx

        if params is None and isinstance(fn, nnx.Module):
            graphdef, state = nnx.split(fn)
            params = state
            fn = _merged(graphdef)
    except ImportError:  # pragma: no cover - flax is a dependency
        pass
    if params is not None and param_argnums is not None:
        raise JaxplaceError("give either params or param_argnums, not both")
    args = (params, *example_args) if params is not None else tuple(example_args)
    if params is not None:
        pset = {0}
    elif param_argnums is None:
        pset = set()
    else:
        pset = {param_argnums} if isinstance(param_argnums, int) else set(param_argnums)
        bad = [i for i in pset if not 0 <= i < len(args)]
        if bad:
            raise JaxplaceError(f"param_argnums {bad} outside 0..{len(args) - 1}")
    try:
        closed = jax.make_jaxpr(fn)(*args)
    except JaxplaceError:
        raise
    except Exception as exc:  # tracing errors come from user code
        raise JaxplaceError(f"could not trace the function: {type(exc).__name__}: {exc}"
                            ) from exc

    tr = _Tracer(dev, consts_as_params)
    in_src = []
    for i, a in enumerate(args):
        leaves = jax.tree_util.tree_flatten_with_path(a)[0]
        for path, leaf in leaves:
            if i in pset:
                label = jax.tree_util.keystr(path) or f"arg{i}"
                shape = getattr(leaf, "shape", ())
                dt = getattr(leaf, "dtype", np.float32)
                in_src.append(("p", tr.b.add_param(
                    label, rl.numel(shape) * np.dtype(dt).itemsize)))
            else:
                in_src.append(("x",))
    if len(in_src) != len(closed.jaxpr.invars):
        raise JaxplaceError(f"traced {len(closed.jaxpr.invars)} inputs for "
                            f"{len(in_src)} argument leaves")
    csrc = [tr.const_source(c, f"const{i}") for i, c in enumerate(closed.consts)]
    tr.walk(closed.jaxpr, in_src, csrc, "")
    meta = {"source": "jax", "name": name or getattr(fn, "__name__", "fn"),
            "unknown_trip_counts": tr.cost.unknown_trips,
            "unknown_ops": sorted(tr.cost.unknown_ops)}
    graph = tr.b.build(meta)
    if coarsen == "fusion":
        graph = fuse(graph)
    elif coarsen:
        graph = _coarsen(graph)
    return graph


def _merged(graphdef):
    from flax import nnx

    def call(state, *a, **kw):
        model = nnx.merge(graphdef, state)
        with module_scopes(model):  # ops named by module path: layers.0/attn/q/...
            return model(*a, **kw)

    call.__name__ = "nnx_module"
    return call


def folds_into_param(prim: str) -> bool:
    """True for the view primitives that `from_jax` folds into a parameter when a
    parameter is their only non-literal input (no node of their own)."""
    return prim in _PARAM_VIEW_OPS
