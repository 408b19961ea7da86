"""Column mapping rules of the engine, checked against Delta's ``DeltaColumnMappingSuite``
(``DeltaColumnMapping.verifyAndUpdateMetadataChange``, ``checkColumnIdAndPhysicalNameAssignments``
and ``OptimisticTransaction.performCdcColumnMappingCheck``): which mode changes an existing
table may make, ids and physical names given on enablement, duplicate ids and physical names,
column mapping metadata on a table without it, and the change data feed's block on file
actions in a commit that renames or drops a column."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from deltalog.txn.commands import alter
from deltalog.txn.commands.drop_feature import drop_feature
from deltalog.txn.commands.restore import restore
from deltalog.txn.commit.operations import CreateTable, ManualUpdate
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Action, AddCDCFile, AddFile, Metadata, Protocol, RemoveFile, SetTransaction
from deltalog.txn.protocol.column_mapping import PHYSICAL_NAME
from deltalog.txn.protocol.errors import (
    ColumnMappingAndCdcOperationBlockedError,
    ColumnMappingMetadataAlreadyExistsError,
    InvalidSchemaChangeError,
    UnsupportedColumnMappingModeChangeError,
)
from deltalog.txn.protocol.schema import PrimitiveType, StructField, StructType

MODE = "delta.columnMapping.mode"


def _field(name: str, kind: Any = "string", cid: int | None = None, physical: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if cid is not None:
        meta["delta.columnMapping.id"] = cid
    if physical is not None:
        meta[PHYSICAL_NAME] = physical
    return {"name": name, "type": kind, "nullable": True, "metadata": meta}


def _struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


#: Delta's ``schemaWithPhysicalNamesNested``, reduced: ``a``, ``b.c``, ``b.foo.bar.f``, ``h``
NESTED = _struct(
    _field("a", cid=1, physical="aaa"),
    _field(
        "b",
        _struct(
            _field("c", cid=3, physical="ccc"),
            _field("foo.bar", _struct(_field("f", cid=6, physical="fff")), cid=5, physical="foo.foo.foo.bar.bar.bar"),
        ),
        cid=2,
        physical="bbb",
    ),
    _field("h", cid=7, physical="hhh"),
)


def _create(config: dict[str, str], schema: dict[str, Any] | None = None, uri: str | None = None) -> DeltaLog:
    log = DeltaLog.for_table(uri or f"memory://column-mapping-{uuid.uuid4().hex}")
    txn = log.start_transaction()
    plain = _struct(_field("a"), _field("b", _struct(_field("c"), _field("d", "integer"))))
    txn.update_metadata(Metadata(schema_string=json.dumps(schema or plain), configuration=config))
    txn.commit([], CreateTable())
    return log


def _mapping(log: DeltaLog) -> list[tuple[str, int | None, str]]:
    schema = log.update().schema
    out = []
    for f in schema.fields:
        out.append((f.name, f.column_mapping_id, f.physical_name))
        if isinstance(f.type, StructType):
            out += [(f"{f.name}.{g.name}", g.column_mapping_id, g.physical_name) for g in f.type.fields]
    return out


@pytest.mark.parametrize("old", ["none", "name", "id"])
@pytest.mark.parametrize("new", ["none", "name", "id"])
@pytest.mark.parametrize("removal_allowed", [True, False])
def test_mode_changes_delta_allows(old: str, new: str, removal_allowed: bool) -> None:
    """ "illegal mode changes": no change, none -> name, and (removal allowed) name/id -> none."""
    log = _create({MODE: old})
    allowed = old == new or (old == "none" and new == "name") or (removal_allowed and new == "none")
    if allowed:
        alter.set_table_properties(log, {MODE: new}, allow_column_mapping_removal=removal_allowed)
        assert log.update().properties.column_mapping_mode == new
    else:
        with pytest.raises(UnsupportedColumnMappingModeChangeError, match="Changing column mapping mode from"):
            alter.set_table_properties(log, {MODE: new}, allow_column_mapping_removal=removal_allowed)


def test_enabling_and_assigning_ids_as_delta() -> None:
    """ "upgrade and change mode in one ALTER TABLE cmd" (existing names become physical names,
    ids in pre-order, legacy (2, 5) kept), "create table in column mapping mode without
    defining ids", ids given in the schema kept and the next one above them, "restore Delta
    table with name column mapping enabled" (maxColumnId never goes down), and a schema
    change in the enabling commit refused."""
    log = _create({})
    alter.set_table_properties(log, {MODE: "name", "delta.minReaderVersion": "2", "delta.minWriterVersion": "5"})
    assert _mapping(log) == [("a", 1, "a"), ("b", 2, "b"), ("b.c", 3, "c"), ("b.d", 4, "d")]
    assert log.update().protocol == Protocol(2, 5)
    assert log.update().metadata.configuration["delta.columnMapping.maxColumnId"] == "4"

    created = _create({MODE: "id"})
    assert [(n, i) for n, i, _ in _mapping(created)] == [("a", 1), ("b", 2), ("b.c", 3), ("b.d", 4)]
    assert all(p.startswith("col-") for _, _, p in _mapping(created))

    given = _create({MODE: "name"}, _struct(_field("a", cid=111), _field("b", "integer", cid=222)))
    alter.add_columns(given, [StructField("c", PrimitiveType("string"))])
    assert [(n, i) for n, i, _ in _mapping(given)] == [("a", 111), ("b", 222), ("c", 223)]

    renamed = _create({MODE: "name"}, _struct(_field("a", "long")))
    alter.add_columns(renamed, [StructField("b", PrimitiveType("long"))])
    alter.drop_columns(renamed, ["a"])
    alter.rename_column(renamed, "b", "a")
    restore(renamed, version=0)
    assert renamed.update().metadata.configuration["delta.columnMapping.maxColumnId"] == "2"
    assert _mapping(renamed)[0][:2] == ("a", 1)

    txn = _create({}).start_transaction()
    with pytest.raises(InvalidSchemaChangeError, match="cannot change in the commit that enables column mapping"):
        txn.update_metadata(Metadata(schema_string=json.dumps(_struct(_field("zz"))), configuration={MODE: "name"}))


@pytest.mark.parametrize("mode", ["name", "id"])
def test_duplicated_ids_and_physical_names_are_refused(mode: str) -> None:
    """ "create column mapped table with duplicated id/physical name should error"; the same
    physical name at two paths is fine (Delta checks full physical paths)."""
    for schema, message in (
        (_struct(_field("a", cid=2), _field("b", cid=2)), "same id 2"),
        (_struct(_field("a", cid=1, physical="bbb"), _field("b", cid=2, physical="bbb")), "physical name"),
        (
            _struct(
                _field("b", _struct(_field("c", cid=3, physical="dup"), _field("d", cid=4, physical="dup")), cid=2)
            ),
            "'b.d' has the physical name",
        ),
    ):
        with pytest.raises(InvalidSchemaChangeError, match=message):
            _create({MODE: mode}, schema)
    _create({MODE: mode}, _struct(_field("a", cid=1, physical="c"), _field("b", _struct(_field("c", cid=3)), cid=2)))


def _drop(schema: dict[str, Any], path: list[str]) -> dict[str, Any]:
    out = json.loads(json.dumps(schema))
    parent = out
    for name in path[:-1]:
        parent = next(f for f in parent["fields"] if f["name"] == name)["type"]
    parent["fields"] = [f for f in parent["fields"] if f["name"] != path[-1]]
    return out


def _rename(schema: dict[str, Any], path: list[str]) -> dict[str, Any]:
    out = json.loads(json.dumps(schema))
    parent = out
    for name in path[:-1]:
        parent = next(f for f in parent["fields"] if f["name"] == name)["type"]
    next(f for f in parent["fields"] if f["name"] == path[-1])["name"] = "ii"
    return out


_FILE_ACTIONS: list[Action] = [
    AddFile("foo", {}, 1, 1, data_change=True),
    RemoveFile("foo", data_change=True),
    AddCDCFile("foo", {}, 1),
]


@pytest.mark.parametrize("mode", ["name", "id"])
@pytest.mark.parametrize("path", [["h"], ["b", "foo.bar", "f"]])
@pytest.mark.parametrize("change", [_drop, _rename])
def test_change_data_feed_blocks_file_actions_with_a_rename_or_drop(mode: str, path: list[str], change: Any) -> None:
    """ "CDF and Column Mapping: should block when CDF=true" / "should not block when
    CDF=false": a commit that drops or renames a column (top-level or nested) under column
    mapping on a table with the change data feed may not add, remove or add change files
    (``DELTA_BLOCK_COLUMN_MAPPING_AND_CDC_OPERATION``), nothing committed; other actions pass,
    and so does everything without the feed."""
    for cdf in ("true", "false"):
        for action in [*_FILE_ACTIONS, SetTransaction("id", 1)]:
            log = _create({MODE: mode, "delta.enableChangeDataFeed": cdf}, NESTED)
            txn = log.start_transaction()
            txn.update_metadata(dataclasses.replace(txn.metadata, schema_string=json.dumps(change(NESTED, path))))
            if cdf == "true" and not isinstance(action, SetTransaction):
                with pytest.raises(ColumnMappingAndCdcOperationBlockedError, match='Operation "Manual Update"'):
                    txn.commit([action], ManualUpdate())
                assert log.update().version == 0
            else:
                assert txn.commit([action], ManualUpdate()) == 1


def test_change_data_feed_blocks_file_actions_while_enabling_column_mapping() -> None:
    """ "should block CM upgrade when commit has FileActions and CDF enabled"."""
    for cdf in ("true", "false"):
        log = _create({"delta.enableChangeDataFeed": cdf})
        txn = log.start_transaction()
        config = {**txn.metadata.configuration, MODE: "name"}
        txn.update_metadata(dataclasses.replace(txn.metadata, configuration=config))
        if cdf == "true":
            with pytest.raises(ColumnMappingAndCdcOperationBlockedError):
                txn.commit([_FILE_ACTIONS[0]], ManualUpdate())
        else:
            assert txn.commit([_FILE_ACTIONS[0]], ManualUpdate()) == 1


def _legacy_table(tmp_path: Path) -> DeltaLog:
    """A table without column mapping whose schema has column mapping metadata, as an old
    writer's bug left them (what Delta's tests make with ``columnMapping.stripMetadata`` off)."""
    log = _create({MODE: "none"}, _struct(_field("id", "long")), str(tmp_path / "legacy"))
    commit = tmp_path / "legacy" / "_delta_log" / f"{0:020d}.json"
    text = commit.read_text().replace('\\"metadata\\": {}', '\\"metadata\\": {\\"delta.columnMapping.id\\": 0}')
    commit.write_text(text)
    commit.with_suffix(".crc").unlink(missing_ok=True)
    log = DeltaLog.for_table(str(tmp_path / "legacy"))
    assert log.update().schema.fields[0].column_mapping_id == 0
    return log


def test_column_mapping_metadata_on_a_table_without_column_mapping(tmp_path: Path) -> None:
    """ "column mapping metadata are stripped when feature is disabled" (both ways) and
    "enabling column mapping disallowed if column mapping metadata already exists"."""
    fresh = _create({MODE: "none"}, _struct(_field("id", "long", cid=0, physical="col-0")))
    assert "delta.columnMapping" not in fresh.update().metadata.schema_string
    legacy = _legacy_table(tmp_path)
    metadata = legacy.update().metadata
    schema = json.loads(metadata.schema_string)
    schema["fields"].append(_field("value", "long", cid=0, physical="col-0"))
    txn = legacy.start_transaction()
    txn.update_metadata(dataclasses.replace(metadata, schema_string=json.dumps(schema)))
    txn.commit([], ManualUpdate())
    assert [f.column_mapping_id for f in legacy.update().schema.fields] == [0, 0]  # kept: stripping could break it
    with pytest.raises(ColumnMappingMetadataAlreadyExistsError, match="METADATA_ALREADY_EXISTS"):
        alter.set_table_properties(legacy, {MODE: "name"})
    assert legacy.update().version == 1


def test_dropping_the_feature_honours_allow_removal() -> None:
    """DropColumnMappingFeatureSuite "column mapping cannot be dropped without the feature
    flag" (``spark.databricks.delta.columnMapping.allowRemoval`` = ``false``): refused, nothing
    committed; allowed, the files are rewritten and the feature leaves the protocol."""
    log = _create({MODE: "name"})
    with pytest.raises(UnsupportedColumnMappingModeChangeError, match="from 'name' to 'none'"):
        drop_feature(log, "columnMapping", allow_column_mapping_removal=False)
    assert log.update().version == 0
    drop_feature(log, "columnMapping")
    assert "columnMapping" not in (log.update().protocol.writer_features or ())


def test_rename_and_drop_reach_fields_inside_arrays_and_maps() -> None:
    """DeltaColumnRenameSuite "rename fields nested in arrays" / "... in maps"
    (``a.element.element.x``, ``m.key.x``, ``m.value.value.z``): the field keeps its physical
    name; ``a.element`` itself is no field to rename (Delta's ``INVALID_FIELD_NAME``)."""
    inner = {
        "type": "array",
        "elementType": _struct(_field("x", "integer"), _field("y", "integer")),
        "containsNull": True,
    }
    array = {"type": "array", "elementType": inner, "containsNull": True}
    value = {
        "type": "map",
        "keyType": "string",
        "valueType": _struct(_field("z", "integer")),
        "valueContainsNull": True,
    }
    maps = {"type": "map", "keyType": _struct(_field("x", "integer")), "valueType": value, "valueContainsNull": True}
    log = _create({MODE: "name"}, _struct(_field("a", array), _field("m", maps)))

    def element_of(schema_string: str) -> dict[str, Any]:
        return dict(json.loads(schema_string)["fields"][0]["type"]["elementType"]["elementType"])

    x_physical = element_of(log.update().metadata.schema_string)["fields"][0]["metadata"][PHYSICAL_NAME]
    alter.rename_column(log, "a.element.element.x", "x1")
    alter.rename_column(log, "m.key.x", "x1")
    alter.rename_column(log, "m.value.value.z", "z1")
    alter.drop_columns(log, ["a.element.element.y"])
    schema = json.loads(log.update().metadata.schema_string)
    element = element_of(log.update().metadata.schema_string)
    assert [f["name"] for f in element["fields"]] == ["x1"]
    key, values = schema["fields"][1]["type"]["keyType"], schema["fields"][1]["type"]["valueType"]["valueType"]
    assert (key["fields"][0]["name"], values["fields"][0]["name"]) == ("x1", "z1")
    assert element["fields"][0]["metadata"][PHYSICAL_NAME] == x_physical
    assert log.history(1)[0].operation_parameters == {"columns": '["a.element.element.y"]'}
    with pytest.raises(InvalidSchemaChangeError, match="'a' is not a struct"):
        alter.rename_column(log, "a.element", "e2")


_NON_STRUCT = "DELTA_UNSUPPORTED_DROP_NESTED_COLUMN_FROM_NON_STRUCT_TYPE"


@pytest.mark.parametrize(
    ("call", "error_class"),
    [  # DeltaColumnRenameSuite "rename in column mapping mode", DeltaDropColumnSuite "corner cases", "can't drop ..."
        (lambda log: alter.rename_column(log, "a", "a"), "FIELD_ALREADY_EXISTS"),
        (lambda log: alter.rename_column(log, "a", "A"), "FIELD_ALREADY_EXISTS"),
        (lambda log: alter.rename_column(log, "b.c", "D"), "FIELD_ALREADY_EXISTS"),
        (lambda log: alter.add_columns(log, [StructField("b.C", PrimitiveType("string"))]), "FIELD_ALREADY_EXISTS"),
        (lambda log: alter.drop_columns(log, ["s.x"]), "DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA"),
        (lambda log: alter.drop_columns(log, ["a", "b", "s", "m"]), "DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA"),
        (lambda log: alter.drop_columns(log, ["m.key"]), _NON_STRUCT),
        (lambda log: alter.drop_columns(log, ["m.VALUE"]), _NON_STRUCT),
        (lambda log: alter.drop_columns(log, ["b", "m.key"], if_exists=True), _NON_STRUCT),
    ],
)
def test_rename_and_drop_refusals_name_deltas_error_classes(call: Any, error_class: str) -> None:
    """As Spark's ``checkColumnNotExists`` (a rename to the column's own name, in any case, or to
    a sibling's; an added field that exists) and Delta's ``SchemaUtils.dropColumn`` (the last
    field of a struct or of the table; a map's key or value, an array's element): refused with
    the error class, nothing committed."""
    maps = {"type": "map", "keyType": "integer", "valueType": "integer", "valueContainsNull": True}
    log = _create(
        {MODE: "name"},
        _struct(
            _field("a"),
            _field("b", _struct(_field("c"), _field("d", "integer"))),
            _field("s", _struct(_field("x"))),
            _field("m", maps),
        ),
    )
    with pytest.raises(InvalidSchemaChangeError, match=rf"\[{error_class}\]"):
        call(log)
    assert log.update().version == 0


def test_merged_struct_fields_inside_arrays_and_maps_get_ids() -> None:
    """Delta's ``mergeSchemas`` (a ``mergeSchema`` write, MERGE with schema evolution) adds a
    source struct's extra fields inside an array's element and a map's value, keeping the
    table's fields and their ids; ``assignColumnIdAndPhysicalName`` gives the new nested
    fields the next ids."""
    from deltalog.txn.protocol.column_mapping import assign_column_mapping
    from deltalog.txn.protocol.schema import StructType, data_type_from_json, merge_schemas

    def struct(*fields: str) -> dict[str, Any]:
        return {"type": "struct", "fields": [_field(f, "integer") for f in fields]}

    def table(element: dict[str, Any], value: dict[str, Any]) -> StructType:
        array = {"type": "array", "elementType": element, "containsNull": True}
        kv = {"type": "map", "keyType": "string", "valueType": value, "valueContainsNull": True}
        parsed = data_type_from_json({"type": "struct", "fields": [_field("arr", array), _field("m", kv)]})
        assert isinstance(parsed, StructType)
        return parsed

    mapped, max_id = assign_column_mapping(table(struct("x"), struct("a")), 0)
    merged = merge_schemas(mapped, table(struct("z", "x"), struct("b", "a")))
    evolved, new_max = assign_column_mapping(merged, max_id)
    fields = evolved.to_json_value()["fields"]
    element, value = fields[0]["type"]["elementType"]["fields"], fields[1]["type"]["valueType"]["fields"]
    assert [f["name"] for f in element] == ["x", "z"] and [f["name"] for f in value] == ["a", "b"]
    ids = [f["metadata"]["delta.columnMapping.id"] for f in (*element, *value)]
    assert (max_id, new_max, sorted(ids[1::2])) == (4, 6, [5, 6])
