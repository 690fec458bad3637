"""Runnable pipeline stages cut out of the source ONNX model of a result.

Every compute op the result places (by name, as `jaxplace.importers.from_onnx` named
it) runs in its stage. The folded constant subgraphs that feed a stage (weights made
by ConstantOfShape, Shape arithmetic, ...) are not placement units: each stage that
needs one carries its own copy, with the initializers it reads, so every stage file
runs alone. A stage's inputs are the tensors it reads from the model's inputs or
from earlier stages; its outputs are the tensors later stages read and the model
outputs it produces. Running the stages in pipeline order, feeding each its inputs by
name (`run_stages`), computes what the whole model computes.

    plan = export_onnx_stages("result.json", "stages/")
    outputs = run_stages("stages/", {"X": x})          # needs onnxruntime
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from jaxplace.errors import JaxplaceError
from jaxplace.formats import read_json
from jaxplace.formats.results import model_provenance
from jaxplace.importers.onnx_fold import (
    fold,
    itemsize,
    load_model,
    node_names,
    require_onnx,
    subgraph_inputs,
)

FORMAT = "jaxplace-onnx-stages/1"
EXTERNAL_OVER = 1.5e9  # bytes of weights above which a stage keeps them in a side file


@dataclass
class StageCut:
    """One stage of the model: `nodes` are ONNX node indices in graph order (its own
    compute ops and the constant nodes it needs), `ops` the names of its compute ops."""

    block: int
    ops: list[str] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    initializers: list[str] = field(default_factory=list)


def _reads(node) -> list[str]:
    return list(dict.fromkeys([s for s in node.input if s] + sorted(subgraph_inputs(node))))


def cut_stages(model, op_block: Mapping[str, int], source: str = "result") -> list[StageCut]:
    """The stages of `model` (a ModelProto) given each compute op's block, in pipeline
    order (a topological order of the blocks; ties by block number)."""
    g = model.graph
    names = node_names(g)
    index = {s: i for i, s in enumerate(names)}
    missing = [s for s in op_block if s not in index]
    if missing:
        raise JaxplaceError(f"op {missing[0]!r} of the result is not a node of the model "
                            f"({len(missing)} such): the result was made from another "
                            "model", source=source, field="node_ids")
    block_of = {index[s]: int(b) for s, b in op_block.items()}
    inits = {t.name for t in g.initializer}
    graph_inputs = {i.name for i in g.input} - inits
    producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    cuts: dict[int, StageCut] = {}
    for i in sorted(block_of):
        cuts.setdefault(block_of[i], StageCut(block_of[i])).nodes.append(i)
    graph_outputs = [o.name for o in g.output]
    last_needs = [t for t in graph_outputs if producer.get(t) is not None
                  and producer[t] not in block_of]
    deps: dict[int, set[int]] = {b: set() for b in cuts}
    for cut in cuts.values():
        _close(g, cut, block_of, producer, inits, graph_inputs, deps[cut.block])
    order = pipeline_order(deps, source)
    if last_needs:  # model outputs that are constants: the last stage makes them
        last = cuts[order[-1]]
        last.nodes.extend(producer[t] for t in last_needs)
        _close(g, last, block_of, producer, inits, graph_inputs, deps[last.block])
    read_by = {t for c in cuts.values() for t in c.inputs}
    for cut in cuts.values():
        own = {i for i in cut.nodes if block_of.get(i) == cut.block}
        cut.ops = [names[i] for i in cut.nodes if i in own]
        made = [o for i in cut.nodes if i in own for o in g.node[i].output if o]
        made += [t for t in last_needs if cut.block == order[-1]]
        cut.outputs = [t for t in dict.fromkeys(made) if t in read_by or t in graph_outputs]
        if not cut.outputs and made:  # a dead end: a model needs an output
            cut.outputs = made[-1:]
    return [cuts[b] for b in order]


def _close(g, cut, block_of, producer, inits, graph_inputs, deps) -> None:
    """Pull in the unplaced (constant) nodes `cut` needs; set its inputs and
    initializers; record the blocks it reads from in `deps`."""
    have = set(cut.nodes)
    stack = list(cut.nodes)
    inputs, used_inits = [], []
    while stack:
        i = stack.pop()
        for t in _reads(g.node[i]):
            if t in inits:
                used_inits.append(t)
                continue
            if t in graph_inputs:
                inputs.append(t)
                continue
            p = producer.get(t)
            if p is None or p in have:
                continue
            b = block_of.get(p)
            if b is None:  # a folded constant node: this stage computes its own copy
                have.add(p)
                stack.append(p)
            elif b != cut.block:
                inputs.append(t)
                deps.add(b)
    cut.nodes = sorted(have)
    produced = {o for i in cut.nodes for o in g.node[i].output}
    first_use = {}
    for pos, i in enumerate(cut.nodes):
        for t in _reads(g.node[i]):
            first_use.setdefault(t, pos)
    cut.inputs = sorted({t for t in inputs if t not in produced}, key=first_use.get)
    cut.initializers = sorted(set(used_inits))


def pipeline_order(deps: dict[int, set[int]], source: str) -> list[int]:
    indeg = {b: len(d) for b, d in deps.items()}
    users: dict[int, list[int]] = {b: [] for b in deps}
    for b, d in deps.items():
        for a in d:
            users[a].append(b)
    heap = [b for b, n in indeg.items() if n == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        b = heapq.heappop(heap)
        order.append(b)
        for c in users[b]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, c)
    if len(order) != len(deps):
        stuck = sorted(b for b in deps if b not in order)
        raise JaxplaceError(f"blocks {stuck} read from each other in both directions (a "
                            "non-contiguous split): runnable stages need a contiguous "
                            "partition", source=source, field="assignment")
    return order


def stage_model(model, cut: StageCut, types: Mapping, name: str):
    """The ModelProto of one stage."""
    onnx = require_onnx()
    from onnx import helper

    g = model.graph
    inits = {t.name: t for t in g.initializer}

    def vi(t):
        if t in types:
            return types[t]
        return helper.make_tensor_value_info(t, onnx.TensorProto.UNDEFINED, None)

    graph = helper.make_graph([g.node[i] for i in cut.nodes], name,
                              [vi(t) for t in cut.inputs], [vi(t) for t in cut.outputs],
                              [inits[t] for t in cut.initializers])
    m = helper.make_model(graph, opset_imports=list(model.opset_import))
    m.ir_version = max(int(model.ir_version), 4)  # initializers need not be inputs
    m.producer_name = "jaxplace export"
    m.functions.extend(model.functions)
    return m


def tensor_bytes(onnx, folded, name: str) -> int | None:
    """Bytes of tensor `name` by the folded model's static shape (None: unknown)."""
    shape, et = folded.info.get(name, (None, 1))
    if shape is None:
        return None
    n = 1
    for d in shape:
        n *= int(d)
    return n * itemsize(onnx, et)


def _value_types(model) -> dict:
    """Declared or inferred type of every tensor, symbolic dimensions kept, so that a
    stage runs at any batch size the model runs at."""
    onnx = require_onnx()
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # a model over 2 GB or an odd op: the declared types only
        inferred = model
    g = inferred.graph
    out = {}
    for v in [*g.value_info, *g.output, *g.input]:
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type:
            out[v.name] = v
    return out


def export_onnx_stages(model_path: str, op_block: Mapping[str, int], out_dir: str, *,
                       devices: Mapping[int, str] | None = None,
                       dim_values: Mapping[str, int] | None = None,
                       provenance: Mapping | None = None, source: str = "result") -> dict:
    """Write `out_dir/stage_<i>.onnx` per stage (pipeline order) and
    `out_dir/plan.json`; returns the plan. Tensor bytes are at `dim_values` (other
    symbolic dimensions 1)."""
    onnx = require_onnx()
    model, _ = load_model(model_path)
    full = onnx.load(model_path)  # with external data: the stages carry the weights
    cuts = cut_stages(full, op_block, source)
    folded = fold(model, dict(dim_values or {}), 1, model_path)
    types = _value_types(model)
    for t, (_, et) in folded.info.items():  # not typed by the model: the folded type
        if t not in types and et:
            types[t] = onnx.helper.make_tensor_value_info(t, et, None)

    def nbytes(t):
        return tensor_bytes(onnx, folded, t)

    os.makedirs(out_dir, exist_ok=True)
    made_in = {t: s for s, c in enumerate(cuts) for t in c.outputs}
    stages = []
    for s, cut in enumerate(cuts):
        fname = f"stage_{s}.onnx"
        m = stage_model(full, cut, types, f"{full.graph.name or 'model'}_stage_{s}")
        weights = sum(nbytes(t) or 0 for t in cut.initializers)
        path = os.path.join(out_dir, fname)
        if weights > EXTERNAL_OVER:
            onnx.save(m, path, save_as_external_data=True, location=fname + ".data")
        else:
            onnx.save(m, path)
        stages.append({
            "stage": s, "block": cut.block,
            "device": (devices or {}).get(cut.block, "accel"), "file": fname,
            "ops": cut.ops, "constant_nodes": len(cut.nodes) - len(cut.ops),
            "inputs": [{"name": t, "bytes": nbytes(t), "from_stage": made_in.get(t)}
                       for t in cut.inputs],
            "outputs": [{"name": t, "bytes": nbytes(t),
                         "to_stages": [j for j, c in enumerate(cuts) if t in c.inputs]}
                        for t in cut.outputs],
            "weight_bytes": weights})
    init_names = {t.name for t in full.graph.initializer}
    plan = {"format": FORMAT, "model": dict(provenance or {"path": model_path}),
            "dims": dict(dim_values or {}),
            "bytes_note": "tensor bytes at the dims above (other symbolic dimensions 1)",
            "graph_inputs": [i.name for i in full.graph.input if i.name not in init_names],
            "graph_outputs": [o.name for o in full.graph.output],
            "num_stages": len(stages), "stages": stages}
    with open(os.path.join(out_dir, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
    return plan


def run_stages(out_dir: str, feeds: Mapping, providers=("CPUExecutionProvider",)) -> dict:
    """Run the stages of `out_dir` in order in onnxruntime, each fed its inputs by
    name from `feeds` and the earlier stages' outputs; returns the model outputs."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise JaxplaceError("running stages needs onnxruntime: pip install "
                            "onnxruntime") from exc
    with open(os.path.join(out_dir, "plan.json")) as f:
        plan = json.load(f)
    env = dict(feeds)
    for st in plan["stages"]:
        sess = ort.InferenceSession(os.path.join(out_dir, st["file"]),
                                    providers=list(providers))
        names = [o.name for o in sess.get_outputs()]
        outs = sess.run(names, {i.name: env[i.name] for i in sess.get_inputs()})
        env.update(zip(names, outs, strict=True))
    return {t: env[t] for t in plan["graph_outputs"]}


# -- from a result JSON -------------------------------------------------------------

def result_op_blocks(result: Mapping, source: str = "result",
                     model_path: str | None = None) -> dict[str, int]:
    """Block of every original op of a result (coarsened / fused results map back
    through their `original_ops`). A result without `node_ids` (an unequal-device
    plan) names its ops by position: the compute ops of `model_path` in graph order,
    as the importer numbers them."""
    a = result_assignment(result, source)
    if "node_ids" not in result:
        if model_path is None:
            raise JaxplaceError("missing field 'node_ids' (op names) and no model file to "
                                "name the ops by", source=source)
        proto, _ = load_model(model_path)
        folded = fold(proto, source=model_path)
        names = [folded.names[i] for i in folded.compute]
        if len(names) != len(a):
            raise JaxplaceError(f"{len(a)} entries for the {len(names)} compute ops of "
                                f"{model_path}", source=source, field="assignment")
        return dict(zip(names, a, strict=True))
    if result.get("original_ops"):
        group = dict(zip(result["node_ids"], a, strict=True))
        return {str(e["name"]): int(e["block"]) if "block" in e else group[e["group"]]
                for e in result["original_ops"]}
    return {str(n): b for n, b in zip(result["node_ids"], a, strict=True)}


def result_assignment(result: Mapping, source: str = "result") -> list[int]:
    """The result's block per op, checked: integers from 0 below the result's number
    of blocks (k + cpus, or its devices), one per node id (JaxplaceError naming the
    field otherwise)."""
    if not isinstance(result, Mapping) or "assignment" not in result:
        raise JaxplaceError("missing field 'assignment': not a jaxplace result",
                            source=source)
    a = result["assignment"]
    if not isinstance(a, list) or not all(
            isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in a):
        raise JaxplaceError("must be a list of non-negative integer blocks",
                            source=source, field="assignment")
    ids = result.get("node_ids")
    if ids is not None and (not isinstance(ids, list) or len(ids) != len(a)):
        raise JaxplaceError(f"has {len(a)} entries for "
                            f"{len(ids) if isinstance(ids, list) else '?'} node ids",
                            source=source, field="assignment")
    n = result.get("num_nodes")
    if isinstance(n, int) and n != len(a):
        raise JaxplaceError(f"has {len(a)} entries for {n} nodes", source=source,
                            field="assignment")
    blocks = _num_blocks(result)
    if blocks is not None and a and max(a) >= blocks:
        raise JaxplaceError(f"block {max(a)} is out of range: the result has {blocks} "
                            "blocks", source=source, field="assignment")
    return list(a)


def _num_blocks(result: Mapping) -> int | None:
    k, cpus, devices = result.get("k"), result.get("cpus") or 0, result.get("devices")
    if isinstance(k, int) and isinstance(cpus, int) and not isinstance(devices, list):
        return k + cpus
    if isinstance(devices, list):  # stages or schedules on a cluster: one per device
        return len(devices)
    return None


def result_devices(result: Mapping) -> dict[int, str]:
    """Block -> the device that runs it, as far as the result says."""
    out = {int(b["block"]): str(b.get("device", "accel")) for b in result.get("blocks", ())}
    for s, d in enumerate(result.get("stage_devices") or ()):
        out[s] = str(d)
    # a result with per-op devices (a latency schedule): blocks are device indices
    for e, b in zip(result.get("ops", ()), result.get("assignment", ()), strict=False):
        if e.get("device") is not None:
            out[int(b)] = str(e["device"])
    return out


def find_model(result: Mapping, result_path: str, model: str | None = None) -> tuple[str, dict]:
    """(path, provenance) of the model a result came from: `model` if given, else the
    path the result records (absolute, or relative to the result file). The file's
    sha256 must match the one recorded."""
    rec = result.get("source_model") or {}
    path = model or rec.get("path")
    if path is None:
        src = result.get("source")
        if isinstance(src, str) and src.lower().endswith(".onnx"):
            path = src
    if path is None:
        raise JaxplaceError("the result records no model file (it was not made from an "
                            ".onnx model); give the model with --model", source=result_path)
    if not os.path.isabs(path) and not os.path.exists(path):
        near = os.path.join(os.path.dirname(os.path.abspath(result_path)), path)
        path = near if os.path.exists(near) else path
    if not os.path.isfile(path):
        raise JaxplaceError(f"the model file {path!r} the result was made from is not "
                            "there; give it with --model", source=result_path)
    prov = model_provenance(path)
    want = rec.get("sha256")
    if want and prov["sha256"] != want:
        raise JaxplaceError(f"sha256 {prov['sha256'][:12]}... differs from the "
                            f"{want[:12]}... recorded in {result_path}: not the model the "
                            "result was made from", source=path)
    return path, prov


def export_result_onnx(result_path: str, out_dir: str, *, model: str | None = None,
                       dim_values: Mapping[str, int] | None = None) -> dict:
    """Runnable ONNX stages of a result JSON (see `export_onnx_stages`)."""
    result = read_json(result_path)
    if not isinstance(result, Mapping):
        raise JaxplaceError("not a jaxplace result", source=result_path)
    path, prov = find_model(result, result_path, model)
    if result.get("contiguous") is False:
        raise JaxplaceError("a non-contiguous split (virtual pieces) has no runnable "
                            "stage files: partition without --noncontiguous",
                            source=result_path)
    dims = {**((result.get("source_model") or {}).get("dims") or {}), **(dim_values or {})}
    return export_onnx_stages(path, result_op_blocks(result, result_path, path), out_dir,
                              devices=result_devices(result), dim_values=dims,
                              provenance=prov, source=result_path)
