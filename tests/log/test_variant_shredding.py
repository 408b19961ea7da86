"""Shredded variants rebuilt into the variant binary (``deltalog.txn.log.variant_shredding``)
on hand-built pyarrow columns: every primitive type the Parquet VariantShredding spec lists,
objects merged with their residual fields, arrays, nulls, and the layouts it calls invalid."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
import uuid
from typing import Any

import pyarrow as pa
import pytest

from deltalog.errors import ShreddedVariantError
from deltalog.txn.log.variant_shredding import VARIANT_TYPE, rebuild_variant, rebuild_variants_in

EMPTY = b"\x01\x00\x00"  # metadata, version 1, no names
ABC = b"\x01\x03\x00\x01\x02\x03abc"  # metadata: a, b, c


def _group(typed: pa.Array | None, value: list[bytes | None] | None, metadata: list[bytes] | None = None) -> pa.Array:
    n = len(typed) if typed is not None else len(value or [])
    arrays = [pa.array(metadata or [EMPTY] * n, pa.binary())]
    names = ["metadata"]
    if value is not None:
        arrays.append(pa.array(value, pa.binary()))
        names.append("value")
    if typed is not None:
        arrays.append(typed)
        names.append("typed_value")
    return pa.StructArray.from_arrays(arrays, names=names)


def _field(typed: pa.Array | None, value: list[bytes | None]) -> pa.Array:
    arrays, names = [pa.array(value, pa.binary())], ["value"]
    if typed is not None:
        arrays.append(typed)
        names.append("typed_value")
    return pa.StructArray.from_arrays(arrays, names=names)


def _values(column: pa.Array) -> list[Any]:
    rebuilt = rebuild_variant(column, "v")
    assert rebuilt.type == VARIANT_TYPE
    return [None if r is None else r["value"] for r in rebuilt.to_pylist()]


def _prim(type_id: int, payload: bytes = b"") -> bytes:
    return bytes([type_id << 2]) + payload


def test_every_primitive_type_is_encoded_as_the_spec_and_spark_do() -> None:
    ts = 1_704_067_200_123_456
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    cases: list[tuple[pa.Array, list[bytes]]] = [
        (pa.array([True, False]), [_prim(1), _prim(2)]),
        (pa.array([5, -1], pa.int8()), [_prim(3, b"\x05"), _prim(3, b"\xff")]),
        (pa.array([300, 5], pa.int16()), [_prim(4, b"\x2c\x01"), _prim(3, b"\x05")]),  # Spark: smallest width
        (pa.array([70000], pa.int32()), [_prim(5, struct.pack("<i", 70000))]),
        (pa.array([2**40], pa.int64()), [_prim(6, struct.pack("<q", 2**40))]),
        (pa.array([1.5], pa.float32()), [_prim(14, struct.pack("<f", 1.5))]),
        (pa.array([2.5], pa.float64()), [_prim(7, struct.pack("<d", 2.5))]),
        (pa.array([decimal.Decimal("1.25")], pa.decimal128(5, 2)), [_prim(8, b"\x02" + (125).to_bytes(4, "little"))]),
        (
            pa.array([decimal.Decimal("123456789012.345")], pa.decimal128(18, 3)),
            [_prim(9, b"\x03" + (123456789012345).to_bytes(8, "little"))],
        ),
        (
            pa.array([decimal.Decimal(-(10**20))], pa.decimal128(38, 0)),
            [_prim(10, b"\x00" + (-(10**20)).to_bytes(16, "little", signed=True))],
        ),
        (pa.array([dt.date(2024, 1, 2)]), [_prim(11, struct.pack("<i", 19724))]),
        (pa.array([ts], pa.timestamp("us", tz="UTC")), [_prim(12, struct.pack("<q", ts))]),
        (pa.array([ts], pa.timestamp("us")), [_prim(13, struct.pack("<q", ts))]),
        (pa.array([ts * 1000 + 7], pa.timestamp("ns", tz="UTC")), [_prim(18, struct.pack("<q", ts * 1000 + 7))]),
        (pa.array([ts * 1000 + 7], pa.timestamp("ns")), [_prim(19, struct.pack("<q", ts * 1000 + 7))]),
        (pa.array([3_600_000_001], pa.time64("us")), [_prim(17, struct.pack("<q", 3_600_000_001))]),
        (pa.array(["hi", "é" * 40]), [b"\x09hi", _prim(16, struct.pack("<i", 80) + "é".encode() * 40)]),
        (pa.array([b"\x01\x02"], pa.binary()), [_prim(15, struct.pack("<i", 2) + b"\x01\x02")]),
        (pa.ExtensionArray.from_storage(pa.uuid(), pa.array([u.bytes], pa.binary(16))), [_prim(20, u.bytes)]),
        (pa.array([u.bytes], pa.binary(16)), [_prim(20, u.bytes)]),
    ]
    for typed, expected in cases:
        assert _values(_group(typed, None)) == expected, typed.type
    # value where typed_value is null (another type, or variant null); SQL NULL rows stay null
    mixed = pa.StructArray.from_arrays(
        [
            pa.array([EMPTY] * 4),
            pa.array([None, b"\x09hi", b"\x00", None]),
            pa.array([7, None, None, None], pa.int32()),
        ],
        names=["metadata", "value", "typed_value"],
        mask=pa.array([False, False, False, True]),
    )
    assert _values(mixed) == [_prim(3, b"\x07"), b"\x09hi", b"\x00", None]
    assert _values(_group(None, [None])) == [b"\x00"]  # present but both null: Variant null


def test_objects_arrays_and_nesting() -> None:
    residual = b"\x02\x01\x02\x00\x01\x04"  # {"c": true}
    fields = pa.StructArray.from_arrays(
        [_field(pa.array([1, None, None], pa.int8()), [None, None, b"\x00"]), _field(None, [None, None, None])],
        names=["a", "b"],
        mask=pa.array([False, False, True]),
    )
    objects = _group(fields, [residual, None, b"\x09hi"], [ABC] * 3)
    # {"a": 1, "c": true} (b missing); {} (all missing); "hi" (not an object)
    assert _values(objects) == [b"\x02\x02\x00\x02\x00\x02\x03\x0c\x01\x04", b"\x02\x00\x00", b"\x09hi"]
    elements = _field(pa.array(["x", None, None]), [None, b"\x00", None])
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3, 3]), elements, mask=pa.array([False, False, True]))
    assert _values(_group(lists, [None, None, b"\x00"])) == [
        b"\x03\x02\x00\x02\x03\x05x\x00",
        b"\x03\x01\x00\x01\x00",
        b"\x00",
    ]
    # what Spark 4.3 wrote for {"a": 1.0, "b": "x", "c": [1, 2]} and rebuilds to these bytes
    spark_row = pa.StructArray.from_arrays(
        [
            _field(pa.array([decimal.Decimal("1.0")], pa.decimal128(18, 1)), [None]),
            _field(pa.array(["x"]), [None]),
            _field(
                pa.ListArray.from_arrays(pa.array([0, 2]), _field(pa.array([1, 2], pa.int64()), [None, None])), [None]
            ),
            _field(None, [None]),
        ],
        names=["a", "b", "c", "z"],
    )
    expected = b"\x02\x03\x00\x01\x02\x00\x06\x08\x11 \x01\n\x00\x00\x00\x05x\x03\x02\x00\x02\x04\x0c\x01\x0c\x02"
    assert _values(_group(spark_row, [None], [ABC])) == [expected]
    # variants inside a struct and a list, found by the table's Arrow type
    inner = _group(pa.array([1, 2], pa.int8()), None)
    outer = pa.StructArray.from_arrays([inner, pa.array([1, 2])], names=["v", "k"])
    target = pa.struct([pa.field("v", VARIANT_TYPE), pa.field("k", pa.int64())])
    assert rebuild_variants_in(outer, target, "s").to_pylist() == [
        {"v": {"value": b"\x0c\x01", "metadata": EMPTY}, "k": 1},
        {"v": {"value": b"\x0c\x02", "metadata": EMPTY}, "k": 2},
    ]
    listed = pa.ListArray.from_arrays(pa.array([0, 2]), inner)
    assert rebuild_variants_in(listed, pa.list_(VARIANT_TYPE), "l").to_pylist() == [
        [{"value": b"\x0c\x01", "metadata": EMPTY}, {"value": b"\x0c\x02", "metadata": EMPTY}]
    ]


def test_layouts_the_spec_calls_invalid_are_refused_by_name() -> None:
    one = _field(pa.array([1], pa.int8()), [None])
    shredded_a = pa.StructArray.from_arrays([one], names=["a"])
    in_both = b"\x02\x01\x00\x00\x01\x04"  # {"a": true} while a is shredded
    with pytest.raises(ShreddedVariantError, match=r"v: fields \['a'\] are both shredded and in value"):
        rebuild_variant(_group(shredded_a, [in_both], [ABC]), "v")
    with pytest.raises(ShreddedVariantError, match="not an object"):
        rebuild_variant(_group(shredded_a, [b"\x09hi"], [ABC]), "v")
    with pytest.raises(ShreddedVariantError, match="both value and a non-object typed_value"):
        rebuild_variant(_group(pa.array([1], pa.int8()), [b"\x00"]), "v")
    with pytest.raises(ShreddedVariantError, match="uint8 is not a shredded variant type"):
        rebuild_variant(_group(pa.array([1], pa.uint8()), None), "v")
    with pytest.raises(ShreddedVariantError, match=r"the fields \['a'\] are not in the variant metadata"):
        rebuild_variant(_group(shredded_a, [None], [EMPTY]), "v")


def test_the_shredding_property_adds_the_preview_feature_as_delta_does() -> None:
    from deltalog.txn.protocol.actions import Metadata, Protocol
    from deltalog.txn.protocol.feature_removal import dependent_features
    from deltalog.txn.protocol.features import check_read_supported, check_write_supported
    from deltalog.txn.protocol.protocol_requirements import protocol_for_existing_table, protocol_for_new_table

    schema = '{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true,"metadata":{}}]}'
    shredding = Metadata(schema_string=schema, configuration={"delta.enableVariantShredding": "true"})
    required = protocol_for_new_table(shredding)
    assert required.reader_features == ("variantShredding-preview", "variantType")
    # an existing variant table: only the preview feature is added
    plain = Protocol(3, 7, ("variantType",), ("variantType",))
    upgraded = protocol_for_existing_table(plain, shredding)
    assert upgraded == Protocol(
        3, 7, ("variantShredding-preview", "variantType"), ("variantShredding-preview", "variantType")
    )
    # a table with the stable feature (asked for by name, or already there) does not get the preview one too
    asked = {"delta.enableVariantShredding": "true", "delta.feature.variantShredding": "supported"}
    assert protocol_for_new_table(Metadata(schema_string=schema, configuration=asked)).reader_features == (
        "variantShredding",
        "variantType",
    )
    stable = Protocol(3, 7, ("variantShredding", "variantType"), ("variantShredding", "variantType"))
    assert protocol_for_existing_table(stable, shredding) is None
    for protocol in (upgraded, stable):
        check_read_supported(protocol)
        check_write_supported(protocol, shredding)
    # Delta's requiredFeatures: the stable feature needs variantType, the preview one nothing
    assert dependent_features("variantType", stable) == ["variantShredding"]
    assert dependent_features("variantType", upgraded) == []


_PREVIEW, _STABLE = "variantType-preview", "variantType"
_SHRED_PREVIEW, _SHRED = "variantShredding-preview", "variantShredding"
_ON = {"delta.enableVariantShredding": "true"}


def _asked(*features: str) -> dict[str, str]:
    return {f"delta.feature.{f}": "supported" for f in features}


def _variant_schema(variant: bool) -> str:
    fields = [{"name": "s", "type": "string", "nullable": True, "metadata": {}}]
    fields += [{"name": "v", "type": "variant", "nullable": True, "metadata": {}}] if variant else []
    return json.dumps({"type": "struct", "fields": fields})


@pytest.mark.parametrize(
    ("variant", "create", "alter", "expected"),
    [
        # DeltaVariantSuite: a new variant table gets the stable feature only, next to the legacy ones
        ("create", {}, None, {_STABLE}),
        # ... and a variant column added later the same; a table asked for the preview feature by name
        # (on create, or before the column is added) keeps it alone, the stable one is not added too
        ("alter", {}, {}, {_STABLE}),
        ("create", _asked(_PREVIEW), None, {_PREVIEW}),
        ("alter", _asked(_PREVIEW), {}, {_PREVIEW}),
        ("create", {}, _asked(_PREVIEW), {_STABLE, _PREVIEW}),
        # DeltaVariantShreddingSuite: the property adds the preview shredding feature (Delta's
        # forceUsePreviewTableFeature default), without variantType, and turning it off again
        # keeps the feature
        ("", _ON, None, {_SHRED_PREVIEW}),
        ("", {}, _ON, {_SHRED_PREVIEW}),
        ("", _ON, {"delta.enableVariantShredding": "false"}, {_SHRED_PREVIEW}),
        ("", _asked(_SHRED_PREVIEW), None, {_SHRED_PREVIEW}),
        # the stable shredding feature needs the stable variantType (even beside its preview) and
        # makes the property's preview one unneeded; both asked for by name are both kept
        ("", {**_ON, **_asked(_SHRED)}, None, {_SHRED, _STABLE}),
        ("", {}, _asked(_SHRED), {_SHRED, _STABLE}),
        ("", _asked(_SHRED, _SHRED_PREVIEW), _ON, {_SHRED, _SHRED_PREVIEW, _STABLE}),
        ("create", _asked(_PREVIEW), {**_ON, **_asked(_SHRED)}, {_PREVIEW, _STABLE, _SHRED}),
    ],
)
def test_variant_features_are_added_as_delta_adds_them(
    variant: str, create: dict[str, str], alter: dict[str, str] | None, expected: set[str]
) -> None:
    """Which variant features a table gets on create and on a later change of its properties
    (``alter``), its variant column added on create or with that change, as Delta's
    ``VariantTypeTableFeature`` / ``VariantShreddingPreviewTableFeature``
    ``metadataRequiresFeatureToBeEnabled`` and ``requiredFeatures`` decide."""
    from deltalog.txn.protocol.actions import Metadata
    from deltalog.txn.protocol.protocol_requirements import protocol_for_existing_table, protocol_for_new_table

    protocol = protocol_for_new_table(
        Metadata(schema_string=_variant_schema(variant == "create"), configuration=create)
    )
    if alter is not None:
        changed = Metadata(schema_string=_variant_schema(variant != ""), configuration=alter)
        protocol = protocol_for_existing_table(protocol, changed) or protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert set(protocol.reader_features or ()) == expected
    assert set(protocol.writer_features or ()) == expected | {"appendOnly", "invariants"}


def test_object_fields_are_sorted_as_spark_sorts_them_utf16() -> None:
    # Spark's VariantBuilder sorts fields by Java String order (UTF-16 code units) and its
    # readers look fields up by binary search in that order: a key beyond the BMP ("😀",
    # surrogates D83D DE00) comes before "\ue000", unlike in code point order
    low, high = "\ue000", "\U0001f600"
    names = (low + high).encode()
    metadata = bytes([1, 2, 0, 3, 7]) + names  # version 1, the names low (id 0) and high (id 1)
    fields = pa.StructArray.from_arrays(
        [_field(pa.array([1], pa.int8()), [None]), _field(pa.array([2], pa.int8()), [None])], names=[low, high]
    )
    # {"😀": 2, "\ue000": 1}: ids 1, 0; offsets 0, 2, 4
    assert _values(_group(fields, [None], [metadata])) == [b"\x02\x02\x01\x00\x00\x02\x04\x0c\x02\x0c\x01"]
