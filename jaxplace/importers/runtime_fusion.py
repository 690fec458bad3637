"""Cost an ONNX graph as an optimizing runtime launches it, not as it was exported.

An exporter writes what the framework's kernels do in several small ops: the bias of
a linear layer as a separate Add, GELU as a chain of Mul/Add/Tanh (or Erf), attention
as MatMul, scale, mask, Softmax, MatMul, and the head split as Split/Reshape/Transpose
copies. ONNX Runtime's graph optimizations (and eager PyTorch, which never had those
ops apart) launch one kernel for each of them, so costing the graph as exported
charges a launch and a memory round trip per piece: the same module then costs two
to three times more through `from_onnx` than through `jaxplace.torch`. This pass
finds the patterns on the folded graph (`onnx_fold.FoldedModel`: producers,
consumers, constant values; never node names) and costs each as one kernel:

- "gemm": MatMul whose only consumer is an Add of a constant bias over its last axis
  (one value per output column) -> one Gemm (as torch's addmm, ORT's MatMulAddFusion);
- "gelu": the elementwise cone of a Tanh or Erf (or Sigmoid) between one tensor x and
  one output that computes GELU, tanh approximation or erf form (or SiLU, x *
  sigmoid(x)) -> one Gelu (Swish) op. The cone is found on the graph and then checked
  by evaluating it at 41 points against the function, so every operand order and
  constant placement an exporter writes is matched, and nothing else is; opset 20's
  Gelu op is one op already;
- "layer_norm": the cone of a ReduceMean over the last axis that evaluates to a layer
  norm (each output column an affine map of the standardized input's, on random
  rows) -> one LayerNormalization: opset < 17 has no such op and the exporters write
  9 (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add);
- "attention": Softmax over the last axis whose input comes from a MatMul (Q K^T)
  through optional scale (Mul/Div by a scalar), mask (Add, Where) and view ops, each
  with that single consumer, and whose output feeds only a MatMul (P V); scalar
  Mul/Div whose only consumer is the first MatMul (the exporters scale Q and K^T
  each by sqrt(scale)) join it -> one Attention op (torch's
  scaled_dot_product_attention, ORT's MultiHeadAttention);
- "free": Transpose, Split, Expand, and a select (Gather of one constant index) or
  Slice of constant bounds on a computed tensor, that move no data a runtime has to move:
  every consumer, through views (Reshape, Squeeze, ...) and other such ops, is a
  matrix op, a fused group above or a Concat (a GEMM reads its operands strided:
  ORT's MatMulTransposeFusion, torch's views; a Concat copies its inputs anyway),
  or the op only re-views its input (a Transpose of size-1 axes, a Split into
  contiguous chunks), or its outputs are never read (a runtime removes dead nodes)
  -> cost 0, no launch, as torch's views (transpose, split, expand, select, slice);
  and a Cast to the type its input already has (an identity). Their op type becomes
  "<op>(view)" ("Transpose(view)"), which `roofline.classify` calls a view, so that
  costing by op type elsewhere (the cluster objectives) charges them no launch.

A fused group is one node with the FLOPs of all its members (nothing is dropped: a
Gemm still does its bias adds) and one memory round trip: the inputs it reads from
outside the group, its parameters and its output; time = max(sum of the members'
compute terms, bytes / memory bandwidth) + one launch (`fusion.group_cost`, the
rule of `--coarsen fusion`). Ops outside every pattern keep their cost, and a graph
without the patterns is returned unchanged. Members map back to the ONNX ops through
`meta["coarsen_members"]` (as coarsening's), so results still name every ONNX op.
`meta["runtime_fusion"]` counts each pattern; `summary_line` says it in one line.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from jaxplace.importers import roofline as rl
from jaxplace.importers.coarsen import expand_members
from jaxplace.importers.fusion import merge_groups
from jaxplace.importers.onnx_fold import itemsize, require_onnx, subgraph_inputs

MODES = ("runtime", "none")
#: Fused op types, as the runtime kernels are named.
FUSED_OP = {"gemm": "Gemm", "gelu": "Gelu", "silu": "Swish",
            "layer_norm": "LayerNormalization", "attention": "Attention"}
_ELT = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Tanh", "Erf", "Sigmoid", "Sqrt",
                  "Reciprocal", "ReduceMean"})
_ANCHORS = {"Tanh": "gelu", "Erf": "gelu", "Sigmoid": "silu", "ReduceMean": "layer_norm"}
_PASS = frozenset({"Transpose", "Split", "Expand"})
_MATRIX = frozenset({"MatMul", "Gemm", "MatMulInteger", "FusedMatMul", "Einsum"})
_MAX_CONE = 16  # nodes: the longest GELU export is 9


@dataclass
class Plan:
    """What the pass found. Node indices are positions in `FoldedModel.compute`
    (= node indices of the graph `from_onnx` builds before fusion)."""

    groups: list[tuple[str, list[int]]] = field(default_factory=list)  # head first
    free: set[int] = field(default_factory=set)
    reread: list[float] = field(default_factory=list)  # per group: graph-input bytes
    # its members' bytes count more than once (the fused kernel reads them once)

    def fused(self) -> set[int]:
        return {v for _, m in self.groups for v in m}

    def counts(self) -> dict[str, int]:
        c = Counter(p for p, _ in self.groups)
        out = {p: int(c[p]) for p in FUSED_OP if c[p]}
        if self.free:
            out["free"] = len(self.free)
        return out


class _View:
    """Producers, consumers and constant values of the folded graph's compute ops."""

    def __init__(self, folded):
        g = folded.model.graph
        self.folded = folded
        self.nodes = [g.node[i] for i in folded.compute]
        self.prod: dict[str, int] = {}
        self.cons: dict[str, list[int]] = {}
        for v, n in enumerate(self.nodes):
            for o in n.output:
                if o:
                    self.prod[o] = v
            # a Loop / If body's reads count: such a tensor is neither dead nor internal
            for s in dict.fromkeys([*(s for s in n.input if s), *sorted(subgraph_inputs(n))]):
                if s not in folded.const:
                    self.cons.setdefault(s, []).append(v)
        self.graph_out = {o.name for o in g.output}

    def op(self, v: int) -> str:
        n = self.nodes[v]
        return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"

    def tensors_in(self, v: int) -> list[str]:
        """Non-constant inputs of v."""
        return [s for s in self.nodes[v].input if s and s not in self.folded.const]

    def consts_in(self, v: int) -> list[str]:
        return [s for s in self.nodes[v].input if s and s in self.folded.const]

    def outs(self, v: int) -> list[str]:
        return [o for o in self.nodes[v].output if o]

    def single_consumer(self, v: int) -> int | None:
        """v's only consumer when v has one output, read by one op, not a graph output."""
        outs = self.outs(v)
        if len(outs) != 1 or outs[0] in self.graph_out:
            return None
        cs = self.cons.get(outs[0], [])
        return cs[0] if len(cs) == 1 else None

    def scalar(self, s: str) -> float | None:
        val = self.folded.values.get(s)
        if val is None or np.asarray(val).size != 1:
            return None
        try:
            return float(np.asarray(val, dtype=np.float64).reshape(()))
        except (TypeError, ValueError):
            return None

    def shape(self, s: str):
        return self.folded.info.get(s, (None, 0))[0]

    def value(self, s: str):
        """A constant's value as float64 (None when not evaluated)."""
        val = self.folded.values.get(s)
        if val is None:
            return None
        try:
            return np.asarray(val, dtype=np.float64)
        except (TypeError, ValueError):
            return None


def find(folded) -> Plan:
    """The patterns of the module docstring in `folded` (an `onnx_fold.FoldedModel`)."""
    view = _View(folded)
    plan = Plan()
    taken: set[int] = set()
    for v in range(len(view.nodes)):
        if view.op(v) == "Softmax" and v not in taken:
            m = _attention(view, v, taken)
            if m is not None:
                plan.groups.append(("attention", m))
                taken.update(m)
    for v in range(len(view.nodes)):
        if view.op(v) in _ANCHORS and v not in taken:
            found = _activation(view, v, taken)
            if found is not None:
                plan.groups.append(found)
                taken.update(found[1])
    for v in range(len(view.nodes)):
        if view.op(v) == "MatMul" and v not in taken:
            a = _bias_add(view, v, taken)
            if a is not None:
                plan.groups.append(("gemm", [v, a]))
                taken.update((v, a))
    plan.free = _free_layout(view, plan)
    plan.reread = [_graph_input_rereads(view, m) for _, m in plan.groups]
    return plan


def _graph_input_rereads(view: _View, members) -> float:
    """Bytes of graph inputs (no producer, not constant) that several members read,
    beyond the first read: `fusion.group_cost` sees only the graph's tensors."""
    readers: Counter = Counter(s for v in members for s in set(view.tensors_in(v))
                               if s not in view.prod)
    total = 0.0
    for s, k in readers.items():
        shape, et = view.folded.info.get(s, (None, 1))
        if k > 1 and shape is not None:
            total += (k - 1) * rl.numel(shape) * itemsize(require_onnx(), et)
    return total


# -- GEMM ---------------------------------------------------------------------------

def _bias_add(view: _View, v: int, taken) -> int | None:
    """The Add that adds a constant bias (one value per output column) to MatMul v's
    output, when it is v's only consumer."""
    a = view.single_consumer(v)
    if a is None or a in taken or view.op(a) != "Add" or len(view.tensors_in(a)) != 1:
        return None
    consts = view.consts_in(a)
    out = view.shape(view.outs(v)[0])
    b = view.shape(consts[0]) if len(consts) == 1 else None
    if not out or b is None or rl.numel(b) != out[-1] or (b and b[-1] != out[-1]):
        return None
    if view.shape(view.outs(a)[0]) != out:  # the bias must not broadcast the output
        return None
    return a


# -- attention ----------------------------------------------------------------------

def _attention(view: _View, s: int, taken) -> list[int] | None:
    node = view.nodes[s]
    x = view.tensors_in(s)
    rank = len(view.shape(x[0]) or []) if x else 0
    # opset 13 made -1 the default axis; before, 1 (and the input seen as 2-D from the
    # axis on, which is a last-axis softmax only when axis is the last)
    axis = next((a.i for a in node.attribute if a.name == "axis"),
                -1 if view.folded.opset >= 13 else 1)
    if len(x) != 1 or rank < 2 or axis % rank != rank - 1:
        return None
    chain, t = [], x[0]
    for _ in range(6):  # back from the softmax: views, scale, mask, to Q K^T
        p = view.prod.get(t)
        if p is None or p in taken or view.single_consumer(p) is None:
            return None
        op = view.op(p)
        if op == "MatMul":
            break
        if rl.classify(op) == "view" or (op in ("Mul", "Div") and _scaled(view, p)):
            t = view.tensors_in(p)[0] if view.tensors_in(p) else None
        elif op == "Add" and len(view.tensors_in(p)) in (1, 2):
            t = _score_input(view, p, view.tensors_in(p))
        elif op == "Where" and len(view.nodes[p].input) == 3:  # masked_fill
            t = _score_input(view, p, [u for u in view.nodes[p].input[1:]
                                       if u and u not in view.folded.const])
        else:
            return None
        if t is None:
            return None
        chain.append(p)
    else:
        return None
    m1 = p
    # forward from the softmax: views, then P V
    w = view.single_consumer(s)
    after = []
    while w is not None and w not in taken and rl.classify(view.op(w)) == "view":
        after.append(w)
        w = view.single_consumer(w)
    if w is None or w in taken or view.op(w) != "MatMul":
        return None
    prev = view.outs(after[-1] if after else s)[0]
    if view.nodes[w].input[0] != prev:
        return None
    pre = []
    for q in view.tensors_in(m1):
        p = view.prod.get(q)
        if p is not None and p not in taken and view.op(p) in ("Mul", "Div") \
                and _scaled(view, p) and view.single_consumer(p) == m1:
            pre.append(p)
    return [m1, *sorted(set(pre) | set(chain) | {s} | set(after)), w]


def _scaled(view: _View, v: int) -> bool:
    """v multiplies (divides) one tensor by a scalar constant."""
    consts = view.consts_in(v)
    if len(view.tensors_in(v)) != 1 or len(consts) != 1 or view.scalar(consts[0]) is None:
        return False
    return view.op(v) == "Mul" or view.nodes[v].input[1] == consts[0]


def _score_input(view: _View, p: int, ins) -> str | None:
    """The scores among the inputs of a mask Add / Where `p`: the one tensor that
    comes, through single-consumer scale, mask and view ops, from a MatMul (the
    other, the mask, comes from the graph's mask input)."""
    cands = [u for u in ins if _from_matmul(view, u, p)]
    return cands[0] if len(cands) == 1 else None


def _from_matmul(view: _View, t: str, reader: int, steps: int = 5) -> bool:
    """`t` is made, through ops that only `reader`'s chain reads (scale, mask, views),
    by a MatMul, within `steps` ops."""
    q = view.prod.get(t)
    if steps <= 0 or q is None or view.single_consumer(q) != reader:
        return False
    if view.op(q) == "MatMul":
        return True
    if view.op(q) not in ("Mul", "Div", "Add", "Where") and rl.classify(view.op(q)) != "view":
        return False
    return any(_from_matmul(view, u, q, steps - 1) for u in view.tensors_in(q))


# -- GELU / SiLU / LayerNorm cones -------------------------------------------------------

def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _gelu_erf(x):
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))


def _silu(x):
    return x / (1.0 + np.exp(-x))


_FUNCTIONS = {"gelu": (_gelu_tanh, _gelu_erf), "silu": (_silu,)}


def _eligible(view: _View, v: int, taken, vectors: bool = True) -> bool:
    """An op of a cone: elementwise (or a mean over the last axis, keeping it), its
    constants known scalars or (`vectors`: a layer norm's scale and shift) vectors
    along the last axis."""
    if v in taken or view.op(v) not in _ELT or len(view.outs(v)) != 1:
        return False
    if view.op(v) == "ReduceMean":
        return _last_axis_mean(view, v)
    for c in view.consts_in(v):
        val = view.value(c)
        if val is None or (val.size != 1 and (not vectors or val.ndim < 1
                                              or val.size != val.shape[-1])):
            return False
    return True


def _last_axis_mean(view: _View, v: int) -> bool:
    """ReduceMean over the last axis only, keeping it (the axes an attribute before
    opset 18, an input from it)."""
    node = view.nodes[v]
    ins = view.tensors_in(v)
    shape = view.shape(ins[0]) if len(ins) == 1 else None
    if not shape or next((a.i for a in node.attribute if a.name == "keepdims"), 1) != 1:
        return False
    axes = next((list(a.ints) for a in node.attribute if a.name == "axes"), None)
    if axes is None and len(node.input) > 1 and node.input[1]:
        val = view.value(node.input[1])
        axes = None if val is None else [int(a) for a in val.reshape(-1)]
    return axes is not None and [a % len(shape) for a in axes] == [len(shape) - 1]


def _activation(view: _View, anchor: int, taken) -> tuple[str, list[int]] | None:
    """The largest closed cone around `anchor` (Tanh / Erf / Sigmoid / ReduceMean) that
    evaluates to GELU (SiLU, a layer norm) of one tensor x; (pattern, members) or None."""
    kind = _ANCHORS[view.op(anchor)]
    vectors = kind == "layer_norm"  # GELU / SiLU cones read scalars only (not a bias)
    best = None
    # the nearest x that gives a cone (a zero bias before GELU must not join it), and
    # for it the largest cone
    for x in _candidate_inputs(view, anchor, taken, vectors):
        region = _back_cone(view, anchor, x, taken, vectors)
        if region is None:
            continue
        for _ in range(_MAX_CONE):
            out = _closed_output(view, region)
            if out is not None and (best is None or len(region) > len(best)) \
                    and _computes(view, sorted(region), x, out, kind):
                best = sorted(region)
            if not _grow(view, region, x, taken, vectors):
                break
        if best is not None:
            break
    if best is None:
        return None
    head = next(v for v in best if _reads_outside(view, v, best))
    return kind, [head, *[v for v in best if v != head]]


def _reads_outside(view: _View, v: int, members) -> bool:
    """v reads a tensor made outside the group (the cone's x)."""
    inside = {o for m in members for o in view.outs(m)}
    return any(s not in inside for s in view.tensors_in(v))


def _candidate_inputs(view: _View, anchor: int, taken, vectors: bool) -> list[str]:
    """Tensors behind the anchor, through eligible ops, nearest first."""
    seen, order, frontier = set(), [], [anchor]
    for _ in range(6):
        nxt = []
        for v in frontier:
            for s in view.tensors_in(v):
                if s in seen:
                    continue
                seen.add(s)
                order.append(s)
                p = view.prod.get(s)
                if p is not None and _eligible(view, p, taken, vectors):
                    nxt.append(p)
        frontier = nxt
    return order


def _back_cone(view: _View, anchor: int, x: str, taken, vectors: bool) -> set[int] | None:
    """The anchor and every op between x and it; None if a path leaves the eligible ops
    before reaching x."""
    region, stack = {anchor}, [anchor]
    while stack:
        v = stack.pop()
        for s in view.tensors_in(v):
            if s == x:
                continue
            p = view.prod.get(s)
            if p is None or not _eligible(view, p, taken, vectors):
                return None
            if p not in region:
                region.add(p)
                stack.append(p)
                if len(region) > _MAX_CONE:
                    return None
    return region


def _open_tensors(view: _View, region) -> list[str]:
    return [o for v in region for o in view.outs(v)
            if o in view.graph_out or any(c not in region for c in view.cons.get(o, []))]


def _closed_output(view: _View, region) -> str | None:
    """The one tensor leaving the region, if all the others stay inside."""
    out = _open_tensors(view, region)
    return out[0] if len(out) == 1 else None


def _grow(view: _View, region: set[int], x: str, taken, vectors: bool) -> bool:
    """Add the first (in graph order) outside consumer of the region's open tensors
    whose other inputs are x, constants, or side ops reading only x and constants (a
    layer norm's centred x feeds both its variance and its division, so the division
    waits for the variance); False when there is none to add."""
    inside = {o for v in region for o in view.outs(v)}
    for c in sorted({c for o in _open_tensors(view, region) for c in view.cons.get(o, [])
                     if c not in region}):
        if not _eligible(view, c, taken, vectors):
            continue
        side = []
        for s in view.tensors_in(c):
            if s == x or s in inside:
                continue
            p = view.prod.get(s)
            if p is None or not _eligible(view, p, taken, vectors) \
                    or view.single_consumer(p) != c \
                    or any(t != x for t in view.tensors_in(p)):
                side = None
                break
            side.append(p)
        if side is not None:
            region.update([c, *side])
            return len(region) <= _MAX_CONE
    return False


def _computes(view: _View, members, x: str, out: str, kind: str) -> bool:
    """The region, evaluated on sample rows for x (rows of its last-axis width), is
    `kind`: GELU / SiLU at 41 points each, or a layer norm (each output column an
    affine map of the standardized input's, over 8 random rows)."""
    shape = view.shape(x)
    width = int(shape[-1]) if shape else 1
    # up to 8 columns: per-column constants are sliced to them (what the cone computes
    # does not depend on the width), so a wide model checks as fast as a narrow one
    n = min(width, 8)
    if kind == "layer_norm":
        if n < 2:
            return False
        X = np.random.default_rng(0).standard_normal((8, n)) * 3.0 + 1.0
    else:
        X = np.tile(np.linspace(-5.0, 5.0, 41)[:, None], (1, n))
    env = {x: X}
    with np.errstate(all="ignore"):
        for v in members:  # graph order is topological
            args = []
            for s in view.nodes[v].input[:1 if view.op(v) == "ReduceMean" else None]:
                val = env.get(s)
                if val is None:
                    val = view.value(s)
                    if val is None:
                        return False
                    if val.size > 1:  # a per-column vector (`_eligible`)
                        val = val.reshape(-1)[:n] if val.size == width else None
                    if val is None:
                        return False
                args.append(val)
            try:
                env[view.outs(v)[0]] = _apply(view.op(v), args)
            except ValueError:  # a constant that does not broadcast on the sample
                return False
    y = env.get(out)
    if y is None or np.shape(y) != X.shape or not np.all(np.isfinite(y)):
        return False
    if kind != "layer_norm":
        return any(np.allclose(y, f(X), rtol=1e-5, atol=1e-5) for f in _FUNCTIONS[kind])
    z = (X - X.mean(-1, keepdims=True)) / X.std(-1, keepdims=True)
    for j in range(n):  # y[:, j] = gamma_j * z[:, j] + beta_j, exactly up to epsilon
        a = np.stack([z[:, j], np.ones(len(z))], axis=1)
        coef = np.linalg.lstsq(a, y[:, j], rcond=None)[0]
        if np.abs(a @ coef - y[:, j]).max() > 1e-4 * (1.0 + np.abs(y[:, j]).max()):
            return False
    return True


def _apply(op: str, a):
    from math import erf

    x = np.asarray(a[0], dtype=np.float64)
    if op == "ReduceMean":  # over the last axis, kept (`_last_axis_mean`)
        return x.mean(-1, keepdims=True)
    if op in ("Tanh", "Erf", "Sigmoid", "Sqrt", "Reciprocal"):
        return {"Tanh": np.tanh, "Sqrt": np.sqrt, "Reciprocal": np.reciprocal,
                "Sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
                "Erf": np.vectorize(erf)}[op](x)
    y = np.asarray(a[1], dtype=np.float64)
    return {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
            "Pow": np.power}[op](x, y)


# -- free layout ops ------------------------------------------------------------------

def _free_layout(view: _View, plan: Plan) -> set[int]:
    """Transpose / Split ops a runtime does not run (module docstring)."""
    fused = {v for _, m in plan.groups for v in m}
    # ok[v]: v reads a re-viewed (strided) input as well as a dense one. A node's
    # consumers come after it in graph order, so one pass from the end settles it
    ok = [False] * len(view.nodes)
    for v in reversed(range(len(view.nodes))):
        op = view.op(v)
        if op in _MATRIX or v in fused or op == "Concat":  # Concat copies anyway
            ok[v] = True
        elif rl.classify(op) == "view" or _passes(view, v) or _noop_cast(view, v):
            ok[v] = all(o not in view.graph_out and all(ok[c] for c in view.cons.get(o, []))
                        for o in view.outs(v))
    return {v for v in range(len(view.nodes)) if v not in fused and (
        _noop_cast(view, v) or (_passes(view, v) and (_reviews(view, v) or ok[v])))}


def _noop_cast(view: _View, v: int) -> bool:
    """A Cast to the type its input has already (the TorchScript exporter casts a bool
    mask to bool): an identity, which runtimes remove."""
    if view.op(v) != "Cast":
        return False
    ins = view.tensors_in(v)
    to = next((a.i for a in view.nodes[v].attribute if a.name == "to"), None)
    return len(ins) == 1 and to is not None and view.folded.info.get(ins[0], (None, -1))[1] \
        == to and not any(o in view.graph_out for o in view.outs(v))


def _passes(view: _View, v: int) -> bool:
    """A layout op a consumer can read through (strides, an offset): Transpose, Split,
    Expand (stride 0), and a select (Gather of one constant index) or Slice of
    constant bounds, step 1, on a computed tensor (an embedding lookup, reading a
    table, is a real gather)."""
    op = view.op(v)
    if op in _PASS:
        return True
    node = view.nodes[v]
    if not node.input or node.input[0] in view.folded.const:
        return False
    rest = [s for s in node.input[1:] if s]
    if not all(s in view.folded.const and s in view.folded.values for s in rest):
        return False
    if op == "Gather":
        return len(rest) == 1 and np.asarray(view.folded.values[rest[0]]).size == 1
    if op == "Slice" and len(rest) >= 2:  # data, starts, ends, axes?, steps?
        steps = node.input[4] if len(node.input) > 4 and node.input[4] else None
        return steps is None or bool(np.all(np.asarray(view.folded.values[steps]) == 1))
    return False


def _reviews(view: _View, v: int) -> bool:
    """A Transpose that moves only size-1 axes, or a Split into contiguous chunks:
    the output is its input's bytes, in order."""
    ins = view.tensors_in(v)
    shape = view.shape(ins[0]) if ins else None
    if not shape or any(o in view.graph_out for o in view.outs(v)):
        return False
    node = view.nodes[v]
    if view.op(v) not in ("Transpose", "Split"):
        return False
    if view.op(v) == "Transpose":
        perm = next((list(a.ints) for a in node.attribute if a.name == "perm"),
                    list(range(len(shape)))[::-1])
        moved = [p for p in perm if shape[p] != 1]
        return moved == sorted(moved)
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    axis = axis % len(shape)
    return all(d == 1 for d in shape[:axis])


# -- apply ------------------------------------------------------------------------------

def apply(graph, plan: Plan):
    """`graph` (the as-exported import, free ops already costed 0) with each group
    made one node; unchanged when there is no group."""
    counts = plan.counts()
    n = graph.num_nodes
    meta = dict(graph.meta)
    meta["runtime_fusion"] = counts
    if not plan.groups:
        meta["runtime_fusion_nodes"] = [n, n]
        graph.meta.clear()  # the importer's own graph, just built: nothing else holds it
        graph.meta.update(meta)
        return graph
    in_group = {v: i for i, (_, m) in enumerate(plan.groups) for v in m}
    members, op_types = [], []
    done = set()
    for v in range(n):  # a group takes the place of its first member
        i = in_group.get(v)
        if i is None:
            members.append([v])
            op_types.append(graph.op_types[v])
        elif i not in done:
            done.add(i)
            pattern, m = plan.groups[i]
            members.append(list(m))
            op_types.append(FUSED_OP[pattern])
    meta["runtime_fusion_nodes"] = [n, len(members)]
    meta["runtime_fusion_members"] = members
    meta["runtime_fusion_original_nodes"] = n
    meta["coarsen_members"] = members
    meta["coarsen_original_nodes"] = n
    if graph.names is not None:
        meta["coarsen_original_names"] = list(graph.names)
    reread = [0.0] * len(members)
    for i, m in enumerate(members):
        if len(m) > 1:
            reread[i] = plan.reread[in_group[m[0]]] if plan.reread else 0.0
    return merge_groups(graph, members, op_types, meta, reread)


def expand_assignment(graph, assignment) -> np.ndarray:
    """Map a block index per node of a runtime-fused import to one per ONNX compute op
    (the as-exported graph, `--fusion none`)."""
    return expand_members(graph, assignment, "runtime_fusion", "runtime-fused")


_LABEL = {"gemm": "MatMul+Add -> Gemm", "gelu": "GELU -> Gelu", "silu": "SiLU -> Swish",
          "layer_norm": "LayerNorm pieces -> LayerNormalization",
          "attention": "attention -> Attention", "free": "layout ops free"}


def summary_line(meta) -> str | None:
    """One line saying what the runtime-fusion pass did to an ONNX import (None for
    other graphs)."""
    if meta.get("format") != "onnx":
        return None
    counts = meta.get("runtime_fusion")
    if counts is None:
        return ("runtime fusion: off (--fusion none): every ONNX op costed as exported, "
                "a launch and a memory round trip each")
    nodes = meta.get("runtime_fusion_nodes")
    done = ", ".join(f"{c} {_LABEL[p]}" for p, c in counts.items()) or "no pattern found"
    size = f"; {nodes[0]} ONNX compute ops -> {nodes[1]} nodes" if nodes else ""
    return (f"runtime fusion (costed as ONNX Runtime / eager PyTorch launch it; --fusion "
            f"none: as exported): {done}{size}")
