"""What an ONNX runtime sees: constant subgraphs folded, shapes static, compute ops named.

A tensor is constant when it is an initializer, the output of a `Constant` node, the
output of a node whose inputs are all constant (ConstantOfShape of a constant shape,
Identity, Cast, Unsqueeze / Reshape / Transpose / Concat / Gather / arithmetic on
constants, ...), or the result of `Shape` / `Size` of a tensor whose shape is static
once the symbolic dimensions have values. Runtimes fold such subgraphs once at load
time, so they are weights, not work: the ops that read them hold them as parameters,
and only the other ops ("compute ops") are placement units.

Folding uses `onnx.shape_inference` for shapes and `onnx.reference.ReferenceEvaluator`
for values. Small constant values (at most `VALUE_LIMIT` bytes: shapes, axes, scalars)
are evaluated, fed back to shape inference as initializers, and shape inference runs
again until nothing new is learned; large constants (weights made by ConstantOfShape,
say) keep only their shape and dtype, which is all the cost model needs. Initializers
stored in external files are never read unless small and needed for a value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError

VALUE_LIMIT = 1 << 20  # bytes: larger constants keep their shape, not their value
_RANDOM = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike",
                     "RandomUniformLike", "Multinomial", "Bernoulli"})
_SUBGRAPH_ATTR = (5, 10)  # AttributeProto.GRAPH, GRAPHS
_MAX_ROUNDS = 6
_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                "uint64_data", "string_data")


def require_onnx():
    try:
        import onnx
    except ImportError as exc:
        raise JaxplaceError("reading ONNX models needs the onnx package: "
                            "pip install 'jaxplace[onnx]' (or pip install onnx)") from exc
    return onnx


@dataclass
class FoldedModel:
    """An ONNX model as a runtime sees it.

    Attributes:
        model: a copy of the ModelProto (symbolic dimensions given values; the data
            of initializers over `VALUE_LIMIT` dropped, external data not loaded).
        names: a unique name per ONNX node of the main graph, in graph order
            (`node.name`, or `<op_type>_<index>` for unnamed nodes; repeats get `#n`).
        compute: indices of the compute ops (the nodes that are not folded).
        const: names of constant tensors.
        values: constant values that were evaluated (small ones), by tensor name.
        info: tensor name -> (shape, ONNX elem type) for every tensor whose shape is
            known.
        defaulted_dims: symbolic dimension names that took `default_dim`.
        opset: the default-domain opset version.
    """

    model: Any
    names: list[str]
    compute: list[int]
    const: set[str]
    values: dict[str, np.ndarray]
    info: dict[str, tuple[list[int], int]]
    defaulted_dims: list[str]
    opset: int
    source: str | None = None
    dim_values: dict[str, int] = field(default_factory=dict)  # as given
    assumed: dict[str, tuple[list[int], int]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)  # op type -> why not evaluated


def node_names(graph) -> list[str]:
    """A unique name per node of `graph`, in graph order (the names the importer gives
    compute ops and the exporter matches against a result's node ids)."""
    seen: dict[str, int] = {}
    out = []
    for i, node in enumerate(graph.node):
        s = node.name or f"{node.op_type}_{i}"
        if s in seen:
            seen[s] += 1
            s = f"{s}#{seen[s]}"
        seen.setdefault(s, 0)
        out.append(s)
    return out


def load_model(model, *, load_external_data: bool = False):
    """(ModelProto, source path or None) from a path or a ModelProto; a file that is
    not a readable, valid ONNX model is one JaxplaceError naming it."""
    onnx = require_onnx()
    source = None
    if isinstance(model, str | os.PathLike):
        source = os.fspath(model)
        if not os.path.exists(source):
            raise JaxplaceError("no such file", source=source)
        try:
            model = onnx.load(source, load_external_data=load_external_data)
        except Exception as exc:
            raise JaxplaceError(f"not a readable ONNX model: {_one_line(exc)}",
                                source=source) from None
    if not isinstance(model, onnx.ModelProto):
        raise JaxplaceError(f"expected a path or onnx.ModelProto, got {type(model).__name__}")
    _validate(onnx, model.graph, source)
    return model, source


def _validate(onnx, g, source) -> None:
    """The structural checks a runtime makes at load time (onnx.checker is stricter,
    e.g. it refuses outputs declared without a shape, which runtimes accept)."""
    defined = {i.name for i in g.input} | {i.name for i in g.initializer}
    defined |= {i.name for i in g.sparse_initializer} if hasattr(g, "sparse_initializer") \
        else set()
    if not g.node:
        raise JaxplaceError("not a valid ONNX model: the graph has no nodes",
                            source=source, field="graph.node")
    for i, node in enumerate(g.node):
        where = f"graph.node[{i}] ({node.op_type} {node.name!r})"
        if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
            raise JaxplaceError(f"not a valid ONNX model: unknown operator "
                                f"{node.op_type!r} in the default domain", source=source,
                                field=where)
        for s in node.input:
            if s and s not in defined:
                raise JaxplaceError(f"not a valid ONNX model: reads {s!r}, which no "
                                    "earlier node, graph input or initializer defines "
                                    "(nodes must be in topological order)",
                                    source=source, field=where)
        defined.update(o for o in node.output if o)
    for o in g.output:
        if o.name not in defined:
            raise JaxplaceError(f"not a valid ONNX model: graph output {o.name!r} is "
                                "never produced", source=source, field="graph.output")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


def default_opset(model) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 1


def fold(model, dim_values: dict[str, int] | None = None, default_dim: int = 1,
         source: str | None = None) -> FoldedModel:
    """Fold the constant subgraphs of `model` (a ModelProto) with symbolic dimensions
    set from `dim_values` (others: `default_dim`)."""
    onnx = require_onnx()
    work = onnx.ModelProto()
    work.CopyFrom(model)
    defaulted = _fix_dims(work.graph, dict(dim_values or {}), int(default_dim))
    g = work.graph
    opset = default_opset(work)
    folded = FoldedModel(work, node_names(g), [], set(), {}, {}, sorted(defaulted), opset,
                         source, dict(dim_values or {}))
    base_dir = os.path.dirname(source) if source else ""
    for init in g.initializer:
        folded.const.add(init.name)
        folded.info[init.name] = ([int(d) for d in init.dims], int(init.data_type))
        if _nbytes(onnx, [int(d) for d in init.dims], init.data_type) <= VALUE_LIMIT:
            value = _init_value(onnx, init, base_dir)
            if value is not None:
                folded.values[init.name] = value
        else:  # shape inference reads dims only: each round copies no weights
            for data in _DATA_FIELDS:
                init.ClearField(data)
    injected: set[str] = set()
    for _ in range(_MAX_ROUNDS):
        _infer(onnx, work, folded, injected, source)
        _analyze(onnx, g, folded)
        new = set(folded.values) - injected - {i.name for i in g.initializer}
        if not new and not _assume_shapes(g, folded):
            break
        injected |= new
    return folded


def _assume_shapes(g, folded: FoldedModel) -> bool:
    """Outputs of ops outside the default domain that shape inference cannot shape
    take their first input's shape and type (so the ops after them are shaped);
    True if any was added."""
    added = False
    for node in g.node:
        if node.domain in ("", "ai.onnx") or not node.input:
            continue
        src = folded.info.get(node.input[0], (None, 0))
        for o in node.output:
            if o and src[0] is not None and folded.info.get(o, (None, 0))[0] is None:
                folded.info[o] = (list(src[0]), src[1])
                folded.assumed[o] = folded.info[o]
                added = True
    return added


def _fix_dims(graph, dim_values, default_dim) -> set[str]:
    defaulted = set()
    for vi in graph.input:
        if not vi.type.HasField("tensor_type"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                continue
            name = d.dim_param if d.HasField("dim_param") else ""
            value = dim_values.get(name)
            if value is None:
                defaulted.add(name or "?")
                value = default_dim
            d.dim_value = int(value)
    return defaulted


def _nbytes(onnx, shape, elem_type) -> int:
    return int(np.prod(shape, dtype=np.int64)) * itemsize(onnx, elem_type)


def itemsize(onnx, elem_type: int) -> int:
    """Bytes per element of an ONNX elem type (4-bit types count as 1)."""
    try:
        return int(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except Exception:  # bfloat16 / float8 / int4 without ml_dtypes: by name
        name = onnx.TensorProto.DataType.Name(elem_type).lower()
        if "float8" in name or "int4" in name:
            return 1
        if "16" in name:
            return 2
        return 4


def _init_value(onnx, init, base_dir):
    from onnx import numpy_helper

    try:
        if init.data_location == onnx.TensorProto.EXTERNAL:
            from onnx.external_data_helper import load_external_data_for_tensor

            t = onnx.TensorProto()
            t.CopyFrom(init)
            load_external_data_for_tensor(t, base_dir)
            return numpy_helper.to_array(t)
        return numpy_helper.to_array(init)
    except Exception:  # unreadable side file or exotic dtype: shape only
        return None


def _infer(onnx, work, folded: FoldedModel, injected: set[str], source) -> None:
    """Shape inference on `work` with the evaluated constants in `injected` given as
    initializers; fills `folded.info`."""
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(work)
    g = m.graph
    del g.value_info[:]
    # IR 3 reads initializers only through graph inputs; the injected ones are not
    m.ir_version = max(int(m.ir_version), 4)
    g.value_info.extend(onnx.helper.make_tensor_value_info(t, et, shape)
                        for t, (shape, et) in folded.assumed.items())
    if injected:
        keep = [n for n in g.node if not (n.output and all(
            (o in injected or not o) for o in n.output))]
        del g.node[:]
        g.node.extend(keep)
        have = {i.name for i in g.initializer}
        for name in sorted(injected - have):
            g.initializer.append(numpy_helper.from_array(folded.values[name], name))
    try:
        m = onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False,
                                              data_prop=True)
    except Exception as exc:
        raise JaxplaceError(f"ONNX shape inference failed: {_one_line(exc)}",
                            source=source) from None
    g = m.graph
    for vi in [*g.input, *g.output, *g.value_info]:
        if not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            if vi.name not in folded.values:
                folded.info[vi.name] = ([int(d.dim_value) for d in tt.shape.dim],
                                        int(tt.elem_type))
        elif vi.name not in folded.info and tt.elem_type:
            folded.info[vi.name] = (None, int(tt.elem_type))  # type: ignore[assignment]


def subgraph_inputs(node) -> set[str]:
    """Names a node's subgraphs (Loop / If / Scan bodies) read from the outer scope."""
    out: set[str] = set()
    for a in node.attribute:
        graphs = [a.g] if a.type == 5 else list(a.graphs) if a.type == 10 else []
        for sg in graphs:
            local = {i.name for i in sg.input} | {i.name for i in sg.initializer}
            for n in sg.node:
                local |= set(n.output)
            for n in sg.node:
                for s in [*n.input, *subgraph_inputs(n)]:
                    if s and s not in local:
                        out.add(s)
    return out


def _analyze(onnx, g, folded: FoldedModel) -> None:
    """One pass in graph order: which nodes are constant, and the values of the small
    ones."""
    const = {i.name for i in g.initializer}
    compute = []
    for i, node in enumerate(g.node):
        ins = [s for s in node.input if s]
        outs = [o for o in node.output if o]
        op = node.op_type
        kind = _const_kind(node, ins, const, folded)
        if kind is None:
            compute.append(i)
            continue
        const.update(outs)
        if all(o in folded.values for o in outs):
            continue
        value = None
        if kind == "shape":
            value = _shape_value(node, folded)
        elif all(s in folded.values for s in ins) and _small_enough(onnx, node, ins, folded):
            value = _evaluate(onnx, node, ins, folded)
        if value is not None:
            for o, v in zip(outs, value, strict=False):
                v = np.asarray(v)
                folded.info[o] = (list(v.shape), _elem_type(onnx, v))
                if v.nbytes <= VALUE_LIMIT:
                    folded.values[o] = v
        elif op == "ConstantOfShape" and ins and ins[0] in folded.values:
            shape = [int(d) for d in np.asarray(folded.values[ins[0]]).reshape(-1)]
            t = attr(node, "value")
            folded.info[outs[0]] = (shape, int(t.data_type) if t is not None else 1)
    folded.const = const
    folded.compute = compute


def _const_kind(node, ins, const, folded) -> str | None:
    op = node.op_type
    if node.domain not in ("", "ai.onnx") or op in _RANDOM:
        return None
    if any(a.type in _SUBGRAPH_ATTR for a in node.attribute):
        return None
    if op == "Constant":
        return "value"
    if op in ("Shape", "Size") and ins and ins[0] not in const:
        shape = folded.info.get(ins[0], (None, 0))[0]
        return "shape" if shape is not None else None
    if ins and all(s in const for s in ins):
        return "value"
    return None


def _shape_value(node, folded) -> list[np.ndarray]:
    shape = list(folded.info[node.input[0]][0])
    if node.op_type == "Size":
        return [np.array(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)]
    start, end = attr(node, "start", 0), attr(node, "end", None)
    return [np.array(shape[slice(start, end)], dtype=np.int64)]


def _small_enough(onnx, node, ins, folded) -> bool:
    if node.op_type == "ConstantOfShape":
        shape = np.asarray(folded.values[ins[0]]).reshape(-1)
        t = attr(node, "value")
        et = int(t.data_type) if t is not None else 1
        return int(np.prod(shape, dtype=np.int64)) * itemsize(onnx, et) <= VALUE_LIMIT
    for o in node.output:
        shape = folded.info.get(o, (None, 0))[0] if o else None
        if shape is not None and _nbytes(onnx, shape, folded.info[o][1]) > VALUE_LIMIT:
            return False
    return True


def _evaluate(onnx, node, ins, folded) -> list | None:
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    feeds = {s: folded.values[s] for s in dict.fromkeys(ins)}
    try:
        inputs = [helper.make_tensor_value_info(s, _elem_type(onnx, v), list(v.shape))
                  for s, v in feeds.items()]
        outputs = [helper.make_tensor_value_info(o, 0, None) for o in node.output if o]
        graph = helper.make_graph([node], "fold", inputs, outputs)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", folded.opset)])
        m.ir_version = min(m.ir_version, 10)
        return ReferenceEvaluator(m).run(None, feeds)
    except Exception as exc:  # an op the reference evaluator lacks: shape only
        folded.failed.setdefault(node.op_type, _one_line(exc))
        return None


def _elem_type(onnx, value: np.ndarray) -> int:
    try:
        return int(onnx.helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype))
    except Exception:
        return onnx.TensorProto.FLOAT


def attr(node, name: str, default: Any = None) -> Any:
    """The value of a node attribute, or `default`."""
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default
