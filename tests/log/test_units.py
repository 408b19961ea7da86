"""Schema, properties, features and deletion vectors."""

from __future__ import annotations

import json
from datetime import timedelta

import pyarrow as pa
import pytest

from deltalog.logstores.local import LocalLogStore
from deltalog.txn.log.deletion_vectors import (
    dv_absolute_path,
    read_deletion_vector,
    serialize_bitmap,
    write_dv_file,
    z85_encode,
)
from deltalog.txn.protocol.actions import DeletionVectorDescriptor, Metadata, Protocol
from deltalog.txn.protocol.errors import (
    CorruptLogError,
    InvalidSchemaError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from deltalog.txn.protocol.features import check_read_supported, check_write_supported
from deltalog.txn.protocol.properties import InvalidPropertyError, TableProperties, parse_interval
from deltalog.txn.protocol.schema import (
    data_type_from_json,
    duplicate_column_names,
    from_arrow,
    merge_schemas,
    parse_schema,
    split_column_name,
)

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "d", "type": "decimal(10,2)", "nullable": True, "metadata": {"comment": "x"}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "ntz", "type": "timestamp_ntz", "nullable": False, "metadata": {}},
        {"name": "b", "type": "binary", "nullable": True, "metadata": {}},
        {
            "name": "s",
            "type": {
                "type": "struct",
                "fields": [{"name": "x", "type": "integer", "nullable": True, "metadata": {}}],
            },
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "a",
            "type": {"type": "array", "elementType": "long", "containsNull": False},
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "m",
            "type": {"type": "map", "keyType": "string", "valueType": "double", "valueContainsNull": True},
            "nullable": True,
            "metadata": {},
        },
    ],
}


def test_schema_roundtrip_json_and_arrow():
    schema = parse_schema(json.dumps(SCHEMA))
    assert json.loads(schema.to_json()) == SCHEMA
    arrow = schema.to_arrow()
    assert arrow.field("d").type == pa.decimal128(10, 2)
    assert arrow.field("ntz").type == pa.timestamp("us") and not arrow.field("ntz").nullable
    assert arrow.field("m").type.item_type == pa.float64()
    assert from_arrow(arrow) == schema


def test_split_column_name_as_spark_parses_an_attribute_name():
    """Spark's ``parseAttributeName``: backquotes keep dots, two backquotes in quotes are one."""
    assert split_column_name("a.b") == ["a", "b"]
    assert split_column_name("`a.b`.c") == ["a.b", "c"]
    assert split_column_name("`val``ue`") == ["val`ue"]
    assert split_column_name("`a``.b`.`c```") == ["a`.b", "c`"]


def _struct(*fields: tuple[str, object]) -> dict[str, object]:
    return {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]}


@pytest.mark.parametrize(
    ("schema", "duplicates"),
    [
        # SchemaUtilsSuite "duplicate column name for nested column + non-nested column - case sensitivity"
        (_struct(("dup", _struct(("a", "long"))), ("DUP", "long")), ["DUP", "dup"]),
        # "duplicate column name in double nested array"
        (
            _struct(
                (
                    "top",
                    _struct(
                        (
                            "b",
                            {
                                "type": "array",
                                "containsNull": True,
                                "elementType": {
                                    "type": "array",
                                    "containsNull": True,
                                    "elementType": _struct(("d", "long"), ("D", "long")),
                                },
                            },
                        )
                    ),
                )
            ),
            ["top.b.element.element.D", "top.b.element.element.d"],
        ),
        # "duplicate column name in double nested map": the key's struct and the value's are apart
        (
            _struct(
                (
                    "m",
                    {
                        "type": "map",
                        "valueContainsNull": True,
                        "keyType": _struct(("d", "long")),
                        "valueType": _struct(("d", "long"), ("d", "string")),
                    },
                )
            ),
            ["m.value.d"],
        ),
        (
            _struct(
                (
                    "m",
                    {
                        "type": "map",
                        "valueContainsNull": True,
                        "keyType": _struct(("d", "long")),
                        "valueType": _struct(("d", "long")),
                    },
                )
            ),
            [],
        ),
        # "non duplicate column because of back tick" / "duplicate column with back ticks - nested and case"
        (_struct(("top", _struct(("a", "long"))), ("top.a", "long")), []),
        (_struct(("first", _struct(("TOP.a", "long"), ("top.a", "long")))), ["first.`TOP.a`", "first.`top.a`"]),
    ],
)
def test_duplicate_column_names_at_any_depth(schema, duplicates):
    """Delta's ``checkColumnNameDuplication``: nested fields too, through arrays and maps."""
    assert duplicate_column_names(data_type_from_json(schema)) == duplicates


_BASE = _struct(
    ("top", "string"),
    ("struct", _struct(("a", "integer"))),
    ("array", {"type": "array", "containsNull": True, "elementType": _struct(("b", "decimal(18,10)"))}),
    ("map", {"type": "map", "valueContainsNull": True, "keyType": "string", "valueType": "string"}),
)


@pytest.mark.parametrize(
    ("data", "cause"),
    [
        # SchemaUtilsSuite "schema merging of incompatible types": Delta's DELTA_FAILED_TO_MERGE_FIELDS
        # has the type conflict as its cause
        (_struct(("top", "integer")), "DELTA_MERGE_INCOMPATIBLE_DATATYPE: .* string and integer"),
        (_struct(("struct", _struct(("a", "date")))), "DELTA_MERGE_INCOMPATIBLE_DATATYPE: .* integer and date"),
        (
            _struct(
                ("array", {"type": "array", "containsNull": True, "elementType": _struct(("b", "decimal(18,12)"))})
            ),
            "DELTA_MERGE_INCOMPATIBLE_DECIMAL_TYPE: .* scale 10 and 12",
        ),
        (
            _struct(("array", {"type": "array", "containsNull": True, "elementType": _struct(("b", "decimal(16,8)"))})),
            "DELTA_MERGE_INCOMPATIBLE_DECIMAL_TYPE: .* precision 18 and 16 & scale 10 and 8",
        ),
        (
            _struct(("map", {"type": "map", "valueContainsNull": True, "keyType": "integer", "valueType": "string"})),
            "DELTA_MERGE_INCOMPATIBLE_DATATYPE: .* string and integer",
        ),
    ],
)
def test_merge_schemas_names_the_type_conflict(data, cause):
    with pytest.raises(SchemaMismatchError, match=f"DELTA_FAILED_TO_MERGE_FIELDS: .*{cause}"):
        merge_schemas(data_type_from_json(_BASE), data_type_from_json(data))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"type": "struct", "fields": [{"name": "a", "type": "nope"}]}', "unknown data type 'nope'"),
        # SchemaUtilsSuite "findUnsupportedDataTypes": Delta's DELTA_UNSUPPORTED_DATA_TYPES
        (
            '{"type": "struct", "fields": [{"name": "s", "type": {"type": "struct", "fields": '
            '[{"name": "i", "type": "interval day to second"}]}}]}',
            r"DELTA_UNSUPPORTED_DATA_TYPES: .*\[s\.i: interval day to second\]",
        ),
        (
            '{"type": "struct", "fields": [{"name": "t", "type": "time(6)"}]}',
            r"DELTA_UNSUPPORTED_DATA_TYPES: .*\[t: time",
        ),
        ('{"type": "struct", "fields": [{"name": "a", "type": "decimal(40,2)"}]}', "precision must be 1..38"),
        (
            '{"type": "struct", "fields": [{"name": "a", "type": "long"}, {"name": "A", "type": "long"}]}',
            "duplicate column",
        ),
        ('"long"', "must be a struct"),
    ],
)
def test_invalid_schemas(text, message):
    with pytest.raises(InvalidSchemaError, match=message):
        parse_schema(text)


def test_properties_defaults_and_intervals():
    p = TableProperties({})
    assert p.checkpoint_interval == 10 and p.log_retention == timedelta(days=30)
    assert p.deleted_file_retention == timedelta(weeks=1) and p.set_transaction_retention is None
    assert p.data_skipping_num_indexed_cols == 32 and not p.append_only and p.isolation_level == "Serializable"
    assert parse_interval("interval 2 hours") == timedelta(hours=2)
    assert parse_interval("1 day 12 hours") == timedelta(days=1, hours=12)
    with pytest.raises(InvalidPropertyError, match="months and years are not allowed"):
        parse_interval("interval 1 month")
    with pytest.raises(InvalidPropertyError, match="must be > 0"):
        _ = TableProperties({"delta.checkpointInterval": "0"}).checkpoint_interval
    with pytest.raises(InvalidPropertyError, match="must be 'true' or 'false'"):
        _ = TableProperties({"delta.appendOnly": "yes"}).append_only


def test_feature_checks_name_features():
    check_read_supported(Protocol(3, 7, ("deletionVectors", "columnMapping"), ("deletionVectors",)))
    with pytest.raises(UnsupportedFeatureError, match="readerVersion 4"):
        check_read_supported(Protocol(4, 7))
    check_write_supported(Protocol(3, 7, ("columnMapping",), ("columnMapping",)))
    with pytest.raises(UnsupportedFeatureError, match=r"cannot write .* coordinatedCommits-preview"):
        check_write_supported(Protocol(1, 7, None, ("coordinatedCommits-preview",)))
    check_write_supported(Protocol(1, 4), Metadata("i", '{"type":"struct","fields":[]}'))
    gen = Metadata(
        "i",
        '{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,'
        '"metadata":{"delta.generationExpression":"1"}}]}',
    )
    check_write_supported(Protocol(1, 4), gen)  # generated columns are written (txn/protocol/generated_columns.py)
    with pytest.raises(UnsupportedFeatureError, match="coordinatedCommits-preview"):
        check_write_supported(Protocol(1, 7, None, ("coordinatedCommits-preview",)), gen)


def test_deletion_vectors_inline_and_on_disk(tmp_path):
    rows = [0, 5, 70_000, 2**32 + 1]
    data = serialize_bitmap(rows)
    inline = DeletionVectorDescriptor("i", z85_encode(data), len(data), 4)
    assert read_deletion_vector(LocalLogStore(), str(tmp_path), inline).to_pylist() == rows
    blob, entries = write_dv_file([[1, 2, 3], rows])
    import uuid as _uuid

    u = _uuid.uuid4()
    dv = DeletionVectorDescriptor("u", "ab" + z85_encode(u.bytes), entries[1][1], 4, offset=entries[1][0])
    path = dv_absolute_path(str(tmp_path), dv)
    assert path.endswith(f"/ab/deletion_vector_{u}.bin")
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / f"deletion_vector_{u}.bin").write_bytes(blob)
    assert read_deletion_vector(LocalLogStore(), str(tmp_path), dv).to_pylist() == rows
    bad = bytearray(blob)
    bad[-1] ^= 0xFF
    (tmp_path / "ab" / f"deletion_vector_{u}.bin").write_bytes(bytes(bad))
    with pytest.raises(CorruptLogError, match="checksum mismatch"):
        read_deletion_vector(LocalLogStore(), str(tmp_path), dv)
    protocol_example = DeletionVectorDescriptor("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 40, 6)
    assert read_deletion_vector(LocalLogStore(), "x", protocol_example).to_pylist() == [3, 4, 7, 11, 18, 29]
