"""IcebergCompatV1/V2/V3 (UniForm) in the engine: what enabling sets (column mapping, the
atomic-conversion guard, the protocol), V2's nested ids laid out as Delta assigns them, and
each writer requirement refused with its typed error, leaving the table as it was."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from deltalog.errors import (
    IcebergCompatUnsupportedOperationError,
    IcebergCompatViolationError,
    UniFormIcebergRequiresCompatError,
)
from deltalog.txn.commands.clone import clone
from deltalog.txn.commit.commit_errors import commit_certainly_failed
from deltalog.txn.commit.operations import CreateTable, SetTableProperties, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import AddFile, Metadata
from deltalog.txn.protocol.column_defaults import is_literal_default
from deltalog.txn.protocol.column_mapping import assign_column_mapping, assign_nested_ids
from deltalog.txn.protocol.iceberg_compat import row_tracking_field_ids
from deltalog.txn.protocol.schema import parse_schema
from deltalog.txn.protocol.type_widening import widen_for_schema_evolution

V2 = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def _field(name: str, kind: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": True, "metadata": {}}


def _array(element: Any) -> dict[str, Any]:
    return {"type": "array", "elementType": element, "containsNull": True}


def _map(key: Any, value: Any) -> dict[str, Any]:
    return {"type": "map", "keyType": key, "valueType": value, "valueContainsNull": True}


def _schema(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


# PROTOCOL's example: col1 array<array<int>>, col2 map<int, array<int>>, col3 map<int, struct<subcol1 array<int>>>
EXAMPLE = _schema(
    _field("col1", _array(_array("integer"))),
    _field("col2", _map("integer", _array("integer"))),
    _field("col3", _map("integer", {"type": "struct", "fields": [_field("subcol1", _array("integer"))]})),
    _field("p", "string"),
)


def _create(path: Path, config: dict[str, str], schema: str = EXAMPLE, partition_by: tuple[str, ...] = ()) -> DeltaLog:
    log = DeltaLog.for_table(str(path))
    txn = log.start_transaction()
    txn.update_metadata(
        Metadata(id=str(uuid.uuid4()), schema_string=schema, partition_columns=partition_by, configuration=config)
    )
    txn.commit([], CreateTable(partition_by=partition_by))
    return log


def test_enabling_v2_sets_column_mapping_and_assigns_nested_ids_as_delta(tmp_path: Path) -> None:
    log = _create(tmp_path / "t", V2, partition_by=("p",))
    snap = log.update()
    assert set(snap.protocol.writer_features or ()) >= {"columnMapping", "icebergCompatV2"}
    config = snap.metadata.configuration
    assert config["delta.columnMapping.mode"] == "name"
    assert config["delta.universalFormat.iceberg.atomicConversion.supported"] == "true"
    fields = {f["name"]: f for f in json.loads(snap.metadata.schema_string)["fields"]}
    meta = {n: f["metadata"] for n, f in fields.items()}
    phys = {n: m["delta.columnMapping.physicalName"] for n, m in meta.items()}
    inner = fields["col3"]["type"]["valueType"]["fields"][0]["metadata"]
    # column ids first (pre-order: col1 1, col2 2, col3 3, subcol1 4, p 5), then nested ids in pre-order
    assert [meta[n]["delta.columnMapping.id"] for n in ("col1", "col2", "col3", "p")] == [1, 2, 3, 5]
    assert meta["col1"]["delta.columnMapping.nested.ids"] == {
        f"{phys['col1']}.element": 6,
        f"{phys['col1']}.element.element": 7,
    }
    assert meta["col2"]["delta.columnMapping.nested.ids"] == {
        f"{phys['col2']}.key": 8,
        f"{phys['col2']}.value": 9,
        f"{phys['col2']}.value.element": 10,
    }
    assert meta["col3"]["delta.columnMapping.nested.ids"] == {f"{phys['col3']}.key": 11, f"{phys['col3']}.value": 12}
    assert inner["delta.columnMapping.nested.ids"] == {f"{inner['delta.columnMapping.physicalName']}.element": 13}
    assert meta["p"]["delta.columnMapping.nested.ids"] == {}
    assert config["delta.columnMapping.maxColumnId"] == "13"

    # a column added later gets ids above the max, the existing ones stay
    txn = log.start_transaction()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"].append(_field("tags", _array("string")))
    txn.update_metadata(dataclasses.replace(snap.metadata, schema_string=json.dumps(schema)))
    txn.commit([], Write())
    after = log.update()
    tags = json.loads(after.metadata.schema_string)["fields"][-1]["metadata"]
    assert tags["delta.columnMapping.id"] == 14
    assert tags["delta.columnMapping.nested.ids"] == {f"{tags['delta.columnMapping.physicalName']}.element": 15}
    assert json.loads(after.metadata.schema_string)["fields"][0] == fields["col1"]


def _add(stats: str | None, partition_values: dict[str, str | None]) -> AddFile:
    return AddFile(
        path=f"{uuid.uuid4()}.parquet", partition_values=partition_values, size=1, modification_time=1, stats=stats
    )


def _refusals(tmp_path: Path) -> list[tuple[str, Any]]:
    plain = _schema(_field("id", "long"), _field("p", "string"))
    return [
        ("VERSION_MUTUAL_EXCLUSIVE", lambda p: _create(p, {**V2, "delta.enableIcebergCompatV1": "true"}, plain)),
        ("UNIVERSAL_FORMAT", lambda p: _create(p, {"delta.universalFormat.enabledFormats": "iceberg"}, plain)),
        (
            "WRONG_REQUIRED_TABLE_PROPERTY",
            lambda p: _create(p, {**V2, "delta.columnMapping.mode": "none"}, plain),
        ),
        (
            "DELETION_VECTORS_SHOULD_BE_DISABLED",
            lambda p: _create(p, {**V2, "delta.enableDeletionVectors": "true"}, plain),
        ),
        ("UNSUPPORTED_DATA_TYPE", lambda p: _create(p, {"delta.enableIcebergCompatV1": "true"}, EXAMPLE)),
        ("UNSUPPORTED_DATA_TYPE", lambda p: _create(p, V2, _schema(_field("v", "variant"), _field("id", "long")))),
    ]


@pytest.mark.parametrize("case", range(6))
def test_a_table_that_breaks_a_requirement_is_not_created(tmp_path: Path, case: int) -> None:
    reason, create = _refusals(tmp_path)[case]
    error = UniFormIcebergRequiresCompatError if reason == "UNIVERSAL_FORMAT" else IcebergCompatViolationError
    with pytest.raises(error, match=reason):
        create(tmp_path / "t")
    assert not (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").exists()


def test_commits_to_an_enabled_table_keep_its_requirements(tmp_path: Path) -> None:
    plain = _schema(_field("id", "long"), _field("p", "string"))
    log = _create(tmp_path / "t", V2, plain, partition_by=("p",))
    snap = log.update()
    values = {json.loads(snap.metadata.schema_string)["fields"][1]["metadata"]["delta.columnMapping.physicalName"]: "a"}

    def refused(reason: str, actions: list[Any], metadata: Metadata | None = None) -> None:
        txn = log.start_transaction()
        if metadata is not None:
            txn.update_metadata(metadata)
        with pytest.raises(IcebergCompatViolationError, match=reason):
            txn.commit(actions, Write())
        assert log.update().version == snap.version

    refused("MISSING_NUM_RECORDS", [_add(None, values)])
    refused("MISSING_NUM_RECORDS", [_add('{"minValues": {}}', values)])
    refused("REPLACE_TABLE_CHANGE_PARTITION_NAMES", [], dataclasses.replace(snap.metadata, partition_columns=("id",)))
    dv = {**snap.metadata.configuration, "delta.enableDeletionVectors": "true"}
    refused("DELETION_VECTORS_SHOULD_BE_DISABLED", [], dataclasses.replace(snap.metadata, configuration=dv))
    # int -> double is a type widening Delta allows and Iceberg does not
    widened = json.loads(snap.metadata.schema_string)
    widened["fields"][0]["type"] = "double"
    widened["fields"][0]["metadata"]["delta.typeChanges"] = [{"fromType": "integer", "toType": "double"}]
    config = {**snap.metadata.configuration, "delta.enableTypeWidening": "true"}
    widening = dataclasses.replace(snap.metadata, schema_string=json.dumps(widened), configuration=config)
    refused("UNSUPPORTED_TYPE_WIDENING", [], widening)

    txn = log.start_transaction()
    txn.commit([_add('{"numRecords": 3}', values)], Write())  # an add with numRecords is fine
    assert log.update().version == snap.version + 1


def test_enabling_on_an_existing_table(tmp_path: Path) -> None:
    plain = _schema(_field("id", "long"), _field("tags", _array("string")))
    log = _create(tmp_path / "t", {}, plain)
    snap = log.update()
    txn = log.start_transaction()
    with pytest.raises(IcebergCompatViolationError, match=r"WRONG_REQUIRED_TABLE_PROPERTY.*columnMapping\.mode"):
        txn.commit([dataclasses.replace(snap.metadata, configuration=V2)], SetTableProperties(properties=V2))
    assert log.update().version == snap.version

    mapped = _create(tmp_path / "m", {"delta.columnMapping.mode": "name"}, plain)
    before = mapped.update()
    txn = mapped.start_transaction()
    txn.update_metadata(dataclasses.replace(before.metadata, configuration={**before.metadata.configuration, **V2}))
    txn.commit([], SetTableProperties(properties=V2))
    after = mapped.update()
    assert "icebergCompatV2" in (after.protocol.writer_features or ())
    tags = json.loads(after.metadata.schema_string)["fields"][1]["metadata"]
    assert tags["delta.columnMapping.nested.ids"] == {f"{tags['delta.columnMapping.physicalName']}.element": 3}
    # an existing table does not get the atomic-conversion guard (Delta sets it at creation only)
    assert "delta.universalFormat.iceberg.atomicConversion.supported" not in after.metadata.configuration

    # turning the compat version off turns UniForm (Iceberg) off with it
    txn = mapped.start_transaction()
    off = {**after.metadata.configuration, "delta.enableIcebergCompatV2": "false"}
    txn.update_metadata(dataclasses.replace(after.metadata, configuration=off))
    txn.commit([], SetTableProperties(properties={"delta.enableIcebergCompatV2": "false"}))
    assert "delta.universalFormat.enabledFormats" not in mapped.update().metadata.configuration


def test_an_overwrite_keeps_the_nested_ids_of_the_columns_it_keeps() -> None:
    """Delta's ``reuseColumnMetadataDuringOverwrite`` carries the nested ids over with the
    column id and physical name (no Iceberg field-id churn on a schema-unchanged overwrite)."""
    first, max_id = assign_column_mapping(parse_schema(EXAMPLE), 0)
    first, max_id = assign_nested_ids(first, max_id)
    again, again_max = assign_column_mapping(parse_schema(EXAMPLE), max_id, first, overwriting=True)
    again, again_max = assign_nested_ids(again, again_max)
    assert again == first
    assert again_max == max_id == 13


def test_clone_does_not_turn_column_mapping_on_to_enable_uniform(tmp_path: Path) -> None:
    """A clone keeps the source's files and their column names: as in Delta (CLONE is not a
    table creation for IcebergCompat), UniForm on a clone of a table without column mapping
    is refused instead of mapping the columns to physical names the files do not have."""
    source = _create(tmp_path / "s", {}, _schema(_field("id", "long"), _field("p", "string")))
    with pytest.raises(IcebergCompatViolationError, match="WRONG_REQUIRED_TABLE_PROPERTY"):
        clone(source, str(tmp_path / "c"), properties=V2)
    assert DeltaLog.for_table(str(tmp_path / "c")).update().version < 0


def test_schema_evolution_of_a_uniform_table_widens_only_what_iceberg_can() -> None:
    """Delta's ``TypeEvolution(uniformIcebergCompatibleOnly = icebergEnabled)``: a mergeSchema
    write does not apply a widening Iceberg cannot follow (a decimal's scale, date to
    timestamp_ntz), which the commit would refuse; integer widening still applies."""
    table = json.loads(_schema(_field("d", "decimal(5,2)"), _field("t", "date"), _field("i", "integer")))
    data = json.loads(_schema(_field("d", "decimal(10,4)"), _field("t", "timestamp_ntz"), _field("i", "long")))
    config = {"delta.enableTypeWidening": "true"}

    def types(configuration: dict[str, str]) -> list[Any]:
        return [f["type"] for f in widen_for_schema_evolution(table, data, configuration)["fields"]]

    assert types(config) == ["decimal(10,4)", "timestamp_ntz", "long"]
    assert types({**config, **V2}) == ["decimal(5,2)", "date", "long"]


def test_a_large_commit_is_checked_too(tmp_path: Path) -> None:
    """CLONE, CONVERT and RESTORE stream their actions (``commit_large``): an ``add`` without
    ``numRecords`` cloned into a UniForm table is refused as in a plain commit."""
    source = _create(tmp_path / "s", {"delta.columnMapping.mode": "name"}, _schema(_field("id", "long")))
    add = _add(None, {})
    (tmp_path / "s" / add.path).write_bytes(b"")  # the clone checks that the file exists, not what it holds
    source.start_transaction().commit([add], Write())
    with pytest.raises(IcebergCompatViolationError, match="MISSING_NUM_RECORDS"):
        clone(source, str(tmp_path / "c"), properties=V2)
    assert DeltaLog.for_table(str(tmp_path / "c")).update().version < 0


def test_a_refused_commit_is_known_not_to_have_landed() -> None:
    """The checks run before ``N.json`` is written (or while a large commit streams, which
    then writes nothing), so a writer deletes the data files it made for the commit."""
    assert commit_certainly_failed(IcebergCompatViolationError(2, "MISSING_NUM_RECORDS", "an add without it."))
    assert commit_certainly_failed(UniFormIcebergRequiresCompatError())


V3 = {"delta.enableIcebergCompatV3": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def test_enabling_v3_at_creation_sets_column_mapping_and_row_tracking(tmp_path: Path) -> None:
    """Delta's IcebergCompatV3: columnMapping and rowTracking required (auto-enabled), nested
    ids as V2, variant and deletion vectors allowed; the materialized row tracking columns get
    Iceberg's reserved field ids."""
    schema = _schema(_field("id", "long"), _field("v", "variant"), _field("tags", _array("string")))
    log = _create(tmp_path / "t", {**V3, "delta.enableDeletionVectors": "true"}, schema)
    snap = log.update()
    assert {
        "columnMapping",
        "rowTracking",
        "domainMetadata",
        "icebergCompatV3",
        "deletionVectors",
        "variantType",
    } <= set(snap.protocol.writer_features or ())
    config = snap.metadata.configuration
    assert config["delta.enableRowTracking"] == "true"
    assert config["delta.columnMapping.mode"] == "name"
    assert config["delta.universalFormat.iceberg.atomicConversion.supported"] == "true"
    tags = json.loads(snap.metadata.schema_string)["fields"][2]["metadata"]
    assert tags["delta.columnMapping.nested.ids"] == {f"{tags['delta.columnMapping.physicalName']}.element": 4}
    assert row_tracking_field_ids(snap.metadata) == {
        config["delta.rowTracking.materializedRowIdColumnName"]: 2147483540,
        config["delta.rowTracking.materializedRowCommitVersionColumnName"]: 2147483539,
    }
    v2 = {**config, **V2, "delta.enableIcebergCompatV3": "false"}
    assert row_tracking_field_ids(dataclasses.replace(snap.metadata, configuration=v2)) == {}


def _with_default(name: str, kind: str, default: str) -> dict[str, Any]:
    return {**_field(name, kind), "metadata": {"CURRENT_DEFAULT": default}}


@pytest.mark.parametrize(
    ("config", "schema", "reason"),
    [
        ({**V3, "delta.enableIcebergCompatV2": "true"}, None, "VERSION_MUTUAL_EXCLUSIVE"),
        ({**V3, "delta.enableRowTracking": "false"}, None, r"WRONG_REQUIRED_TABLE_PROPERTY.*enableRowTracking"),
        (V3, _schema(_field("id", "long"), _with_default("n", "long", "1 + 1")), "UNSUPPORTED_DATA_TYPE.*long:n"),
        (V3, _schema(_field("id", "long"), _with_default("d", "date", "current_date()")), "UNSUPPORTED_DATA_TYPE"),
    ],
)
def test_a_v3_table_that_breaks_a_requirement_is_not_created(
    tmp_path: Path, config: dict[str, str], schema: str | None, reason: str
) -> None:
    with pytest.raises(IcebergCompatViolationError, match=reason):
        _create(tmp_path / "t", config, schema or _schema(_field("id", "long")))
    assert not (tmp_path / "t" / "_delta_log").exists() or DeltaLog.for_table(str(tmp_path / "t")).update().version < 0


def test_literal_defaults_are_allowed_in_v3() -> None:
    """Delta's ``hasLiteralDefault``: the text parses as a literal of the column's type."""
    literals = [("1", "long"), ("-7L", "long"), ("'a''", "string"), ("'2024-01-02'", "date"), ("1.5", "double")]
    literals += [("12.30", "decimal(5,2)"), ("'2024-01-02 03:04:05'", "timestamp"), ("x'0A'", "binary")]
    assert all(is_literal_default(text, kind) for text, kind in literals)
    others = [("1 + 1", "long"), ("a", "string"), ("current_timestamp()", "timestamp"), ("12.345", "decimal(5,2)")]
    others += [("2147483648", "integer"), ("'x'", "date"), ("1", _array("long"))]
    assert not any(is_literal_default(text, kind) for text, kind in others)


def test_enabling_v3_on_an_existing_table_and_what_it_then_refuses(tmp_path: Path) -> None:
    plain = _schema(_field("id", "long"))
    log = _create(tmp_path / "t", {"delta.columnMapping.mode": "name"}, plain)
    log.start_transaction().commit([_add('{"numRecords": 2}', {})], Write())
    before = log.update()
    txn = log.start_transaction()
    txn.update_metadata(dataclasses.replace(before.metadata, configuration={**before.metadata.configuration, **V3}))
    txn.commit([], SetTableProperties(properties=V3))
    after = log.update()
    assert {"icebergCompatV3", "rowTracking"} <= set(after.protocol.writer_features or ())
    assert after.metadata.configuration["delta.enableRowTracking"] == "true"  # switched on with V3, as Delta
    assert [f.base_row_id for f in after.files] == [0]  # the file written before got its row ids
    # an existing table does not get the atomic-conversion guard (Delta sets it at creation only)
    assert "delta.universalFormat.iceberg.atomicConversion.supported" not in after.metadata.configuration

    def alter(changes: dict[str, str]) -> None:
        configuration = {**after.metadata.configuration, **changes}
        log.start_transaction().commit(
            [dataclasses.replace(after.metadata, configuration=configuration)], SetTableProperties(properties=changes)
        )

    for off in ({"delta.enableIcebergCompatV3": "false"}, {"delta.enableIcebergCompatV3": "false", **V2}):
        with pytest.raises(IcebergCompatUnsupportedOperationError, match="cannot be disabled"):
            alter(off)
    with pytest.raises(IcebergCompatViolationError, match="WRONG_REQUIRED_TABLE_PROPERTY"):
        alter({"delta.enableRowTracking": "false"})
    assert log.update().version == after.version

    # Delta refuses ALTER TABLE to V3 while row tracking is already on
    tracked = _create(tmp_path / "r", {"delta.columnMapping.mode": "name", "delta.enableRowTracking": "true"}, plain)
    snap = tracked.update()
    txn = tracked.start_transaction()
    txn.update_metadata(dataclasses.replace(snap.metadata, configuration={**snap.metadata.configuration, **V3}))
    with pytest.raises(IcebergCompatUnsupportedOperationError, match="disable RowTracking first"):
        txn.commit([], SetTableProperties(properties=V3))
    assert tracked.update().version == snap.version
