"""Fusion-aware graph coarsening: MOIRAI's Algorithm 1 (GCOF) with the rules as data.

MOIRAI (Zhang et al. 2023, Sec. III-B) groups the ops an inference backend would fuse
(Table I: conv+bn, conv+bn+relu, conv+bn+add+relu) before placing them, so that a
fused kernel is never split over devices. A rule is an ordered list of op types
along a data-flow chain; a chain is fused when it matches a whole rule (a matched
prefix alone is "bound" and released again, their unbind()), and only along a
"direct" connection (the producer's outputs feed the next op of the chain and
nothing else) or a "multi-input" one (the next op also reads other tensors); a
producer with outputs used elsewhere ("multi-output") breaks the chain, as its result
must be written to memory anyway.

Here: `FusionRule(name, pattern, tail)`, a pattern of op-type sets (ONNX operator
names and JAX primitive names side by side) and an optional set of op types that may
repeat after it (elementwise epilogues). Walking the graph in topological order, each
op not yet fused heads the longest chain that completes a rule; view ops (reshape,
squeeze, ...) inside a chain are absorbed, since they move no data.

No cycle. Inside a fused chain every op but the last sends its outputs only to the
next one, so edges leave a group only from its last op (its "exit"), which every
member reaches. A quotient edge G -> H thus gives a path exit(G) ~> exit(H) in the
original DAG, and a quotient cycle would give a cycle through exits: the fused graph
is a DAG (CompGraph's constructor checks it again).

Cost, as the backend runs a fused kernel: one launch, the FLOPs of all members, and
one memory round trip: the group's external inputs (each read once) and parameters
plus the outputs that leave the group or the graph; intermediates stay on chip.
time = max(sum of member compute times, bytes / memory bandwidth) + launch, on the
graph's device profile (`meta["device"]`). A member's compute time is its roofline
compute term: recovered from its own work when it was compute-bound (so its dtype
and unit are the importer's), else FLOPs / peak (dtype `meta["dtype"]`, default
fp32), capped by its memory time (a memory-bound op hides its compute). Since each
term of the group is at most the sum of its members' terms, a fused node never costs
more than its members did. Graphs without FLOP/byte attributes or a device profile
(generated ones) keep the sum of their members' work.

The mapping back: `meta["fusion_members"][i]` lists the input graph's nodes of fused
node i (head first), `expand_assignment` maps a partition back; `coarsen_members` of
an already coarsened input are composed, so `coarsen.expand_assignment` still reaches
the raw graph.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers import roofline as rl
from jaxplace.importers.builder import US  # the importers' time unit: the microsecond
from jaxplace.importers.coarsen import expand_members
from jaxplace.importers.devices import DeviceProfile

CONV = frozenset({"Conv", "ConvTranspose", "ConvInteger", "QLinearConv",
                  "conv_general_dilated"})
MATMUL = frozenset({"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum",
                    "FusedMatMul", "dot_general", "ragged_dot_general"})
BATCHNORM = frozenset({"BatchNormalization"})
ADD = frozenset({"Add", "Sum", "add", "add_any"})
ACTIVATION = frozenset({
    "Relu", "LeakyRelu", "PRelu", "Gelu", "FastGelu", "BiasGelu", "Sigmoid", "Tanh",
    "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Mish", "Clip",
    "ThresholdedRelu",
    # JAX: relu is max(x, 0), sigmoid is logistic, gelu is erf- or tanh-based
    "max", "tanh", "logistic", "erf", "clamp",
})
ELEMENTWISE = frozenset(rl.ELEMENTWISE_OPS | rl.TRANSCENDENTAL_OPS)


@dataclass(frozen=True)
class FusionRule:
    """Ops along a chain that one kernel runs.

    Attributes:
        name: a label (counted in `meta["fusion_rules"]`).
        pattern: op types per position, in data-flow order.
        tail: op types that may follow the pattern any number of times.
    """

    name: str
    pattern: tuple[frozenset[str], ...]
    tail: frozenset[str] = frozenset()


DEFAULT_RULES: tuple[FusionRule, ...] = (
    # MOIRAI Table I (Eigen's GPU kernels)
    FusionRule("conv_bn", (CONV, BATCHNORM)),
    FusionRule("conv_bn_relu", (CONV, BATCHNORM, ACTIVATION)),
    FusionRule("conv_bn_add_relu", (CONV, BATCHNORM, ADD, ACTIVATION)),
    # cuDNN / XLA conv and GEMM epilogues: bias, residual add, activation; a JAX
    # batch norm in inference is such an elementwise chain (sub, mul, add)
    FusionRule("conv_epilogue", (CONV, ELEMENTWISE), ELEMENTWISE),
    FusionRule("matmul_bias_act", (MATMUL, ADD, ACTIVATION)),
    FusionRule("matmul_bias", (MATMUL, ADD)),
    FusionRule("matmul_act", (MATMUL, ACTIVATION)),
    # loop fusion of elementwise chains (add+relu, scale+shift, gelu pieces, ...)
    FusionRule("elementwise_chain", (ELEMENTWISE, ELEMENTWISE), ELEMENTWISE),
)


def _next_in_chain(graph: CompGraph, v: int, taken: np.ndarray) -> int | None:
    """The op that alone consumes v's outputs (a direct connection), if free."""
    succ = graph.successors(v)
    if len(succ) != 1 or taken[succ[0]]:
        return None
    return int(succ[0])


def _match(graph: CompGraph, head: int, rules, taken: np.ndarray) -> tuple[list, str]:
    """The longest chain from `head` that completes a rule: (members, rule name)."""
    ops = graph.op_types
    best: tuple[list, str] = ([head], "")
    for rule in rules:
        if ops[head] not in rule.pattern[0]:
            continue
        chain, pos, v = [head], 1, head
        while True:
            w = _next_in_chain(graph, v, taken)
            if w is None:
                break
            if rl.classify(ops[w]) == "view":
                chain.append(w)  # moves no data: rides along
                v = w
                continue
            if pos < len(rule.pattern) and ops[w] in rule.pattern[pos]:
                pos += 1
            elif pos >= len(rule.pattern) and ops[w] in rule.tail:
                pass
            else:
                break
            chain.append(w)
            v = w
            if pos >= len(rule.pattern):
                done = len(chain)
                if done > len(best[0]):
                    best = (chain[:done], rule.name)
    return best


def _groups(graph: CompGraph, rules) -> tuple[np.ndarray, list[list[int]], list[str]]:
    n = graph.num_nodes
    taken = np.zeros(n, dtype=bool)
    group = np.full(n, -1)
    members: list[list[int]] = []
    names: list[str] = []
    for v in graph.topo_order:
        v = int(v)
        if taken[v]:
            continue
        chain, name = _match(graph, v, rules, taken)
        taken[chain] = True
        group[chain] = len(members)
        members.append(chain)
        names.append(name)
    return group, members, names


@dataclass(frozen=True)
class _Profile:
    """The roofline numbers of `graph.meta["device"]` (seconds, bytes, FLOP/s)."""

    mem_bw: float
    link_bw: float
    launch_s: float
    matrix: float
    vector: float


def _profile(graph: CompGraph) -> _Profile | None:
    """The profile an importer stored in `meta["device"]`, or None (not imported)."""
    dev = graph.meta.get("device")
    if (not isinstance(dev, dict) or graph.meta.get("time_unit") != "us"
            or not all(k in graph.node_attrs for k in ("flops", "bytes_moved", "out_bytes"))):
        return None
    try:
        p = DeviceProfile(str(dev["name"]), "", dict(dev["matrix_flops"]),
                          dict(dev["vector_flops"]), float(dev["mem_bw"]),
                          float(dev["link_bw"]), float(dev["launch_s"]), 0.0)
        dtype = graph.meta.get("dtype", "fp32")
        return _Profile(p.mem_bw, p.link_bw, p.launch_s, p.peak(dtype, matrix=True),
                        p.peak(dtype, matrix=False))
    except (KeyError, TypeError, ValueError):
        return None




def _compute_s(graph: CompGraph, prof: _Profile, v: int) -> tuple[float, float, float]:
    """(compute seconds, memory seconds, launch seconds) of op v's own roofline."""
    a = graph.node_attrs
    launch = prof.launch_s if graph.work[v] > 0 else 0.0  # view ops: no kernel
    mem = float(a["bytes_moved"][v]) / prof.mem_bw
    body = max(graph.work[v] / US - launch, 0.0)
    if body > mem * (1 + 1e-9):  # compute-bound: the importer's own compute term
        return body, mem, launch
    matrix = rl.classify(graph.op_types[v]) == "matrix"
    comp = float(a["flops"][v]) / (prof.matrix if matrix else prof.vector)
    return min(comp, mem), mem, launch


def group_cost(graph: CompGraph, members, prof: _Profile | None = None,
               out_tensors=None, reread_bytes: float = 0.0) -> dict:
    """flops, bytes moved, output bytes and time (us) of `members` run as one kernel.

    Bytes: the members' inputs minus the tensors produced inside the group, each
    external tensor read once, plus the outputs not consumed entirely inside the group.
    `out_tensors`: optional {op: its tensor ids} (saves a scan per call).
    `reread_bytes`: bytes the members' `bytes_moved` count more than once that the
    graph cannot see (a graph input, which is no tensor of it, read by two members).
    """
    prof = prof or _profile(graph)
    if prof is None:
        raise JaxplaceError("fusion costs need node attributes flops, bytes_moved, "
                            "out_bytes and meta['device'] (an imported graph)",
                            field="node_attrs")
    a = graph.node_attrs
    mem_set = set(int(v) for v in members)
    to_bytes = prof.link_bw / US  # tensor sizes of imported graphs are link times in us
    inputs = sum(float(a["bytes_moved"][v] - a["out_bytes"][v]) for v in mem_set)
    outputs = sum(float(a["out_bytes"][v]) for v in mem_set)
    reads: Counter = Counter()
    for v in mem_set:
        for t in graph.consumed_tensors(v):
            reads[int(t)] += 1
    for t, k in reads.items():
        b = float(graph.tensor_size[t]) * to_bytes
        if int(graph.tensor_producer[t]) in mem_set:
            inputs -= k * b  # an intermediate: never read from memory
        else:
            inputs -= (k - 1) * b  # read once by the kernel
    for v in mem_set:
        ts = out_tensors.get(v, ()) if out_tensors is not None else np.flatnonzero(
            graph.tensor_producer == v)
        for t in ts:
            if set(int(c) for c in graph.consumers(t)) <= mem_set:
                outputs -= float(graph.tensor_size[t]) * to_bytes  # never written
    nbytes = max(inputs - reread_bytes, 0.0) + max(outputs, 0.0)
    parts = [_compute_s(graph, prof, int(v)) for v in mem_set]
    compute = sum(c for c, _, _ in parts)
    launch = prof.launch_s if any(lc > 0 for _, _, lc in parts) else 0.0
    time_s = max(compute, nbytes / prof.mem_bw) + launch
    return {"flops": float(sum(a["flops"][v] for v in mem_set)), "bytes_moved": nbytes,
            "out_bytes": max(outputs, 0.0), "time_us": time_s * US}


def fuse(graph: CompGraph, rules=DEFAULT_RULES) -> CompGraph:
    """Fuse the op chains that match `rules` (module docstring) into single nodes.

    Args:
        graph: a graph with `op_types` (imported graphs have them).
        rules: a sequence of `FusionRule`s (default `DEFAULT_RULES`).

    Returns:
        The fused DAG; `meta["fusion_members"]`, `meta["fusion_rules"]` (firings per
        rule) and `meta["fusion_original_nodes"]` describe the grouping.
    """
    if graph.op_types is None:
        raise JaxplaceError("fusion needs op types on the nodes", field="op_type")
    rules = tuple(rules)
    for r in rules:
        if not isinstance(r, FusionRule) or not r.pattern:
            raise JaxplaceError(f"must be FusionRules with a pattern, got {r!r}",
                                field="rules")
    _, members, rule_of = _groups(graph, rules)
    meta = _meta(graph, members, rule_of, _profile(graph) is not None)
    return merge_groups(graph, members, ["+".join(graph.op_types[v] for v in m)
                                         for m in members], meta)


def merge_groups(graph: CompGraph, members, op_types, meta: dict,
                 reread_bytes=None) -> CompGraph:
    """`graph` with each list of `members` (every node in exactly one; head first, whose
    name and id the group keeps) made one node of type `op_types[i]`, costed by
    `group_cost` when the graph has a device profile (else the sum of its members'
    work); `meta` is the new graph's; `reread_bytes[i]`: `group_cost`'s, per group.
    No cycle when only a group's last op sends edges out of it (the module
    docstring's argument)."""
    n = graph.num_nodes
    group = np.full(n, -1)
    for i, m in enumerate(members):
        group[m] = i
    if (group < 0).any():
        raise JaxplaceError("every node must be in one group", field="members")
    k = len(members)
    prof = _profile(graph)
    tensors, internal = [], np.zeros(k)
    for t in range(graph.num_tensors):
        p = int(group[graph.tensor_producer[t]])
        cs = sorted({int(group[c]) for c in graph.consumers(t)} - {p})
        if cs:
            tensors.append((p, float(graph.tensor_size[t]), cs))
        elif len(graph.consumers(t)):
            internal[p] += graph.tensor_size[t]
    work = np.bincount(group, weights=graph.work, minlength=k)
    attrs = {key: np.bincount(group, weights=arr.astype(np.float64), minlength=k)
             for key, arr in graph.node_attrs.items()
             if np.issubdtype(arr.dtype, np.number) and arr.dtype != bool}
    if prof is not None:
        out_tensors: dict[int, list[int]] = {}
        for t, u in enumerate(graph.tensor_producer):
            out_tensors.setdefault(int(u), []).append(t)
        for i, m in enumerate(members):
            if len(m) > 1:
                c = group_cost(graph, m, prof, out_tensors,
                               reread_bytes[i] if reread_bytes is not None else 0.0)
                work[i] = c["time_us"]
                attrs["bytes_moved"][i] = c["bytes_moved"]
                attrs["out_bytes"][i] = c["out_bytes"]
    attrs["fused_count"] = np.asarray([len(m) for m in members], dtype=np.int64)
    size_out = np.bincount(group, weights=graph.size_out, minlength=k) - internal
    names = None if graph.names is None else [
        graph.names[m[0]] + (f"(+{len(m) - 1})" if len(m) > 1 else "") for m in members]
    return CompGraph(work, (), np.bincount(group, weights=graph.size_param, minlength=k),
                     np.maximum(size_out, 0.0), tensors=tensors, names=names,
                     op_types=list(op_types),
                     node_ids=[graph.node_ids[m[0]] for m in members], node_attrs=attrs,
                     meta=meta)


def _meta(graph: CompGraph, members, rule_of, costed: bool) -> dict:
    meta = dict(graph.meta)
    meta["fusion_members"] = members
    meta["fusion_original_nodes"] = graph.num_nodes
    meta["fusion_rules"] = dict(Counter(r for r in rule_of if r))
    meta["fusion_rule_of"] = list(rule_of)
    meta["fusion_cost"] = "roofline" if costed else "sum of members"
    if "coarsen_members" in graph.meta:  # compose, so coarsen's mapping still works
        inner = graph.meta["coarsen_members"]
        meta["coarsen_members"] = [[w for v in m for w in inner[v]] for m in members]
    else:
        meta["coarsen_members"] = members
        meta["coarsen_original_nodes"] = graph.num_nodes
        if graph.names is not None:  # as coarsen(): the original ops' names (results)
            meta["coarsen_original_names"] = list(graph.names)
    return meta


def expand_assignment(fused: CompGraph, assignment) -> np.ndarray:
    """Map a block index per fused node to a block index per node of fuse()'s input."""
    return expand_members(fused, assignment, "fusion", "fused")
