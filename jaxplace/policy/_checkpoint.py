"""Policy and training-state files: flax msgpack weights plus a JSON architecture.

A policy directory holds `config.json` ({"format": "jaxplace-policy", "model": the
`ModelConfig`, "meta": free-form}) and `params.msgpack` (the model's parameters as a
nested dict) or, for the policies shipped in the wheel, `params.planes.zlib`: the same
arrays with their bytes split into planes (all first bytes, then all second bytes, ...),
deflated: 13.5% off float32 weights where deflating the msgpack file takes 7% (the
wheel's size is mostly these files; LZMA takes 14.7% off but unpacks 20x slower, 0.6 s
a policy). A policy fine-tuned from another shipped one may be packed against it
(`pack_policy(d, base="gnn-v3")`: each array's planes XOR the base's, which shares the
sign and exponent bytes, so 12% fewer bytes; the base is the sibling directory named
in the file, itself packed or not, whose weights' sha256 the file records and checks:
a changed base is an error, not other weights). Unpacking gives back the msgpack file
byte for byte.

Packing may also drop the low byte planes of float32 arrays (`pack_policy(d,
drop_low_bytes=1)`): the lowest byte of a float32 weight is close to uniformly random
(1.12 MB of entropy in its 1.13 MB plane for 1,127,298 parameters), so no lossless
coder shrinks it, while dropping it takes about 1.1 MB off a packed policy. Each
value is first rounded to nearest, ties to even, on its uint32 bits u: with s = 8 x
dropped bytes, u' = (u + 2^(s-1) - 1 + bit_s(u)) >> s << s. A carry out of the
mantissa moves the exponent up (the next power of two, or inf above the largest
float, as IEEE rounding does); inf is kept, NaN stays NaN (truncated, quiet bit set).
Kept mantissa bits 23 - s, so |x' - x| <= 2^(e - 24 + s) <= 2^(s - 24) |x| for a
normal x in [2^e, 2^(e+1)): relative error <= 2^-16 for one byte (the 24-bit floats
the wheel's -train policies hold); subnormals keep that absolute error 2^(s - 150).
The file records the count per array (a sixth field of its entry; entries of four or
five fields, written before, drop none) and stores only the kept planes, which alone
XOR the base's; reading puts zero bytes back, so unpacking gives back the rounded
arrays byte for byte.
Training checkpoints (`ckpt_<step>.msgpack`) hold the parameters,
optimizer state, PRNG key and step, plus the training config they belong to.

Every failure to read (missing, truncated or corrupt file, another architecture or
feature version) raises `JaxplaceError` whose one-line message names the file.
Files are written to a temporary name and renamed, so an interrupted save never
leaves a truncated checkpoint behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zlib
from dataclasses import fields
from pathlib import Path

import jax
import numpy as np
from flax import nnx, serialization

from jaxplace.errors import JaxplaceError
from jaxplace.policy import _numpy_forward as numpy_forward
from jaxplace.policy.features import FEATURE_VERSION
from jaxplace.policy.model import ModelConfig, PolicyModel

FORMAT = "jaxplace-policy"
TRAIN_FORMAT = "jaxplace-policy-train"
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "params.msgpack"
PACKED_NAME = "params.planes.zlib"
PACKED_FORMAT = "jaxplace-packed-weights"
_CKPT = re.compile(r"ckpt_(\d+)\.msgpack$")


def _fail(path, message: str) -> JaxplaceError:
    return JaxplaceError(" ".join(str(message).split()), source=str(path), field="policy")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _flat(tree, prefix: str = "") -> dict:
    """{"a/b/0/kernel": leaf} from nested dicts (keys stringified, leaves as they are:
    arrays, or shape structs of an abstract model)."""
    out = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "/"))
        else:
            out[key] = v
    return out


def _like(template, flat: dict, prefix: str = ""):
    """Nested dict shaped like `template` (keys as there) filled from `flat`."""
    return {k: _like(v, flat, f"{prefix}{k}/") if isinstance(v, dict) else flat[f"{prefix}{k}"]
            for k, v in template.items()}


def model_template(config: ModelConfig):
    """(graphdef, abstract State) of the model `config` describes (no computation)."""
    model = nnx.eval_shape(lambda: PolicyModel(config, nnx.Rngs(0)))
    return nnx.split(model)


def parameter_shapes(config: ModelConfig) -> dict[str, tuple]:
    """{"layers/0/fwd/kernel": shape, ...} of `config`'s model: without attention
    blocks from the architecture's arithmetic (`numpy_forward.parameter_shapes`,
    instant), else from the model built abstractly (about a second)."""
    if numpy_forward.supported(config):
        return numpy_forward.parameter_shapes(config)
    _, abstract = model_template(config)
    return {k: tuple(v.shape) for k, v in _flat(nnx.to_pure_dict(abstract)).items()}


def check_flat(path, want: dict[str, tuple], loaded) -> dict[str, np.ndarray]:
    """{name: float32 array} of the loaded weights (a nested or flat dict) when their
    names and shapes are `want`'s, else an error naming the first that differs."""
    got = _flat(loaded) if isinstance(loaded, dict) else {}
    for name, shape in want.items():
        if name not in got:
            raise _fail(path, f"weights lack parameter {name!r}: another architecture "
                              f"than config.json describes")
        if tuple(np.shape(got[name])) != tuple(shape):
            raise _fail(path, f"parameter {name!r} has shape {np.shape(got[name])}, the "
                              f"architecture in config.json needs {tuple(shape)}")
    extra = sorted(set(got) - set(want))
    if extra:
        raise _fail(path, f"weights have parameter {extra[0]!r} that the architecture in "
                          f"config.json lacks")
    return {k: np.asarray(v, np.float32) for k, v in got.items()}


def state_from_flat(config: ModelConfig, flat: dict[str, np.ndarray]) -> nnx.State:
    """The State of `config`'s model holding the checked arrays `flat` (`check_flat`)."""
    _, abstract = model_template(config)
    nnx.replace_by_pure_dict(abstract, _like(nnx.to_pure_dict(abstract), flat))
    return abstract


def check_params(path, config: ModelConfig, loaded: dict) -> nnx.State:
    """The State of `config`'s model filled from a nested dict of arrays, or an error
    naming the first parameter whose name or shape does not match."""
    return state_from_flat(config, check_flat(path, parameter_shapes(config), loaded))


def config_from_json(path, d) -> ModelConfig:
    """ModelConfig from its JSON dict; unknown fields or another feature version fail."""
    if not isinstance(d, dict):
        raise _fail(path, "has no model architecture")
    names = {f.name for f in fields(ModelConfig)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise _fail(path, f"another architecture: unknown model field {unknown[0]!r}")
    cfg = ModelConfig(**d)
    if cfg.feature_version != FEATURE_VERSION:
        raise _fail(path, f"made for features v{cfg.feature_version}; this jaxplace "
                          f"computes v{FEATURE_VERSION}")
    return cfg


def save_policy(directory, config: ModelConfig, params: nnx.State,
                meta: dict | None = None) -> Path:
    """Write `config.json` and `params.msgpack` into `directory`; returns it."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    pure = jax.tree.map(np.asarray, nnx.to_pure_dict(params))
    _write_atomic(d / WEIGHTS_NAME, serialization.msgpack_serialize(_flat(pure)))
    (d / PACKED_NAME).unlink(missing_ok=True)  # else the stale packed weights would win
    doc = {"format": FORMAT, "model": config.to_json(), "meta": meta or {}}
    _write_atomic(d / CONFIG_NAME, (json.dumps(doc, indent=2) + "\n").encode())
    return d


def _read_json(path: Path) -> dict:
    if not path.is_file():
        raise _fail(path, "no such file (a policy directory needs config.json and "
                          "params.msgpack)")
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _fail(path, f"truncated or corrupt JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise _fail(path, f"not a jaxplace policy config (format "
                          f"{doc.get('format') if isinstance(doc, dict) else None!r})")
    return doc


def _planes(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8).reshape(-1, a.dtype.itemsize).T


#: The dtype whose low byte planes packing can drop: little-endian float32, so the
#: dropped planes are the first ones of `_planes`.
_ROUNDABLE = np.dtype("<f4")


def round_float32(a, drop_bytes: int) -> np.ndarray:
    """`a` as float32 ("<f4") with its `drop_bytes` low bytes zero, rounded to nearest,
    ties to even, on the uint32 bits (module docstring); NaN stays NaN, inf inf."""
    x = np.ascontiguousarray(a, _ROUNDABLE)
    if not 0 <= drop_bytes < 4:
        raise ValueError(f"drop_bytes must be 0 .. 3, got {drop_bytes}")
    if drop_bytes == 0:
        return x.copy()
    s = 8 * drop_bytes
    u = x.view("<u4").astype(np.uint64)  # 64 bits: the rounding add cannot wrap
    keep = np.uint64((0xFFFFFFFF >> s) << s)
    lsb = (u >> np.uint64(s)) & np.uint64(1)
    rounded = (u + np.uint64((1 << (s - 1)) - 1) + lsb) & keep
    # NaN: rounding could carry its payload into the sign; truncate and keep it a NaN
    nan = ((u >> np.uint64(23)) & np.uint64(0xFF) == 0xFF) & (u & np.uint64(0x7FFFFF) != 0)
    rounded = np.where(nan, (u & keep) | np.uint64(0x400000), rounded)
    return rounded.astype("<u4").view(_ROUNDABLE).reshape(x.shape)


def _drop_for(a: np.ndarray, drop_low_bytes: int) -> int:
    """Low bytes to drop of array `a`: float32 arrays only, the rest stay exact."""
    return drop_low_bytes if a.dtype.kind == "f" and a.dtype.itemsize == 4 else 0


def rounded_weights(flat: dict, drop_low_bytes: int = 0) -> dict:
    """`flat` ({name: array}) as `pack_weights(flat, drop_low_bytes=...)` stores it:
    its float32 arrays rounded (`round_float32`), the others as they are."""
    out = {}
    for name, value in flat.items():
        a = np.asarray(value)
        drop = _drop_for(a, drop_low_bytes)
        out[name] = round_float32(a, drop) if drop else value
    return out


def pack_weights(flat: dict, base: dict | None = None, base_name: str | None = None,
                 drop_low_bytes: int = 0) -> bytes:
    """Deflate of the arrays of `flat` ({name: array}) with each array's bytes in planes;
    with `base` ({name: array}, the policy `base_name` it was fine-tuned from), the
    planes XOR the base's where name, dtype and shape agree. `drop_low_bytes` > 0:
    float32 arrays rounded to that many fewer bytes (`round_float32`), whose low planes
    are not stored (entries get a sixth field, the count; without it the file is the
    one this function wrote before the field existed)."""
    arrays = []
    for name, value in flat.items():
        a = np.ascontiguousarray(value)
        drop = _drop_for(a, drop_low_bytes)
        if drop:
            a = round_float32(a, drop)
        planes = _planes(a)[drop:]  # the dropped planes are zero: never stored or XORed
        b = None if base is None else base.get(name)
        xored = b is not None and b.dtype == a.dtype and b.shape == a.shape
        if xored:
            planes = planes ^ _planes(b)[drop:]
        entry = [name, a.dtype.str, list(a.shape), planes.tobytes(), xored]
        arrays.append(entry + [drop] if drop else entry)
    doc = {"format": PACKED_FORMAT, "arrays": arrays}
    if base is not None:
        doc["base"] = base_name
        doc["base_sha256"] = _weights_digest(base)
    return zlib.compress(serialization.msgpack_serialize(doc), 9)


def _weights_digest(flat: dict) -> str:
    """sha256 of `flat` as msgpack bytes: what a file packed against a base checks the
    base against, since XOR planes read against another base decode to other weights
    without any error."""
    return hashlib.sha256(serialization.msgpack_serialize(flat)).hexdigest()


def _unpack_array(entry, base: dict | None) -> tuple[str, np.ndarray]:
    """(name, array) of one entry of a packed file: [name, dtype, shape, planes] plus,
    in later files, xored and the count of dropped low planes (restored as zeros)."""
    name, dtype, shape, planes, *rest = entry
    xored, drop = (list(rest) + [False, 0])[:2]
    dt = np.dtype(dtype)
    if drop and not (dt == _ROUNDABLE and 0 < int(drop) < dt.itemsize):
        raise ValueError(f"cannot drop {drop} planes of {dtype}")
    drop = int(drop)
    raw = np.frombuffer(planes, np.uint8).reshape(dt.itemsize - drop, -1)
    if xored:
        raw = raw ^ _planes(base[name])[drop:]
    if drop:
        raw = np.concatenate([np.zeros((drop, raw.shape[1]), np.uint8), raw])
    return name, np.ascontiguousarray(raw.T).view(dt).reshape(shape)


def unpack_weights(path: Path, data: bytes) -> dict:
    """{name: array} from the bytes of a packed weights file (errors name `path`); a
    file packed against a base reads the base from the sibling directory it names."""
    try:
        doc = serialization.msgpack_restore(zlib.decompress(data))
        if doc.get("format") != PACKED_FORMAT:
            raise ValueError("format")
    except Exception as e:  # zlib and msgpack raise unrelated types on bad bytes
        raise _fail(path, f"truncated or corrupt packed weights file ({type(e).__name__})") \
            from None
    base = None
    if doc.get("base") is not None:
        base_dir = Path(path).parent.parent / str(doc["base"])
        if not base_dir.is_dir() or base_dir == Path(path).parent:
            raise _fail(path, f"its base policy {doc['base']!r} is not beside it")
        base = read_weights(base_dir)
        expected = doc.get("base_sha256")  # files packed before the digest have none
        if expected is not None and _weights_digest(base) != expected:
            raise _fail(path, f"its base policy {doc['base']!r} is not the one it was "
                              "packed against (sha256 differs): re-pack it from full weights")
    try:
        return dict(_unpack_array(entry, base) for entry in doc["arrays"])
    except Exception as e:  # reshape and the base's lookup raise unrelated types
        raise _fail(path, f"truncated or corrupt packed weights file ({type(e).__name__})") \
            from None


def weights_path(directory) -> Path:
    """The weights file of a policy directory: the packed one where it exists."""
    d = Path(directory)
    return d / PACKED_NAME if (d / PACKED_NAME).is_file() else d / WEIGHTS_NAME


def read_weights(directory) -> dict:
    """{"a/b/kernel": array} of a policy directory, from either weights file."""
    path = weights_path(directory)
    if path.name == PACKED_NAME:
        return unpack_weights(path, path.read_bytes())
    return _read_msgpack(path)


def weights_bytes(directory) -> bytes:
    """The directory's weights as `params.msgpack` bytes (unpacked where packed)."""
    return serialization.msgpack_serialize(read_weights(directory))


def pack_policy(directory, base: str | None = None, drop_low_bytes: int = 0) -> Path:
    """Replace `params.msgpack` (or a packed file) by `params.planes.zlib`, packed
    against the sibling policy `base` if given, after checking that unpacking gives back
    the same bytes: those of the weights rounded as `drop_low_bytes` says (0: exact;
    1: float32 weights rounded to 24 bits, relative error <= 2^-16, module docstring)."""
    d = Path(directory)
    flat = read_weights(d)
    raw = serialization.msgpack_serialize(rounded_weights(flat, drop_low_bytes))
    base_flat = None if base is None else read_weights(d.parent / base)
    packed = pack_weights(flat, base_flat, base, drop_low_bytes)
    if serialization.msgpack_serialize(unpack_weights(d / PACKED_NAME, packed)) != raw:
        raise _fail(d / WEIGHTS_NAME, "packing does not give back the same bytes")
    _write_atomic(d / PACKED_NAME, packed)
    (d / WEIGHTS_NAME).unlink(missing_ok=True)
    return d / PACKED_NAME


def _read_msgpack(path: Path) -> dict:
    if not path.is_file():
        raise _fail(path, "no such file")
    try:
        out = serialization.msgpack_restore(path.read_bytes())
    except Exception as e:  # msgpack raises several unrelated types on bad bytes
        raise _fail(path, f"truncated or corrupt weights file ({type(e).__name__})") \
            from None
    if not isinstance(out, dict):
        raise _fail(path, "truncated or corrupt weights file (not a mapping)")
    return out


def _unflatten(flat: dict) -> dict:
    tree: dict = {}
    for key, v in flat.items():
        node = tree
        *head, last = key.split("/")
        for h in head:
            node = node.setdefault(h, {})
        node[last] = v
    return tree


def read_policy_weights(path) -> tuple[ModelConfig, dict[str, np.ndarray], dict]:
    """(config, {name: float32 array} checked against the config, meta) of the policy
    directory `path` (or a file inside it); builds no model."""
    p = Path(path)
    d = p.parent if p.suffix in (".json", ".msgpack", ".zlib") else p
    if not d.exists():
        raise _fail(d, "no such policy directory")
    doc = _read_json(d / CONFIG_NAME)
    cfg = config_from_json(d / CONFIG_NAME, doc.get("model"))
    flat = check_flat(weights_path(d), parameter_shapes(cfg), _unflatten(read_weights(d)))
    return cfg, flat, doc.get("meta", {})


def read_policy(path) -> tuple[ModelConfig, nnx.State, dict]:
    """(config, params, meta) of the policy directory `path` (or a file inside it)."""
    cfg, flat, meta = read_policy_weights(path)
    return cfg, state_from_flat(cfg, flat), meta


# -- training checkpoints ------------------------------------------------------------


def checkpoint_path(directory, step: int) -> Path:
    return Path(directory) / f"ckpt_{step:08d}.msgpack"


def latest_checkpoint(directory) -> Path | None:
    """The checkpoint with the highest step in `directory`, or None."""
    d = Path(directory)
    if not d.is_dir():
        return None
    found = [(int(m[1]), f) for f in d.iterdir() if (m := _CKPT.search(f.name))]
    return max(found)[1] if found else None


def save_train_state(path, state, config: dict) -> Path:
    """Write a training state pytree (params, optimizer state, key data, step and,
    with self-imitation, the per-problem memory)."""
    leaves = [np.asarray(x) for x in jax.tree.leaves(state)]
    doc = {"format": TRAIN_FORMAT, "config": json.dumps(config, sort_keys=True),
           "leaves": {str(i): x for i, x in enumerate(leaves)}}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, serialization.msgpack_serialize(doc))
    return path


def load_train_state(path, template, config: dict):
    """A training state shaped like `template` from `path`, which must come from the
    same model and training configuration (`config`)."""
    path = Path(path)
    doc = _read_msgpack(path)
    if doc.get("format") != TRAIN_FORMAT:
        raise _fail(path, "not a jaxplace policy training checkpoint")
    theirs = json.loads(doc.get("config", "{}"))
    if theirs.get("model") != config.get("model"):
        raise _fail(path, f"another architecture: checkpoint model {theirs.get('model')} "
                          f"!= config model {config.get('model')}")
    leaves, treedef = jax.tree.flatten(template)
    got = doc.get("leaves", {})
    if len(got) != len(leaves):
        raise _fail(path, f"holds {len(got)} arrays, the training state needs {len(leaves)}")
    out = []
    for i, want in enumerate(leaves):
        a = np.asarray(got[str(i)])
        if a.shape != np.shape(want):
            raise _fail(path, f"array {i} has shape {a.shape}, expected {np.shape(want)}")
        out.append(a.astype(np.asarray(want).dtype))
    return jax.tree.unflatten(treedef, out)
