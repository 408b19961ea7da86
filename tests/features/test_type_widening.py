"""Type widening in the engine: ALTER COLUMN TYPE as a metadata-only commit recording
``delta.typeChanges``, typed refusals that leave the table untouched, and the automatic
widening of a ``mergeSchema`` write."""

from __future__ import annotations

import json
from pathlib import Path

import deltalake
import pytest

from deltalog.errors import UnsupportedTypeChangeError
from deltalog.txn.commands.type_widening import alter_column_type
from deltalog.txn.protocol.type_widening import (
    check_type_changes_readable,
    is_type_change_supported,
    is_type_change_supported_for_schema_evolution,
    record_type_changes,
    widen_for_schema_evolution,
)
from tests.features.widening_tables import WIDENINGS, build, create


def _field(log: object, name: str) -> dict[str, object]:
    schema = json.loads(log.update().metadata.schema_string)  # type: ignore[attr-defined]
    return next(f for f in schema["fields"] if f["name"] == name)


@pytest.mark.parametrize(
    ("frm", "to", "ok"),
    [
        ("byte", "short", True),
        ("short", "integer", True),
        ("integer", "long", True),
        ("byte", "long", True),
        ("long", "integer", False),
        ("float", "double", True),
        ("double", "float", False),
        ("integer", "double", True),
        ("long", "double", False),
        ("date", "timestamp_ntz", True),
        ("date", "timestamp", False),
        ("timestamp_ntz", "date", False),
        ("decimal(5,2)", "decimal(7,4)", True),
        ("decimal(5,2)", "decimal(6,4)", False),  # k1 < k2: integer digits lost
        ("decimal(5,2)", "decimal(5,1)", False),
        ("integer", "decimal(10,0)", True),
        ("integer", "decimal(9,0)", False),
        ("short", "decimal(12,2)", True),
        ("long", "decimal(20,0)", True),
        ("long", "decimal(21,2)", False),
        ("string", "long", False),
        ("integer", "string", False),
    ],
)
def test_supported_changes_follow_the_protocol(frm: str, to: str, ok: bool) -> None:
    assert is_type_change_supported(frm, to) is ok


def test_schema_evolution_widens_within_a_family_only() -> None:
    assert is_type_change_supported_for_schema_evolution("integer", "long")
    assert is_type_change_supported_for_schema_evolution("decimal(5,2)", "decimal(10,2)")
    assert not is_type_change_supported_for_schema_evolution("integer", "double")
    assert not is_type_change_supported_for_schema_evolution("integer", "decimal(12,0)")


def test_alter_is_a_metadata_only_commit_recording_type_changes(tmp_path: Path) -> None:
    log = build(str(tmp_path / "t"))
    snap = log.update()
    assert snap.version == 2 + len(WIDENINGS)
    assert "typeWidening" in (snap.protocol.reader_features or ())
    assert "typeWidening" in (snap.protocol.writer_features or ())
    first = log.read_commit(2)
    assert first[0].operation == "CHANGE COLUMN"  # type: ignore[union-attr]
    assert json.loads(first[0].operation_parameters["column"])["type"] == "long"  # type: ignore[union-attr]
    assert not [a for a in first if type(a).__name__ in ("AddFile", "RemoveFile")]
    assert _field(log, "i")["metadata"] == {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    assert _field(log, "d")["type"] == "timestamp_ntz"
    assert _field(log, "m")["metadata"] == {
        "delta.typeChanges": [{"fromType": "decimal(5,2)", "toType": "decimal(10,4)"}]
    }
    assert _field(log, "arr")["metadata"] == {
        "delta.typeChanges": [{"fromType": "integer", "toType": "long", "fieldPath": "element"}]
    }
    assert snap.num_files == 2  # nothing rewritten


def test_changes_accumulate_and_sql_names_are_accepted(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    alter_column_type(log, "s", "int")
    alter_column_type(log, "s", "BIGINT")
    assert _field(log, "s") == {
        "name": "s",
        "type": "long",
        "nullable": True,
        "metadata": {
            "delta.typeChanges": [{"fromType": "short", "toType": "integer"}, {"fromType": "integer", "toType": "long"}]
        },
    }
    assert alter_column_type(log, "s", "long") is None  # already that type: nothing committed


@pytest.mark.parametrize(
    ("column", "new_type"),
    [("i", "short"), ("f", "integer"), ("d", "timestamp"), ("m", "decimal(6,4)"), ("arr.element", "string")],
)
def test_narrowing_or_unsupported_change_leaves_the_table_untouched(tmp_path: Path, column: str, new_type: str) -> None:
    log = create(str(tmp_path / "t"))
    before = log.update().metadata.schema_string
    with pytest.raises(UnsupportedTypeChangeError, match="cannot change the type"):
        alter_column_type(log, column, new_type)
    snap = log.update()
    assert snap.version == 0 and snap.metadata.schema_string == before


def test_widening_needs_the_table_property(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"), enable=False)
    with pytest.raises(UnsupportedTypeChangeError, match=r"delta\.enableTypeWidening"):
        alter_column_type(log, "i", "long")
    assert log.update().version == 0


def test_date_to_timestamp_ntz_needs_the_timestamp_ntz_feature(tmp_path: Path) -> None:
    """Delta's ``TypeWideningAlterTableSuite``: widening a date to timestamp_ntz on a table
    without ``timestampNtz`` is refused (``DELTA_FEATURES_REQUIRE_MANUAL_ENABLEMENT``)."""
    from deltalog.errors import FeatureRequiresManualEnablementError
    from deltalog.txn.commands.alter import set_table_properties

    log = create(str(tmp_path / "t"), enable=False)
    set_table_properties(log, {"delta.enableTypeWidening": "true"})
    with pytest.raises(FeatureRequiresManualEnablementError, match="timestampNtz"):
        alter_column_type(log, "d", "timestamp_ntz")
    assert log.update().version == 1  # nothing committed


@pytest.mark.parametrize("enable", [True, False])
def test_a_void_column_takes_any_type_unrecorded(tmp_path: Path, enable: bool) -> None:
    """Delta's ``canChangeDataType`` lets ALTER COLUMN TYPE give a ``void`` column any type,
    with or without type widening, recording no ``delta.typeChanges`` (no file holds the
    column): TypeWideningMetadataSuite "void->any type change is not recorded"."""
    from deltalog.txn.commands.alter import add_columns
    from deltalog.txn.protocol.schema import PrimitiveType, StructField

    log = create(str(tmp_path / "t"), enable=enable)
    add_columns(log, [StructField("v", PrimitiveType("void"), True, {})])
    assert alter_column_type(log, "v", "int") == 2
    assert _field(log, "v") == {"name": "v", "type": "integer", "nullable": True, "metadata": {}}
    assert not any(
        "delta.typeChanges" in (f.get("metadata") or {})
        for f in json.loads(log.update().metadata.schema_string)["fields"]
    )


def test_unknown_column_is_refused(tmp_path: Path) -> None:
    log = create(str(tmp_path / "t"))
    with pytest.raises(UnsupportedTypeChangeError, match="does not exist"):
        alter_column_type(log, "nope", "long")


def test_nested_changes_carry_their_field_path() -> None:
    old = {
        "type": "struct",
        "fields": [
            {
                "name": "e",
                "type": {
                    "type": "array",
                    "elementType": {
                        "type": "map",
                        "keyType": "string",
                        "valueType": "decimal(6,2)",
                        "valueContainsNull": True,
                    },
                    "containsNull": True,
                },
                "nullable": True,
                "metadata": {},
            },
            {
                "name": "st",
                "type": {
                    "type": "struct",
                    "fields": [{"name": "x", "type": "float", "nullable": True, "metadata": {}}],
                },
                "nullable": True,
                "metadata": {},
            },
        ],
    }
    new = json.loads(json.dumps(old).replace("decimal(6,2)", "decimal(10,4)").replace('"float"', '"double"'))
    recorded = record_type_changes(new, old)
    e, st = recorded["fields"]
    # the PROTOCOL's example: a map value nested in an array
    assert e["metadata"]["delta.typeChanges"] == [
        {"fromType": "decimal(6,2)", "toType": "decimal(10,4)", "fieldPath": "element.value"}
    ]
    assert "delta.typeChanges" not in st["metadata"]
    assert st["type"]["fields"][0]["metadata"] == {"delta.typeChanges": [{"fromType": "float", "toType": "double"}]}
    check_type_changes_readable(recorded)


def test_unreadable_recorded_change_is_reported() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {
                "name": "a",
                "type": "integer",
                "nullable": True,
                "metadata": {"delta.typeChanges": [{"fromType": "long", "toType": "integer"}]},
            }
        ],
    }
    with pytest.raises(UnsupportedTypeChangeError, match="long -> integer"):
        check_type_changes_readable(schema)


def test_recorded_string_char_varchar_changes_stay_readable() -> None:
    """A change among ``string``, ``char(n)`` and ``varchar(n)`` recorded by a writer that
    should not have does not block reads (Delta's "char/varchar/string type changes don't
    trigger the unsupported type change check"); an array element's ``integer -> string``
    still does, naming its field path."""

    def field(name: str, frm: str, to: str, **extra: str) -> dict[str, object]:
        change = {"fromType": frm, "toType": to, **extra}
        return {"name": name, "type": "string", "nullable": True, "metadata": {"delta.typeChanges": [change]}}

    pairs = [("string", "char(4)"), ("string", "varchar(4)"), ("char(4)", "string"), ("varchar(4)", "char(4)")]
    fields = [field(f"c{i}", frm, to) for i, (frm, to) in enumerate(pairs)]
    nested = {"type": "struct", "fields": [field("x", "string", "char(4)")]}
    check_type_changes_readable({"type": "struct", "fields": [*fields, {"name": "s", "type": nested}]})
    array = {"type": "array", "elementType": "string", "containsNull": True}
    bad = {**field("a", "integer", "string", fieldPath="element"), "type": array}
    with pytest.raises(UnsupportedTypeChangeError, match=r"a\.element .*integer -> string"):
        check_type_changes_readable({"type": "struct", "fields": [bad]})


def test_merge_schema_widening_needs_the_property() -> None:
    table = {"type": "struct", "fields": [{"name": "a", "type": "integer", "nullable": True, "metadata": {}}]}
    data = {"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]}
    assert widen_for_schema_evolution(table, data, {}) == table
    widened = widen_for_schema_evolution(table, data, {"delta.enableTypeWidening": "true"})
    assert widened["fields"][0]["type"] == "long"
    assert widened["fields"][0]["metadata"] == {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    # Delta's allowAutomaticWidening: ALWAYS (its default since 4.1) any supported widening,
    # integer -> double too; SAME_FAMILY_TYPE within a family only; NEVER none
    doubles = {"type": "struct", "fields": [{"name": "a", "type": "double", "nullable": True, "metadata": {}}]}
    on = {"delta.enableTypeWidening": "true"}
    assert widen_for_schema_evolution(table, doubles, on)["fields"][0]["type"] == "double"
    assert widen_for_schema_evolution(table, doubles, on, automatic_widening="same_family_type") == table
    assert widen_for_schema_evolution(table, data, on, automatic_widening="same_family_type") == widened
    assert widen_for_schema_evolution(table, data, on, automatic_widening="NEVER") == table


def test_merge_schema_widening_inside_an_array_of_structs_is_recorded_once() -> None:
    """A field of an array's struct element widens as a top-level column does (Delta's
    ``mergeSchemas`` with ``TypeEvolution`` walks arrays and maps); ``record=False`` (MERGE,
    which adds struct fields too and records every change once) leaves the record out."""
    element = {"type": "struct", "fields": [{"name": "x", "type": "short", "nullable": True, "metadata": {}}]}
    table = {
        "type": "struct",
        "fields": [
            {
                "name": "arr",
                "type": {"type": "array", "elementType": element, "containsNull": True},
                "nullable": True,
                "metadata": {},
            }
        ],
    }
    data = json.loads(json.dumps(table).replace('"short"', '"integer"'))
    on = {"delta.enableTypeWidening": "true"}
    raw = widen_for_schema_evolution(table, data, on, record=False)
    assert raw == data
    recorded = record_type_changes(raw, table)
    assert recorded == widen_for_schema_evolution(table, data, on)
    x = recorded["fields"][0]["type"]["elementType"]["fields"][0]
    assert x["metadata"] == {"delta.typeChanges": [{"fromType": "short", "toType": "integer"}]}


def test_deltars_refuses_the_reader_feature_it_lacks(tmp_path: Path) -> None:
    """delta-rs (1.x) does not implement the typeWidening reader feature: it refuses the
    table rather than misreading it (our readers are checked in tests/spark)."""
    uri = str(tmp_path / "t")
    build(uri)
    with pytest.raises(Exception, match=r"(?i)typeWidening"):
        deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute("select * from t").read_all()


GOLDEN = Path(__file__).resolve().parent / "golden" / "type-widening"


def golden_copy(tmp_path: Path) -> str:
    """A writable copy of Delta's ``type-widening`` golden table (preview feature)."""
    import shutil

    target = tmp_path / "golden"
    shutil.copytree(GOLDEN, target)
    return str(target)


def test_widening_a_delta_written_preview_table_keeps_its_history(tmp_path: Path) -> None:
    from deltalog.txn.delta_log import DeltaLog

    log = DeltaLog.for_table(golden_copy(tmp_path))
    before = _field(log, "decimal_decimal_same_scale")
    assert before["metadata"] == {
        "delta.typeChanges": [{"toType": "decimal(20,2)", "fromType": "decimal(10,2)", "tableVersion": 2}]
    }
    version = alter_column_type(log, "decimal_decimal_same_scale", "decimal(22,2)")
    assert version == 3
    after = _field(log, "decimal_decimal_same_scale")
    assert after["type"] == "decimal(22,2)"
    assert after["metadata"]["delta.typeChanges"] == [  # type: ignore[index]
        {"toType": "decimal(20,2)", "fromType": "decimal(10,2)", "tableVersion": 2},
        {"fromType": "decimal(20,2)", "toType": "decimal(22,2)", "tableVersion": 3},  # preview readers need it
    ]
    assert _field(log, "int_long")["metadata"] == {
        "delta.typeChanges": [{"toType": "long", "fromType": "integer", "tableVersion": 2}]
    }
    check_type_changes_readable(json.loads(log.update().metadata.schema_string))
    with pytest.raises(UnsupportedTypeChangeError):
        alter_column_type(log, "date_timestamp_ntz", "date")


def test_columns_read_by_constraints_or_generated_columns_keep_their_type(tmp_path: Path) -> None:
    import uuid

    from deltalog.txn.commands.type_widening import _check_dependent_expressions
    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import Metadata
    from tests.features.widening_tables import SCHEMA

    log = DeltaLog.for_table(str(tmp_path / "t"))
    txn = log.start_transaction()
    config = {"delta.enableTypeWidening": "true", "delta.constraints.positive": "i > 0 AND s < 100"}
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(SCHEMA), configuration=config))
    txn.commit([], CreateTable(properties=config))
    with pytest.raises(UnsupportedTypeChangeError, match="CHECK constraint"):
        alter_column_type(log, "i", "long")
    assert log.update().version == 0
    alter_column_type(log, "f", "double")  # not read by the constraint
    schema = {
        "type": "struct",
        "fields": [
            {"name": "d", "type": "date", "nullable": True, "metadata": {}},
            {
                "name": "y",
                "type": "integer",
                "nullable": True,
                "metadata": {"delta.generationExpression": "YEAR(`d`) + 1"},
            },
        ],
    }
    metadata = Metadata(id="x", schema_string=json.dumps(schema))
    with pytest.raises(UnsupportedTypeChangeError, match="generated column"):
        _check_dependent_expressions(metadata, ["d"])
    _check_dependent_expressions(metadata, ["y"])


def test_spark_read_schemas_refuse_unreadable_type_changes() -> None:
    """Both Spark read paths take their schema from ``logical_schema`` (Delta checks in
    ``DeltaParquetFileFormat``: ``TypeWidening.assertTableReadable``)."""
    from deltalog.contrib.spark.logical_schema import logical_schema as _logical_schema

    change = {"fromType": "string", "toType": "long"}
    field = {"name": "a", "type": "long", "nullable": True, "metadata": {"delta.typeChanges": [change]}}
    with pytest.raises(UnsupportedTypeChangeError, match="string -> long"):
        _logical_schema({"type": "struct", "fields": [field]})
    field["metadata"] = {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    assert _logical_schema({"type": "struct", "fields": [field]})["fields"][0]["type"] == "long"


def test_optimize_rewrites_old_files_in_the_wider_types(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from deltalog.txn.commands.optimize import optimize
    from tests.features.widening_tables import NEW_ARROW, expected_rows

    uri = str(tmp_path / "t")
    log = build(uri)
    assert optimize(log).num_files_removed == 2
    (only,) = log.update().files
    table = pq.read_table(f"{uri}/{only.path}")
    assert table.schema.equals(NEW_ARROW)  # no file is left in the old types
    assert sorted(table.to_pylist(), key=lambda r: r["id"]) == expected_rows()
    assert json.loads(only.stats or "{}")["minValues"]["d"] == "2024-01-02T00:00:00.000"


def test_widening_racing_an_append(tmp_path: Path) -> None:
    """An append planned before a widening commits after it: Delta's conflict rule for a
    metadata change (the append read the old schema) fails the append; a new append works
    (its int32 file is read as the wider type)."""
    from deltalog.errors import MetadataChangedError
    from deltalog.txn.commit.operations import Write
    from tests.features.widening_tables import OLD_ARROW, OLD_ROWS, write_file

    log = create(str(tmp_path / "t"))
    append = log.start_transaction()
    add = write_file(log, OLD_ROWS, OLD_ARROW)
    alter_column_type(log, "i", "long")
    with pytest.raises(MetadataChangedError):
        append.commit([add], Write())
    log.start_transaction().commit([write_file(log, OLD_ROWS, OLD_ARROW)], Write())
    assert _field(log, "i")["type"] == "long" and log.update().num_files == 1


def _nested_table(tmp_path: Path, config: dict[str, str] | None = None, *extra: dict[str, object]) -> object:
    """Delta's ``createNestedTable``: ``s struct<a: byte>, m map<byte, short>, a array<short>``."""
    import uuid

    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.actions import Metadata

    def field(name: str, t: object) -> dict[str, object]:
        return {"name": name, "type": t, "nullable": True, "metadata": {}}

    fields = [
        field("s", {"type": "struct", "fields": [field("a", "byte")]}),
        field("m", {"type": "map", "keyType": "byte", "valueType": "short", "valueContainsNull": True}),
        field("a", {"type": "array", "elementType": "short", "containsNull": True}),
        *extra,
    ]
    config = {"delta.enableTypeWidening": "true", **(config or {})}
    log = DeltaLog.for_table(str(tmp_path / "nested"))
    txn = log.start_transaction()
    schema = json.dumps({"type": "struct", "fields": fields})
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=schema, configuration=config))
    txn.commit([], CreateTable(properties=config))
    return log


@pytest.mark.parametrize(
    ("column", "new_type", "error_class"),
    [
        (
            "s",
            {"type": "struct", "fields": [{"name": "a", "type": "short", "nullable": True, "metadata": {}}]},
            "STRUCT",
        ),
        (
            "s",
            {"type": "struct", "fields": [{"name": "b", "type": "short", "nullable": True, "metadata": {}}]},
            "STRUCT",
        ),
        ("m", {"type": "map", "keyType": "integer", "valueType": "integer", "valueContainsNull": True}, "MAP"),
        ("a", "array<int>", "ARRAY"),
        ("s", "int", "STRUCT"),
    ],
)
def test_a_struct_map_or_array_itself_cannot_change_type(
    tmp_path: Path, column: str, new_type: object, error_class: str
) -> None:
    """TypeWideningAlterTableNestedSuite "unsupported ALTER TABLE CHANGE COLUMN on non-leaf
    fields": only a leaf changes type (``s.a``, ``m.key``, ``a.element``); a new struct type
    would drop or add fields under the name of a type change."""
    log = _nested_table(tmp_path)
    before = log.update().metadata.schema_string  # type: ignore[attr-defined]
    with pytest.raises(UnsupportedTypeChangeError, match=rf"CANNOT_UPDATE_FIELD\.{error_class}_TYPE") as caught:
        alter_column_type(log, column, new_type)
    assert caught.value.error_class == f"CANNOT_UPDATE_FIELD.{error_class}_TYPE"
    snap = log.update()  # type: ignore[attr-defined]
    assert snap.version == 0 and snap.metadata.schema_string == before
    for leaf, wider in (("s.a", "short"), ("m.key", "int"), ("m.value", "int"), ("a.element", "int")):
        alter_column_type(log, leaf, wider)
    assert json.loads(log.update().metadata.schema_string)["fields"][1]["type"]["keyType"] == "integer"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("column", "new_type", "error_class"),
    [
        ("i", "long", None),
        ("i", "short", "NOT_SUPPORTED_CHANGE_COLUMN"),  # no upcast: Spark refuses it first
        ("i", "string", "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"),  # an upcast, no widening
        ("id", "double", "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"),
        ("i", "float", "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"),
        ("d", "timestamp", "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"),
        ("m", "decimal(5,1)", "NOT_SUPPORTED_CHANGE_COLUMN"),
        ("f", "integer", "NOT_SUPPORTED_CHANGE_COLUMN"),
    ],
)
def test_refused_type_changes_carry_deltas_error_class(
    tmp_path: Path, column: str, new_type: str, error_class: str | None
) -> None:
    """TypeWideningAlterTableSuite "unsupported type changes": a change Spark can upcast but
    Delta cannot widen is ``DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP`` (also any change on a
    table without ``delta.enableTypeWidening``); one Spark cannot upcast,
    ``NOT_SUPPORTED_CHANGE_COLUMN``."""
    log = create(str(tmp_path / "t"), enable=error_class is not None)
    with pytest.raises(UnsupportedTypeChangeError) as caught:
        alter_column_type(log, column, new_type)
    assert caught.value.error_class == (error_class or "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP")
    assert str(caught.value).startswith(f"[{caught.value.error_class}]")


def _with_expressions(tmp_path: Path, constraint: str | None, generated: str | None) -> object:
    """Delta's suites' tables: ``value``/``b``/``x`` bytes, ``st struct<x, y>``, ``arr
    array<struct<f, g>>``, ``mp map<byte, byte>``, a CHECK constraint ``ck`` and a generated
    column ``gen``."""

    def field(name: str, t: object, meta: dict[str, str] | None = None) -> dict[str, object]:
        return {"name": name, "type": t, "nullable": True, "metadata": meta or {}}

    struct = {"type": "struct", "fields": [field("x", "byte"), field("y", "byte")]}
    element = {"type": "struct", "fields": [field("f", "byte"), field("g", "byte")]}
    extra = [
        field("value", "byte"),
        field("b", "byte"),
        field("st", struct),
        field("arr", {"type": "array", "elementType": element, "containsNull": True}),
        field("mp", {"type": "map", "keyType": "byte", "valueType": "byte", "valueContainsNull": True}),
    ]
    if generated is not None:
        extra.append(field("gen", "integer", {"delta.generationExpression": generated}))
    config = {"delta.feature.generatedColumns": "supported"}
    if constraint is not None:
        config["delta.constraints.ck"] = constraint
    return _nested_table(tmp_path, config, *extra)


@pytest.mark.parametrize(
    ("expression", "refused", "allowed"),
    [
        ("b > 0", ["b"], ["value"]),  # a column named value is no map value
        ("hash(b) > 0", ["b"], ["value", "st.x"]),
        ("hash(value) > 0", ["value"], ["b"]),
        ("hash(st.x) > 0", ["st.x"], ["st.y", "b"]),
        ("hash(st) > 0", ["st.x", "st.y"], ["b"]),
        ("hash(arr[1].f) = 7", ["arr.element.f"], ["arr.element.g"]),
        ("size(arr) > 0", ["arr.element.f", "arr.element.g"], ["b"]),
        ("sign(mp[7]) < 0", ["mp.value", "mp.key"], ["b"]),
        ("hash(a[1]) = -1160545675", ["a.element"], ["m.value", "b"]),
        ("s.a = 3 AND 'value' <> 'b'", ["s.a"], ["value", "b"]),
        ("`b` + m[cast(value AS int)] > 0", ["b", "m.value", "m.key", "value"], ["st.x"]),
    ],
)
@pytest.mark.parametrize("kind", ["constraint", "generated"])
def test_the_columns_an_expression_reads_keep_their_type(
    tmp_path: Path, kind: str, expression: str, refused: list[str], allowed: list[str]
) -> None:
    """TypeWideningConstraintsSuite / TypeWideningGeneratedColumnsSuite "... with type change":
    an expression's columns are resolved against the schema as Delta's
    ``containsDependentExpression`` does, with ``element``/``key``/``value`` steps for array
    subscripts and map lookups, so a field next to the one read still widens."""
    log = _with_expressions(
        tmp_path, expression if kind == "constraint" else None, expression if kind == "generated" else None
    )
    error_class = (
        "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE"
        if kind == "constraint"
        else "DELTA_GENERATED_COLUMNS_DEPENDENT_COLUMN_CHANGE"
    )
    wider = {"value": "short", "b": "short", "st.x": "short", "st.y": "short", "s.a": "short"}
    for column in refused:
        with pytest.raises(UnsupportedTypeChangeError) as caught:
            alter_column_type(log, column, wider.get(column, "int"))
        assert caught.value.error_class == error_class, column
    assert log.update().version == 0  # type: ignore[attr-defined]
    for column in allowed:
        alter_column_type(log, column, wider.get(column, "int"))


def test_a_name_holding_dots_is_backquoted(tmp_path: Path) -> None:
    """The column path is Delta's multipart identifier, as RENAME and DROP COLUMN take it:
    ```a.b``` is one column, ``s.`x.y``` a field of ``s``."""
    struct = {"type": "struct", "fields": [{"name": "x.y", "type": "byte", "nullable": True, "metadata": {}}]}
    log = _nested_table(
        tmp_path,
        None,
        {"name": "a.b", "type": "byte", "nullable": True, "metadata": {}},
        {"name": "st", "type": struct, "nullable": True, "metadata": {}},
    )
    assert alter_column_type(log, "`a.b`", "short") == 1
    assert alter_column_type(log, "st.`x.y`", "int") == 2
    fields = json.loads(log.update().metadata.schema_string)["fields"]  # type: ignore[attr-defined]
    assert (fields[3]["type"], fields[4]["type"]["fields"][0]["type"]) == ("short", "integer")


def test_char_and_varchar_columns_become_strings_or_longer_varchars(tmp_path: Path) -> None:
    """TypeWideningFeatureCompatibilitySuite "compatibility with char/varchar columns": ALTER
    COLUMN TYPE STRING of a ``char(n)``/``varchar(n)`` column (a string whose metadata keeps the
    declared type) drops the declared type and with it the length check; Spark's analyzer lets a
    varchar grow (``char(n)`` to ``varchar(m)``, ``m >= n``) and refuses the rest."""
    from deltalog.txn.protocol.constraints import char_varchar_constraints

    def declared(name: str, t: str) -> dict[str, object]:
        return {"name": name, "type": "string", "nullable": True, "metadata": {"__CHAR_VARCHAR_TYPE_STRING": t}}

    log = _nested_table(
        tmp_path,
        {"delta.constraints.ck": "c <> 'x'"},
        declared("c", "char(3)"),
        declared("v", "varchar(3)"),
        {"name": "plain", "type": "string", "nullable": True, "metadata": {}},
    )
    refused = [("c", "char(4)"), ("c", "varchar(2)"), ("v", "varchar(2)"), ("v", "char(3)"), ("plain", "varchar(9)")]
    for column, new_type in refused:
        with pytest.raises(UnsupportedTypeChangeError) as caught:
            alter_column_type(log, column, new_type)
        assert caught.value.error_class == "NOT_SUPPORTED_CHANGE_COLUMN", (column, new_type)
    assert alter_column_type(log, "c", "CHAR(3)") is None  # the declared type already
    assert alter_column_type(log, "v", "varchar(5)") == 1
    assert alter_column_type(log, "c", "string") == 2  # a CHECK constraint reading it does not matter
    metadata = log.update().metadata  # type: ignore[attr-defined]
    fields = {f["name"]: f for f in json.loads(metadata.schema_string)["fields"]}
    assert fields["c"] == {"name": "c", "type": "string", "nullable": True, "metadata": {}}
    assert fields["v"]["metadata"] == {"__CHAR_VARCHAR_TYPE_STRING": "varchar(5)"}
    assert [c.expression for c in char_varchar_constraints(metadata)] == ["`v` IS NULL OR length(`v`) <= 5"]


def test_upcasts_are_sparks() -> None:
    """``is_upcast`` (what decides ``NOT_SUPPORTED_CHANGE_COLUMN``) agrees with Spark 4's
    ``Cast.canUpCast`` (checked over all pairs of primitive types against the JVM)."""
    from deltalog.txn.protocol.type_widening import is_upcast

    yes = [("long", "double"), ("integer", "decimal(10,0)"), ("decimal(9,0)", "integer"), ("date", "timestamp")]
    yes += [("binary", "string"), ("timestamp", "long"), ("void", "date"), ("decimal(5,2)", "decimal(7,3)")]
    no = [("decimal(10,0)", "integer"), ("decimal(3,1)", "long"), ("integer", "decimal(9,0)"), ("float", "long")]
    no += [("decimal(5,2)", "double"), ("timestamp", "date"), ("variant", "string"), ("string", "integer")]
    assert [is_upcast(a, b) for a, b in yes + no] == [True] * len(yes) + [False] * len(no)


def test_the_commit_names_the_changed_leaf(tmp_path: Path) -> None:
    """The CHANGE COLUMN commit's ``column`` parameter is Delta's ``structFieldToMap`` of the
    changed column: ``m.key`` and ``a.element`` themselves (not the map or array holding
    them), a name holding a dot backquoted as Spark's ``UnresolvedAttribute.name``."""
    struct = {"type": "struct", "fields": [{"name": "x.y", "type": "byte", "nullable": False, "metadata": {}}]}
    log = _nested_table(tmp_path, None, {"name": "st", "type": struct, "nullable": True, "metadata": {}})
    changes = [("m.key", "int"), ("m.value", "int"), ("a.element", "long"), ("st.`x.y`", "short"), ("s.a", "short")]
    for column, new_type in changes:
        alter_column_type(log, column, new_type)
    params = [json.loads(log.read_commit(v)[0].operation_parameters["column"]) for v in range(1, 6)]  # type: ignore[attr-defined]
    assert params == [
        {"name": "m.key", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "m.value", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "a.element", "type": "long", "nullable": True, "metadata": {}},
        {"name": "st.`x.y`", "type": "short", "nullable": False, "metadata": {}},
        {"name": "s.a", "type": "short", "nullable": True, "metadata": {}},
    ]


def test_expression_columns_of_any_spark_sql() -> None:
    """Names are words in Spark's lexer (``1st``, unicode letters), strings and function names
    are none, backquoted parts may hold anything."""
    from deltalog.txn.commands.dependent_expressions import expression_columns

    def field(name: str, t: object = "integer") -> dict[str, object]:
        return {"name": name, "type": t, "nullable": True, "metadata": {}}

    inner = {"type": "struct", "fields": [field("a b")]}
    schema = {"type": "struct", "fields": [field("1st"), field("été"), field("hash"), field("s", inner)]}
    expression = "hash(`1st`) + 1st * 1.5e3 > length('été') AND été IS NOT NULL AND s.`a b` > hash"
    found = expression_columns(expression, schema)
    assert found == [("1st",), ("été",), ("s", "a b"), ("hash",)]


def test_a_generated_column_keeps_the_type_of_its_expression(tmp_path: Path) -> None:
    """Delta's commit validates every generated column's expression type against the column's
    (``validateGeneratedColumns``: DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH), so widening the
    generated column itself fails there; a table that broke the rule could take no later
    metadata change from Delta."""
    log = _with_expressions(tmp_path, None, "b + 1")
    with pytest.raises(UnsupportedTypeChangeError) as caught:
        alter_column_type(log, "gen", "long")
    assert caught.value.error_class == "DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH"
    assert log.update().version == 0  # type: ignore[attr-defined]


def test_a_metadata_change_cannot_retype_a_generated_column(tmp_path: Path) -> None:
    """The same check at the commit, for every metadata change (a ``mergeSchema`` write with
    ``gen long`` data widened the generated column itself, which Delta's commit refuses): a
    generated column keeps its type while the columns its expression reads keep theirs."""
    from dataclasses import replace

    from deltalog.errors import InvalidMetadataError
    from deltalog.txn.commit.operations import ManualUpdate

    log = _with_expressions(tmp_path, None, "b + 1")
    current = log.update().metadata  # type: ignore[attr-defined]

    def retyped(**types: str) -> object:
        schema = json.loads(current.schema_string)
        for f in schema["fields"]:
            f["type"] = types.get(f["name"], f["type"])
        return replace(current, schema_string=json.dumps(schema))

    txn = log.start_transaction()  # type: ignore[attr-defined]
    with pytest.raises(InvalidMetadataError, match=r"DELTA_GENERATED_COLUMNS_EXPR_TYPE_MISMATCH.*gen.*b \+ 1"):
        txn.update_metadata(retyped(gen="long"))
    assert log.update().version == 0  # type: ignore[attr-defined]
    txn = log.start_transaction()  # type: ignore[attr-defined]
    txn.update_metadata(retyped(gen="long", b="long"))  # its input retyped as well: not judged here
    txn.commit([], ManualUpdate())
