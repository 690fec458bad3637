"""A JAX program split into pipeline stages that run as jitted functions on devices.

`plan_jax(fn, *args, params=..., k=...)` imports the program with `from_jax` (one node
per equation, call-like equations inlined), splits the equations in program order with
the chain planner (`chain.plan_chain`, every equation boundary a cut position) and
builds one function per stage: stage s evaluates its equations from the parameters,
the program's inputs and the values earlier stages send it, and returns the values
later stages (or the program's outputs) read. `run_stages` jits each stage on its
device (device s of the list) and moves the sent values between them.

The flat program mirrors `from_jax`'s walk (same inlining, same parameter-view
folding), so equation i of it is node i of the graph; `flat_program` checks that the
primitive names agree. Folded parameter views have no node: every stage that reads
one recomputes it from the parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.devices import DeviceProfile
from jaxplace.importers.jax_trace import folds_into_param, from_jax, inline_body
from jaxplace.pipeline.chain import ChainSplit, plan_chain


@dataclass
class FlatEqn:
    """One equation of the flattened program: reads `ins` (value ids, or ("lit", v)
    literals), writes `outs`; `node` is its graph node (None: a folded param view)."""

    eqn: Any
    ins: list
    outs: list[int]
    node: int | None


@dataclass
class FlatProgram:
    """The program as a flat list of equations over numbered values.

    Attributes:
        eqns: the equations in program order.
        kind: value id -> "p" (parameter or a view of one), "x" (program input),
            "c" (constant), "t" (an op's output).
        consts: value id -> the constant's value.
        invals: value ids of the flattened (params, *args) leaves, in order.
        outvals: value ids (or literals) of the outputs; out_tree their structure.
    """

    eqns: list[FlatEqn]
    kind: dict[int, str]
    consts: dict[int, Any]
    invals: list[int]
    outvals: list
    out_tree: Any

    def new(self, kind: str, value: Any = None) -> int:
        vid = len(self.kind)
        self.kind[vid] = kind
        if kind == "c" or value is not None:
            self.consts[vid] = value
        return vid


def _is_literal(a) -> bool:
    from jax.extend.core import Literal

    return isinstance(a, Literal)


def flat_program(fn: Callable, args: Sequence, param_leaves: int,
                 consts_as_params: bool = True) -> FlatProgram:
    """Trace `fn(*args)` and flatten it; the first `param_leaves` input leaves are
    parameters (as `from_jax` with params)."""
    import jax

    closed, shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    prog = FlatProgram([], {}, {}, [], [], jax.tree_util.tree_structure(shape))
    prog.invals = [prog.new("p" if i < param_leaves else "x")
                   for i in range(len(closed.jaxpr.invars))]
    cvals = [_const(prog, c, consts_as_params) for c in closed.consts]
    prog.outvals = _walk(prog, closed.jaxpr, prog.invals, cvals, [0], consts_as_params)
    return prog


def _const(prog: FlatProgram, value, consts_as_params: bool) -> int:
    nbytes = float(np.asarray(value).nbytes) if hasattr(value, "shape") else 0.0
    vid = prog.new("c", value)
    if consts_as_params and nbytes > 8:
        prog.kind[vid] = "p"  # costed as a parameter by from_jax; its value is fixed
    return vid


def _walk(prog: FlatProgram, jaxpr, in_vids, const_vids, counter, consts_as_params):
    env = dict(zip(jaxpr.constvars, const_vids, strict=True))
    env.update(zip(jaxpr.invars, in_vids, strict=True))

    def ref(a):
        return ("lit", a.val) if _is_literal(a) else env[a]

    def kind(r):
        return "c" if isinstance(r, tuple) else prog.kind[r]

    for eqn in jaxpr.eqns:
        ins = [ref(a) for a in eqn.invars]
        body = inline_body(eqn)
        if body is not None:
            inner, consts = body
            sub_in = [prog.new("c", r[1]) if isinstance(r, tuple) else r for r in ins]
            cvals = [_const(prog, c, consts_as_params) for c in consts]
            outs = _walk(prog, inner, sub_in, cvals, counter, consts_as_params)
            for v, r in zip(eqn.outvars, outs, strict=True):
                env[v] = prog.new("c", r[1]) if isinstance(r, tuple) else r
            continue
        live = [r for r in ins if kind(r) != "c"]
        folded = (folds_into_param(eqn.primitive.name) and len(live) == 1
                  and kind(live[0]) == "p" and len(eqn.outvars) == 1)
        outs = [prog.new("p" if folded else "t") for _ in eqn.outvars]
        node = None
        if not folded:
            node, counter[0] = counter[0], counter[0] + 1
        prog.eqns.append(FlatEqn(eqn, ins, outs, node))
        env.update(zip(eqn.outvars, outs, strict=True))
    return [ref(a) for a in jaxpr.outvars]


def _bind(eqn, invals):
    """Evaluate one equation as `jax.core.eval_jaxpr` does (jax >= 0.10)."""
    params = eqn.primitive.get_bind_params(eqn.params)
    with eqn.ctx.manager:
        out = eqn.primitive.bind(*invals, **params)
    return out if eqn.primitive.multiple_results else [out]


@dataclass
class JaxPlan:
    """A JAX program's pipeline split: `split` over the graph's nodes (= equations)."""

    split: ChainSplit
    graph: CompGraph = field(repr=False)
    program: FlatProgram = field(repr=False)
    params: Any = field(repr=False)  # the parameters traced (and run by default)

    @property
    def num_stages(self) -> int:
        return len(self.split.starts)

    def stage_of_eqn(self) -> list[int | None]:
        a = self.split.assignment
        return [None if e.node is None else int(a[e.node]) for e in self.program.eqns]


def plan_jax(fn: Callable, *example_args, k: int, params: Any = None,
             device: str | DeviceProfile = "h100", seed: int = 0) -> JaxPlan:
    """Split `fn(params, *example_args)` (or a `flax.nnx.Module` called on the args)
    into at most k stages at equation boundaries, by the jaxplace planner."""
    import jax

    call, params = _callable(fn, params)
    if params is None:
        raise JaxplaceError("give params (the traced call is fn(params, *args)) or a "
                            "flax.nnx.Module", field="params")
    graph = from_jax(call, *example_args, params=params, device=device)
    n_params = len(jax.tree_util.tree_leaves(params))
    prog = flat_program(call, (params, *example_args), n_params)
    ops = [e.eqn.primitive.name for e in prog.eqns if e.node is not None]
    if tuple(ops) != tuple(graph.op_types or ()):
        raise JaxplaceError(f"the flat program ({len(ops)} equations) does not match "
                            f"the imported graph ({graph.num_nodes} nodes)")
    split = plan_chain(graph, range(graph.num_nodes), k, seed=seed)
    return JaxPlan(split, graph, prog, params)


def _callable(fn, params):
    try:
        from flax import nnx
    except ImportError:  # pragma: no cover - flax is a dependency
        return fn, params
    if params is None and isinstance(fn, nnx.Module):
        graphdef, state = nnx.split(fn)

        def call(state, *a):
            return nnx.merge(graphdef, state)(*a)

        return call, state
    return fn, params


@dataclass(frozen=True)
class Stage:
    """One stage: `fn(param_values, received) -> sent`, the tuples holding the values
    of the value ids `params` (parameter leaves it reads), `reads` (program inputs and
    values earlier stages made) and `sends` (values later stages or the outputs read)."""

    fn: Callable
    params: tuple[int, ...]
    reads: tuple[int, ...]
    sends: tuple[int, ...]


def stage_functions(plan: JaxPlan) -> list[Stage]:
    """The stages of the plan, in pipeline order."""
    prog, stage = plan.program, plan.stage_of_eqn()
    k = plan.num_stages
    producer = {o: stage[i] for i, e in enumerate(prog.eqns) if e.node is not None
                for o in e.outs}
    folds = {o: e for e in prog.eqns if e.node is None for o in e.outs}
    needs: list[set[int]] = [set() for _ in range(k + 1)]  # k: the program's outputs
    for i, e in enumerate(prog.eqns):
        if e.node is not None:
            needs[stage[i]].update(r for r in e.ins if not isinstance(r, tuple))
    needs[k].update(r for r in prog.outvals if not isinstance(r, tuple))
    leaves = {v for v in prog.invals if prog.kind[v] == "p"}
    out = []
    for s in range(k):
        mine = [e for i, e in enumerate(prog.eqns) if stage[i] == s]
        made = {o for e in mine for o in e.outs}
        reads = tuple(sorted(v for v in needs[s] if producer.get(v, s) < s
                             or prog.kind[v] == "x"))
        later = set().union(*needs[s + 1:])
        sends = tuple(sorted(v for v in made if v in later))
        params = tuple(sorted(_param_leaves(needs[s], folds, leaves)))
        out.append(Stage(_stage_fn(prog, mine, folds, params, reads, sends), params,
                         reads, sends))
    return out


def _param_leaves(refs, folds: dict, leaves: set[int]) -> set[int]:
    """The parameter leaves behind value ids `refs`, through folded parameter views."""
    found, todo = set(), [r for r in refs if not isinstance(r, tuple)]
    while todo:
        v = todo.pop()
        if v in leaves:
            found.add(v)
        elif v in folds:
            todo += [r for r in folds[v].ins if not isinstance(r, tuple)]
    return found


def _value(prog: FlatProgram, folds: dict, v: int, env: dict, params: dict):
    """Value `v` in a stage: computed here, a parameter view (recomputed), a parameter
    or input leaf, or a constant."""
    if v in env:
        return env[v]
    if v in folds:
        e = folds[v]
        env.update(zip(e.outs, _bind(e.eqn, [_read(prog, folds, r, env, params)
                                             for r in e.ins]), strict=True))
        return env[v]
    if v in params:
        return params[v]
    return prog.consts[v]


def _read(prog, folds, r, env, params):
    return r[1] if isinstance(r, tuple) else _value(prog, folds, r, env, params)


def _stage_fn(prog, mine, folds, param_ids, reads, sends):
    def f(param_vals, received):
        params = dict(zip(param_ids, param_vals, strict=True))
        env = dict(zip(reads, received, strict=True))
        for e in mine:
            env.update(zip(e.outs, _bind(e.eqn, [_read(prog, folds, r, env, params)
                                                 for r in e.ins]), strict=True))
        return tuple(_value(prog, folds, v, env, params) for v in sends)

    return f


def run_stages(plan: JaxPlan, *args, params: Any = None, devices=None):
    """Run the staged program on `args` (and `params`, default the plan's): stage s
    jitted on devices[s % len(devices)] (default `jax.devices()`), the values it reads
    put on its device with `jax.device_put`. Returns the outputs with the structure of
    the traced function's."""
    import jax

    devices = list(devices or jax.devices())
    params = plan.params if params is None else params
    leaves = jax.tree_util.tree_leaves((params, *args))
    prog = plan.program
    if len(leaves) != len(prog.invals):
        raise JaxplaceError(f"{len(leaves)} input leaves for a program traced with "
                            f"{len(prog.invals)}", field="args")
    store = dict(zip(prog.invals, leaves, strict=True))
    for s, st in enumerate(stage_functions(plan)):
        dev = devices[s % len(devices)]
        put = [jax.device_put(store[v], dev) for v in st.params]
        got = jax.jit(st.fn)(tuple(put), tuple(jax.device_put(store[v], dev)
                                               for v in st.reads))
        store.update(zip(st.sends, got, strict=True))
    folds = {o: e for e in prog.eqns if e.node is None for o in e.outs}
    params_map = dict(zip(prog.invals, leaves, strict=True))
    outs = [_read(prog, folds, r, store, params_map) for r in prog.outvals]
    return jax.tree_util.tree_unflatten(prog.out_tree, outs)
