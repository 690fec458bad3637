"""Packed policy weights (`jaxplace.policy._checkpoint`): float32 arrays rounded to
fewer bytes with their low byte planes dropped, and the files written before that
field existed, which must read as they always did."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from flax import serialization

from jaxplace.errors import JaxplaceError
from jaxplace.policy import _checkpoint as ck
from jaxplace.policy.routing import SHIPPED_POLICIES


def _bits(values) -> np.ndarray:
    return np.asarray(values, "<u4")


def _rounded_bits(bits, drop: int = 1) -> list[int]:
    return [int(b) for b in ck.round_float32(_bits(bits).view("<f4"), drop).view("<u4")]


def _flat(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"layers/0/kernel": rng.standard_normal((40, 24)).astype(np.float32),
            "layers/0/bias": rng.standard_normal(24).astype(np.float32) * 1e-3,
            "steps": np.arange(5, dtype=np.int32)}  # not float32: stays exact


def _same_bytes(a: dict, b: dict) -> bool:
    return serialization.msgpack_serialize(a) == serialization.msgpack_serialize(b)


@pytest.mark.parametrize("bits, want", [
    (0x3F800000, 0x3F800000),  # 1.0: nothing below the kept bits
    (0x3F80007F, 0x3F800000),  # below half: down
    (0x3F800080, 0x3F800000),  # half, kept bits even: stays (ties to even)
    (0x3F800180, 0x3F800200),  # half, kept bits odd: up to even
    (0x3F800081, 0x3F800100),  # above half: up
    (0x3FFFFFFF, 0x40000000),  # 1.99999988: the carry moves the exponent, 2.0
    (0x7F7FFFFF, 0x7F800000),  # the largest float rounds to inf, as IEEE rounding does
    (0xBF800080, 0xBF800000),  # negative numbers round their magnitude the same way
    (0xBF800180, 0xBF800200),
    (0xBFFFFFFF, 0xC0000000),  # -1.99999988 -> -2.0
    (0x00000000, 0x00000000),  # 0, -0
    (0x80000000, 0x80000000),
    (0x00000180, 0x00000200),  # subnormals: the same rule on the bits
    (0x7F800000, 0x7F800000),  # inf, -inf kept
    (0xFF800000, 0xFF800000),
])
def test_rounding_is_round_to_nearest_even_on_the_uint32_bits(bits, want):
    assert _rounded_bits([bits]) == [want]


def test_rounding_keeps_nan_a_nan():
    # a payload in the dropped byte only, and one whose rounding would carry into the
    # sign: both stay NaN of the same sign
    got = ck.round_float32(_bits([0x7F800001, 0x7FFFFFFF, 0xFFFFFFFF]).view("<f4"), 1)
    assert np.isnan(got).all() and list(np.signbit(got)) == [False, False, True]


def test_rounding_matches_float64_arithmetic_and_its_error_bound():
    # a normal x in [2^E, 2^(E+1)) keeps 15 mantissa bits: its nearest multiple of
    # 2^(E-15), ties to even (np.round), within 2^-16 of x
    x = np.random.default_rng(1).standard_normal(20000).astype(np.float32) * 10.0
    got = ck.round_float32(x, 1)
    ulp = np.ldexp(1.0, np.frexp(x.astype(np.float64))[1] - 16)
    np.testing.assert_array_equal(got.astype(np.float64), np.round(x / ulp) * ulp)
    assert np.max(np.abs(got - x) / np.abs(x)) <= 2.0 ** -16
    assert (got.view("<u4") & 0xFF == 0).all()
    np.testing.assert_array_equal(ck.round_float32(got, 1), got)  # idempotent


@pytest.mark.parametrize("with_base", [False, True])
def test_a_file_with_a_dropped_plane_reads_back_the_rounded_arrays(tmp_path, with_base):
    flat, base = _flat(0), _flat(1)
    want = ck.rounded_weights(flat, 1)
    packed = ck.pack_weights(flat, base if with_base else None, "base", drop_low_bytes=1)
    doc = serialization.msgpack_restore(zlib.decompress(packed))
    drops = {e[0]: (e[5] if len(e) == 6 else 0) for e in doc["arrays"]}
    assert drops == {"layers/0/kernel": 1, "layers/0/bias": 1, "steps": 0}
    # only the kept planes are stored: 3 bytes a float32 weight
    assert len(doc["arrays"][0][3]) == 3 * flat["layers/0/kernel"].size
    if with_base:
        (tmp_path / "base").mkdir()
        (tmp_path / "base" / ck.WEIGHTS_NAME).write_bytes(serialization.msgpack_serialize(base))
    (tmp_path / "child").mkdir()
    got = ck.unpack_weights(tmp_path / "child" / ck.PACKED_NAME, packed)
    assert _same_bytes(got, want)
    assert np.max(np.abs(got["layers/0/kernel"] / flat["layers/0/kernel"] - 1)) <= 2.0 ** -16
    assert len(packed) < 0.85 * len(ck.pack_weights(flat, base if with_base else None, "base"))


def test_pack_policy_checks_and_writes_the_rounded_weights(tmp_path):
    # a child packed against a base, both rounded: the base's dropped plane is zero, the
    # child's kept planes XOR the base's kept planes
    flat, base = _flat(0), _flat(1)
    for name, w in (("base", base), ("child", flat)):
        (tmp_path / name).mkdir()
        (tmp_path / name / ck.WEIGHTS_NAME).write_bytes(serialization.msgpack_serialize(w))
    ck.pack_policy(tmp_path / "base", drop_low_bytes=1)
    ck.pack_policy(tmp_path / "child", base="base", drop_low_bytes=1)
    assert not (tmp_path / "child" / ck.WEIGHTS_NAME).exists()
    assert _same_bytes(ck.read_weights(tmp_path / "base"), ck.rounded_weights(base, 1))
    assert _same_bytes(ck.read_weights(tmp_path / "child"), ck.rounded_weights(flat, 1))
    # packing again changes nothing: rounding is idempotent
    before = (tmp_path / "child" / ck.PACKED_NAME).read_bytes()
    ck.pack_policy(tmp_path / "child", base="base", drop_low_bytes=1)
    assert (tmp_path / "child" / ck.PACKED_NAME).read_bytes() == before


def _old_format(flat: dict, base: dict | None, five_fields: bool) -> bytes:
    """A packed file as written before the drop field: entries [name, dtype, shape,
    planes] (the first files) or [name, dtype, shape, planes, xored]."""
    arrays = []
    for name, a in flat.items():
        planes = ck._planes(a)
        xored = base is not None
        if xored:
            planes = planes ^ ck._planes(base[name])
        entry = [name, a.dtype.str, list(a.shape), planes.tobytes()]
        arrays.append(entry + [xored] if five_fields else entry)
    doc = {"format": ck.PACKED_FORMAT, "arrays": arrays}
    if base is not None:
        doc["base"] = "base"
    return zlib.compress(serialization.msgpack_serialize(doc), 9)


def test_files_without_the_drop_field_read_exactly_as_before(tmp_path):
    flat, base = _flat(0), _flat(1)
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / ck.WEIGHTS_NAME).write_bytes(serialization.msgpack_serialize(base))
    path = tmp_path / "child" / ck.PACKED_NAME
    for data in (_old_format(flat, None, False), _old_format(flat, None, True),
                 _old_format(flat, base, True)):
        assert _same_bytes(ck.unpack_weights(path, data), flat)
    # without dropping, packing writes the files it wrote before, byte for byte; against
    # a base it adds the base's digest and nothing else
    assert ck.pack_weights(flat) == _old_format(flat, None, True)
    doc = serialization.msgpack_restore(zlib.decompress(ck.pack_weights(flat, base, "base")))
    old = serialization.msgpack_restore(zlib.decompress(_old_format(flat, base, True)))
    assert doc.pop("base_sha256") == ck._weights_digest(base)
    assert serialization.msgpack_serialize(doc) == serialization.msgpack_serialize(old)


def test_a_changed_base_is_a_one_line_error_not_other_weights(tmp_path):
    # XOR planes read against another base decode to other weights with no error of
    # their own: the file's digest of its base is what catches it
    flat, base = _flat(0), _flat(1)
    for name, w in (("base", base), ("child", flat)):
        (tmp_path / name).mkdir()
        (tmp_path / name / ck.WEIGHTS_NAME).write_bytes(serialization.msgpack_serialize(w))
    ck.pack_policy(tmp_path / "child", base="base")
    assert _same_bytes(ck.read_weights(tmp_path / "child"), flat)
    ck.pack_policy(tmp_path / "base", drop_low_bytes=1)  # the base's weights change
    with pytest.raises(JaxplaceError) as e:
        ck.read_weights(tmp_path / "child")
    message = str(e.value)
    assert "\n" not in message and str(tmp_path / "child" / ck.PACKED_NAME) in message
    assert "'base'" in message and "sha256" in message


def _entry_changed(flat: dict, **change) -> bytes:
    doc = serialization.msgpack_restore(zlib.decompress(ck.pack_weights(flat, drop_low_bytes=1)))
    entry = doc["arrays"][change.pop("index", 0)]
    for i, v in change.items():
        entry.extend([0] * (int(i[1:]) + 1 - len(entry)))  # a field the entry lacks
        entry[int(i[1:])] = v
    return zlib.compress(serialization.msgpack_serialize(doc))


@pytest.mark.parametrize("how", ["truncated", "drop 4", "drop -1", "drop on int32",
                                 "drop of text", "planes short"])
def test_a_corrupt_rounded_file_is_a_one_line_error_naming_it(tmp_path, how):
    flat = _flat(0)
    good = ck.pack_weights(flat, drop_low_bytes=1)
    data = {"truncated": lambda: good[:len(good) // 2],
            "drop 4": lambda: _entry_changed(flat, f5=4),
            "drop -1": lambda: _entry_changed(flat, f5=-1),
            "drop on int32": lambda: _entry_changed(flat, index=2, f5=1),
            "drop of text": lambda: _entry_changed(flat, f5="one"),
            "planes short": lambda: _entry_changed(flat, f3=b"\0" * 10)}[how]()
    d = tmp_path / "policy"
    d.mkdir()
    (d / ck.PACKED_NAME).write_bytes(data)
    with pytest.raises(JaxplaceError, match="truncated or corrupt packed") as e:
        ck.read_weights(d)
    assert ck.PACKED_NAME in str(e.value) and "\n" not in str(e.value)


def test_the_shipped_policies_drop_a_plane_on_the_train_policies_only():
    # the default policy stays bit-exact (every search on plain graphs keeps its
    # results); the two -train policies hold 24-bit floats, the wheel under 10 MB
    from jaxplace.policy import default_policy_path

    for name in SHIPPED_POLICIES:
        data = (default_policy_path(name) / ck.PACKED_NAME).read_bytes()
        doc = serialization.msgpack_restore(zlib.decompress(data))
        drops = {e[5] if len(e) == 6 else 0 for e in doc["arrays"]}
        assert drops == ({1} if name.endswith("-train") else {0}), name
        if doc.get("base") is not None:  # and a base is checked, not trusted
            base = ck.read_weights(default_policy_path(doc["base"]))
            assert doc["base_sha256"] == ck._weights_digest(base), name
