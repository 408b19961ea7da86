"""Column mapping writes (PROTOCOL "Column Mapping"), in ``name`` and ``id`` modes: tables
created and enabled by deltalog, files written with physical names and field ids, ALTER
(rename, drop, add, comment, properties) as metadata-only commits, read back by deltalog and
by delta-rs (whose DataFusion reader applies column mapping) with equal rows; and Delta
Spark's golden column-mapping tables appended to by deltalog and still read by delta-rs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark.files import write_batches
from deltalog.contrib.spark.options import WriteOptions
from deltalog.contrib.spark.writes import write_spec
from deltalog.txn.commands import alter
from deltalog.txn.commit.operations import CreateTable, Write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import Metadata, Protocol, parse_line
from deltalog.txn.protocol.column_mapping import logical_partition_values, rename_to_logical
from deltalog.txn.protocol.errors import ColumnMappingRequiredError, InvalidSchemaChangeError
from deltalog.txn.protocol.properties import InvalidPropertyError
from deltalog.txn.protocol.schema import ArrayType, PrimitiveType, StructField, StructType

GOLDEN = Path(__file__).parent / "golden"


def _schema() -> str:
    def field(name: str, type_: Any) -> dict[str, Any]:
        return {"name": name, "type": type_, "nullable": True, "metadata": {}}

    inner = {"type": "struct", "fields": [field("x", "integer")]}
    return json.dumps({"type": "struct", "fields": [field("id", "long"), field("part", "string"), field("s", inner)]})


def _create(path: Path, configuration: dict[str, str]) -> DeltaLog:
    log = DeltaLog.for_table(str(path))
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=_schema(), partition_columns=("part",), configuration=configuration))
    txn.commit([], CreateTable())
    return log


def _write(log: DeltaLog, rows: list[dict[str, Any]]) -> int:
    """The data-file writer every Spark task runs (``write_batches``), here in-process."""
    snap = log.update()
    spec = write_spec(WriteOptions(path=log.table_uri, overwrite=False), log.table_uri, log.store.spec(), snap.metadata)
    lines = write_batches(spec, [pa.Table.from_pylist(rows)], 0)
    return log.start_transaction().commit([parse_line(line) for line in lines], Write())


def _deltalog_rows(log: DeltaLog) -> list[dict[str, Any]]:
    """The table as deltalog's Python read path resolves it: physical -> logical names."""
    snap = log.update()
    out: list[dict[str, Any]] = []
    mode = snap.properties.column_mapping_mode
    for f in snap.files:
        data = rename_to_logical(pq.read_table(Path(log.table_uri.removeprefix("file://")) / f.path), snap.schema)
        values = logical_partition_values(f.partition_values, snap.schema, snap.partition_columns, mode)
        for row in data.to_pylist():
            full = {**{c.name: None for c in snap.schema.fields}, **row, **values}
            out.append({c.name: full[c.name] for c in snap.schema.fields})
    return sorted(out, key=str)


def _delta_rs_rows(path: Path) -> list[dict[str, Any]]:
    table = deltalake.DeltaTable(str(path))
    result = deltalake.QueryBuilder().register("t", table).execute("select * from t")
    return sorted(pa.table(result.read_all()).to_pylist(), key=str)


def _commit(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_create_write_rename_drop_add_read_by_deltalog_and_delta_rs(tmp_path: Path, mode: str) -> None:
    path = tmp_path / mode
    log = _create(path, {"delta.columnMapping.mode": mode})
    snap = log.update()
    # as Delta: the default (1, 2) plus columnMapping is no legacy protocol's exact feature set
    assert snap.protocol == Protocol(2, 7, None, ("appendOnly", "columnMapping", "invariants"))
    assert snap.properties.column_mapping_max_id == 4
    ids = {f.name: f.column_mapping_id for _, f in snap.schema.leaf_columns()}
    assert ids == {"id": 1, "part": 2, "x": 4}
    assert all(f.physical_name.startswith("col-") for f in snap.schema.fields)

    _write(log, [{"id": 1, "part": "a", "s": {"x": 10}}, {"id": 2, "part": "b", "s": None}])
    snap = log.update()
    physical = {f.name: f.physical_name for f in snap.schema.fields}
    x_physical = snap.schema.field("s").type.field("x").physical_name  # type: ignore[union-attr]
    for f in snap.files:
        # files under a random prefix, partition values and stats keyed by physical names
        assert "=" not in f.path and set(f.partition_values) == {physical["part"]}
        stats = json.loads(f.stats or "{}")
        assert set(stats["nullCount"]) == {physical["id"], physical["s"]}
        file_schema = pq.read_schema(path / f.path)
        assert file_schema.names == [physical["id"], physical["s"]]
        assert file_schema.field(physical["id"]).metadata == {b"PARQUET:field_id": b"1"}
        assert file_schema.field(physical["s"]).type.field(0).name == x_physical
        assert file_schema.field(physical["s"]).type.field(0).metadata == {b"PARQUET:field_id": b"4"}

    alter.rename_column(log, "id", "ident")
    alter.rename_column(log, "s.x", "y")
    alter.rename_column(log, "part", "p")  # a partition column: its physical name stays the key
    alter.add_columns(log, [StructField("extra", PrimitiveType("string"))])
    _write(log, [{"ident": 3, "p": "a", "s": {"y": 30}, "extra": "e"}])
    alter.drop_columns(log, ["extra"])
    expected = [
        {"ident": 1, "p": "a", "s": {"y": 10}},
        {"ident": 2, "p": "b", "s": None},
        {"ident": 3, "p": "a", "s": {"y": 30}},
    ]
    assert _deltalog_rows(log) == sorted(expected, key=str)
    assert _delta_rs_rows(path) == sorted(expected, key=str)
    snap = log.update()
    assert snap.partition_columns == ("p",)
    assert {f.name: f.physical_name for f in snap.schema.fields} == {
        "ident": physical["id"],
        "p": physical["part"],
        "s": physical["s"],
    }
    assert snap.properties.column_mapping_max_id == 5
    # every ALTER was one metadata-only commit with Delta's operation name and parameters
    infos = [next(a["commitInfo"] for a in _commit(path, v) if "commitInfo" in a) for v in range(2, 8)]
    assert [i["operation"] for i in infos] == [
        "RENAME COLUMN",
        "RENAME COLUMN",
        "RENAME COLUMN",
        "ADD COLUMNS",
        "WRITE",
        "DROP COLUMNS",
    ]
    assert infos[1]["operationParameters"] == {"oldColumnPath": "s.x", "newColumnPath": "s.y"}
    assert json.loads(infos[3]["operationParameters"]["columns"]) == [
        {"column": {"name": "extra", "type": "string", "nullable": True, "metadata": {}}}
    ]
    assert json.loads(infos[5]["operationParameters"]["columns"]) == ["extra"]
    for v in (2, 3, 4, 5, 7):
        assert {k for a in _commit(path, v) for k in a} == {"commitInfo", "metaData"}
    # OPTIMIZE (the engine's own Parquet writer) keeps physical names and field ids
    from deltalog.txn.commands.optimize import optimize

    assert optimize(log).num_files_removed == 2  # the two files of partition a
    assert _deltalog_rows(log) == _delta_rs_rows(path) == sorted(expected, key=str)


def test_enable_name_mode_on_an_existing_table_keeps_names_as_physical_names(tmp_path: Path) -> None:
    log = _create(tmp_path, {})
    _write(log, [{"id": 1, "part": "a", "s": {"x": 1}}])
    assert log.update().protocol == Protocol(1, 2)
    with pytest.raises(ColumnMappingRequiredError):
        alter.rename_column(log, "id", "ident")
    with pytest.raises(ColumnMappingRequiredError):
        alter.drop_columns(log, ["s"])
    # Delta allows none -> name only
    with pytest.raises(InvalidSchemaChangeError, match="'none' to 'id'"):
        alter.set_table_properties(log, {"delta.columnMapping.mode": "id"})
    assert log.update().version == 1

    alter.set_table_properties(log, {"delta.columnMapping.mode": "name"})
    snap = log.update()
    assert snap.protocol == Protocol(2, 7, None, ("appendOnly", "columnMapping", "invariants"))
    assert [(f.name, f.physical_name, f.column_mapping_id) for f in snap.schema.fields] == [
        ("id", "id", 1),
        ("part", "part", 2),
        ("s", "s", 3),
    ]
    assert snap.properties.column_mapping_max_id == 4
    assert (set(f.partition_values) for f in snap.files).__next__() == {"part"}
    alter.rename_column(log, "id", "ident")
    _write(log, [{"ident": 2, "part": "b", "s": {"x": 2}}])
    expected = [{"ident": 1, "part": "a", "s": {"x": 1}}, {"ident": 2, "part": "b", "s": {"x": 2}}]
    assert _deltalog_rows(log) == expected
    assert _delta_rs_rows(tmp_path) == expected
    # turning it off rewrites the table (tests/ops/test_drop_feature.py); refused when not allowed
    with pytest.raises(InvalidSchemaChangeError, match="from 'name' to 'none'"):
        alter.unset_table_properties(log, ["delta.columnMapping.mode"], allow_column_mapping_removal=False)


def test_bad_alter_input_is_refused_and_leaves_the_table_untouched(tmp_path: Path) -> None:
    log = _create(tmp_path, {"delta.columnMapping.mode": "name", "delta.constraints.positive": "id > 0"})
    before = log.update().version
    cases: list[tuple[Any, type[Exception], str]] = [
        (lambda: alter.rename_column(log, "id", "PART"), InvalidSchemaChangeError, "already exists"),
        (lambda: alter.rename_column(log, "nope", "x"), InvalidSchemaChangeError, "cannot resolve"),
        (lambda: alter.drop_columns(log, ["part"]), InvalidSchemaChangeError, "partition column"),
        (lambda: alter.drop_columns(log, ["id", "s"]), InvalidSchemaChangeError, "CHECK constraint"),
        (lambda: alter.drop_columns(log, ["s.x"]), InvalidSchemaChangeError, "last field"),
        (lambda: alter.drop_columns(log, ["nope"]), InvalidSchemaChangeError, "cannot resolve"),
        (lambda: alter.rename_column(log, "id", "ident"), InvalidSchemaChangeError, "CHECK constraint"),
        (
            lambda: alter.add_columns(log, [StructField("id", PrimitiveType("long"))]),
            InvalidSchemaChangeError,
            "already exists",
        ),
        (
            lambda: alter.add_columns(log, [StructField("n", PrimitiveType("long"), nullable=False)]),
            InvalidSchemaChangeError,
            "NOT NULL",
        ),
        (  # DeltaDDLSuite "ALTER TABLE ADD COLUMNS with NOT NULL in struct type - not supported"
            lambda: alter.add_columns(
                log,
                [
                    StructField(
                        "x",
                        StructType(
                            (
                                StructField("a", PrimitiveType("long")),
                                StructField("b", PrimitiveType("string"), nullable=False),
                            )
                        ),
                    )
                ],
            ),
            InvalidSchemaChangeError,
            "NOT NULL",
        ),
        (  # ... and in an array's struct (Delta's filterRecursively looks into arrays and maps)
            lambda: alter.add_columns(
                log,
                [
                    StructField(
                        "y",
                        ArrayType(StructType((StructField("b", PrimitiveType("string"), nullable=False),)), True),
                    )
                ],
            ),
            InvalidSchemaChangeError,
            "NOT NULL",
        ),
        (lambda: alter.unset_table_properties(log, ["nope"], if_exists=False), InvalidPropertyError, "nope"),
        (lambda: alter.set_table_properties(log, {"delta.appendOnly": "yes"}), InvalidPropertyError, "appendOnly"),
        (lambda: alter.change_column_comment(log, "nope", "c"), InvalidSchemaChangeError, "cannot resolve"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()
    assert log.update().version == before
    assert alter.drop_columns(log, ["nope"], if_exists=True) is None
    assert log.update().version == before


def test_comment_nested_add_and_properties(tmp_path: Path) -> None:
    log = _create(tmp_path, {"delta.columnMapping.mode": "name"})
    alter.change_column_comment(log, "s.x", "the x")
    alter.add_columns(log, [("s", StructField("z", PrimitiveType("double")))])
    alter.set_table_properties(log, {"delta.appendOnly": "true", "team": "a"})
    alter.unset_table_properties(log, ["team"])
    snap = log.update()
    inner = snap.schema.field("s").type
    assert inner.field("x").metadata["comment"] == "the x"  # type: ignore[union-attr]
    assert inner.field("z").column_mapping_id == 5  # type: ignore[union-attr]
    assert snap.metadata.configuration["delta.appendOnly"] == "true" and "team" not in snap.metadata.configuration
    ops = [next(a["commitInfo"] for a in _commit(tmp_path, v) if "commitInfo" in a) for v in range(1, 5)]
    assert [o["operation"] for o in ops] == ["CHANGE COLUMN", "ADD COLUMNS", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES"]
    assert json.loads(ops[0]["operationParameters"]["column"])["name"] == "s.x"
    assert json.loads(ops[1]["operationParameters"]["columns"])[0]["column"]["name"] == "s.z"
    assert ops[3]["operationParameters"] == {"properties": '["team"]', "ifExists": True}


@pytest.mark.parametrize("mode", ["name", "id"])
def test_golden_column_mapping_table_appended_by_deltalog_is_read_by_delta_rs(tmp_path: Path, mode: str) -> None:
    """Delta Spark's ``table-with-columnmapping-mode-*`` (every type, structs in arrays and
    maps): deltalog reads its rows and appends them again; delta-rs reads both copies."""
    path = tmp_path / "golden"
    shutil.copytree(GOLDEN / f"table-with-columnmapping-mode-{mode}", path)
    before = _delta_rs_rows(path)
    log = DeltaLog.for_table(str(path))
    snap = log.update()
    data = pa.concat_tables([rename_to_logical(pq.read_table(path / f.path), snap.schema) for f in snap.files])
    assert sorted(data.to_pylist(), key=str) == before
    spec = write_spec(WriteOptions(path=str(path), overwrite=False), log.table_uri, log.store.spec(), snap.metadata)
    lines = write_batches(spec, [data], 0)
    log.start_transaction().commit([parse_line(line) for line in lines], Write())
    assert _delta_rs_rows(path) == sorted(before * 2, key=str)


def test_partition_filters_on_logical_names_match_physical_partition_values(tmp_path: Path) -> None:
    """``filter_files`` (DELETE, UPDATE, replaceWhere) and the conflict checker compare
    partition filters with ``partitionValues``, which are keyed by physical names."""
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError
    from deltalog.txn.commit.operations import Delete

    log = _create(tmp_path, {"delta.columnMapping.mode": "name"})
    _write(log, [{"id": 1, "part": "a", "s": None}, {"id": 2, "part": "b", "s": None}])
    alter.rename_column(log, "part", "p")
    txn = log.start_transaction()
    (only_a,) = txn.filter_files([("p", "=", "a")])
    assert list(only_a.partition_values.values()) == ["a"]
    _write(log, [{"id": 3, "p": "a", "s": None}])  # a concurrent append into the partition read
    with pytest.raises(ConcurrentAppendError):
        txn.commit([only_a.remove(0)], Delete(predicate=["p = 'a'"]))


def test_a_schema_with_a_duplicate_column_mapping_id_is_refused(tmp_path: Path) -> None:
    def field(name: str, fid: int) -> dict[str, Any]:
        meta = {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": f"col-{name}"}
        return {"name": name, "type": "long", "nullable": True, "metadata": meta}

    schema = json.dumps({"type": "struct", "fields": [field("a", 1), field("b", 1)]})
    txn = DeltaLog.for_table(str(tmp_path)).start_transaction()
    with pytest.raises(InvalidSchemaChangeError, match="same id 1"):
        txn.update_metadata(Metadata(schema_string=schema, configuration={"delta.columnMapping.mode": "id"}))
    assert not (tmp_path / "_delta_log").exists()


def test_on_a_table_features_protocol_column_mapping_is_listed_as_a_feature(tmp_path: Path) -> None:
    both = ("columnMapping", "deletionVectors")
    writer = ("appendOnly", "columnMapping", "deletionVectors", "invariants")  # with (1, 2)'s, as Delta's new tables
    log = _create(tmp_path / "new", {"delta.columnMapping.mode": "id", "delta.enableDeletionVectors": "true"})
    assert log.update().protocol == Protocol(3, 7, both, writer)
    log = _create(tmp_path / "enabled", {"delta.enableDeletionVectors": "true"})
    alter.set_table_properties(log, {"delta.columnMapping.mode": "name"})
    assert log.update().protocol == Protocol(3, 7, both, writer)
    assert next(a for a in _commit(tmp_path / "enabled", 1) if "commitInfo" in a)["commitInfo"][
        "operationParameters"
    ] == {"properties": '{"delta.columnMapping.mode":"name"}'}


def test_a_new_check_constraint_is_verified_and_conflicts_with_an_append_made_meanwhile(tmp_path: Path) -> None:
    """``set_table_properties`` hands a new or changed CHECK constraint (not other properties,
    not an unchanged one) to the verifier with the snapshot it checks; the change read the
    whole table, so a row appended after the check fails it and nothing is committed."""
    from deltalog.txn.commit.commit_errors import ConcurrentAppendError

    log = _create(tmp_path, {"delta.constraints.old": "id > 0"})

    def append(rows: list[dict[str, Any]]) -> None:  # _write, as a writer that checked the rows
        spec = write_spec(
            WriteOptions(path=log.table_uri, overwrite=False), log.table_uri, log.store.spec(), log.update().metadata
        )
        txn = log.start_transaction()
        txn.mark_constraints_checked()
        txn.commit([parse_line(line) for line in write_batches(spec, [pa.Table.from_pylist(rows)], 0)], Write())

    append([{"id": 1, "part": "a", "s": None}])
    seen: list[tuple[int, dict[str, str]]] = []

    def verify(snapshot: Any, constraints: Any) -> None:
        seen.append((snapshot.version, dict(constraints)))

    alter.set_table_properties(log, {"delta.constraints.old": "id > 0", "team": "a"}, verify)
    assert seen == []
    alter.set_table_properties(log, {"delta.constraints.old": "id > 0", "delta.constraints.new": "id < 9"}, verify)
    assert seen == [(2, {"new": "id < 9"})]

    def append_meanwhile(snapshot: Any, constraints: Any) -> None:
        append([{"id": 10, "part": "b", "s": None}])  # breaks the new constraint: the check missed it

    with pytest.raises(ConcurrentAppendError):
        alter.set_table_properties(log, {"delta.constraints.newer": "id < 5"}, append_meanwhile)
    assert log.update().metadata.configuration["delta.constraints.new"] == "id < 9"
    assert "delta.constraints.newer" not in log.update().metadata.configuration


def _last_operation(path: Path, log: DeltaLog) -> tuple[str, dict[str, str]]:
    info = next(a["commitInfo"] for a in _commit(path, log.update().version) if "commitInfo" in a)
    return info["operation"], info["operationParameters"]


def test_check_constraints_set_and_unset_are_add_and_drop_constraint(tmp_path: Path) -> None:
    """Delta's AlterTableAddConstraintDeltaCommand / AlterTableDropConstraintDeltaCommand
    (CheckConstraintsSuite): the key is ``delta.constraints.<lower-cased name>``, a name the table
    has (in any case) is DELTA_CONSTRAINT_ALREADY_EXISTS, the CHAR/VARCHAR check's name is
    reserved, a missing one without IF EXISTS is DELTA_CONSTRAINT_DOES_NOT_EXIST, and history
    says ADD CONSTRAINT {name, expr} / DROP CONSTRAINT {name, expr, existed}."""
    log = _create(tmp_path, {})
    alter.set_table_properties(log, {"delta.constraints.MyCheck": "id > 0"})
    assert log.update().metadata.configuration["delta.constraints.mycheck"] == "id > 0"
    assert _last_operation(tmp_path, log) == ("ADD CONSTRAINT", {"name": "MyCheck", "expr": "id > 0"})
    before = log.update().version
    refused: list[tuple[Any, str]] = [
        (lambda: alter.set_table_properties(log, {"delta.constraints.MYCHECK": "id < 9"}), "ALREADY_EXISTS"),
        (
            lambda: alter.set_table_properties(log, {"delta.constraints.__CHAR_VARCHAR_STRING_LENGTH_CHECK__": "true"}),
            "DELTA_INVALID_CONSTRAINT_NAME",
        ),
        (lambda: alter.unset_table_properties(log, ["delta.constraints.nope"], if_exists=False), "DOES_NOT_EXIST"),
    ]
    for call, message in refused:
        with pytest.raises(InvalidPropertyError, match=message):
            call()
    assert log.update().version == before
    alter.unset_table_properties(log, ["delta.constraints.nope"], if_exists=True)
    assert _last_operation(tmp_path, log) == ("DROP CONSTRAINT", {"name": "nope", "existed": "false"})
    alter.unset_table_properties(log, ["DELTA.CONSTRAINTS.MYCHECK"], if_exists=False)
    assert _last_operation(tmp_path, log) == (
        "DROP CONSTRAINT",
        {"name": "MYCHECK", "expr": "id > 0", "existed": "true"},
    )
    assert not log.update().metadata.properties.check_constraints


def test_add_columns_into_array_element_and_map_key_value_structs(tmp_path: Path) -> None:
    """DeltaAlterTableTests "ADD COLUMNS into complex types - Array / Map (nested)": a field is
    added to the struct of ``a.element``, ``m.key``, ``m.value`` (and deeper, through them); a
    path to a non-struct (``a.x``, a map of primitives) is refused."""
    log = DeltaLog.for_table(str(tmp_path))
    s = {"type": "struct", "fields": [{"name": "v", "type": "integer", "nullable": True, "metadata": {}}]}
    fields = [
        {"name": "a", "type": {"type": "array", "elementType": s, "containsNull": True}},
        {"name": "m", "type": {"type": "map", "keyType": s, "valueType": s, "valueContainsNull": True}},
        {"name": "p", "type": {"type": "map", "keyType": "integer", "valueType": "string", "valueContainsNull": True}},
    ]
    schema = {"type": "struct", "fields": [{**f, "nullable": True, "metadata": {}} for f in fields]}
    txn = log.start_transaction()
    txn.update_metadata(Metadata(schema_string=json.dumps(schema), configuration={"delta.columnMapping.mode": "name"}))
    txn.commit([], CreateTable())
    long, string = PrimitiveType("long"), PrimitiveType("string")
    alter.add_columns(log, [StructField("a.element.x", long), StructField("m.KEY.k", long)])
    alter.add_columns(log, [StructField("m.value.w", string)])
    for bad in ("a.x", "p.key.x", "p.value.x", "m.x"):
        with pytest.raises(InvalidSchemaChangeError, match="is not a struct"):
            alter.add_columns(log, [StructField(bad, long)])
    snap = log.update()
    a, m = snap.schema.field("a").type, snap.schema.field("m").type
    assert [f.name for f in a.element_type.fields] == ["v", "x"]  # type: ignore[union-attr]
    assert [f.name for f in m.key_type.fields] == ["v", "k"]  # type: ignore[union-attr]
    assert [f.name for f in m.value_type.fields] == ["v", "w"]  # type: ignore[union-attr]
    assert m.value_type.field("w").column_mapping_id is not None  # type: ignore[union-attr]
    assert json.loads(_last_operation(tmp_path, log)[1]["columns"])[0]["column"]["name"] == "m.value.w"
    # "ADD COLUMNS - special column names": backquoted parts may hold dots; history quotes them as Delta
    alter.add_columns(log, [StructField("`x.x`", long), StructField("`a`.element.`y.y`", long)])
    snap = log.update()
    assert snap.schema.field("x.x").type == long
    assert [f.name for f in snap.schema.field("a").type.element_type.fields] == ["v", "x", "y.y"]  # type: ignore[union-attr]
    logged = json.loads(_last_operation(tmp_path, log)[1]["columns"])
    assert [c["column"]["name"] for c in logged] == ["`x.x`", "a.element.`y.y`"]


def test_set_properties_checks_retention_random_prefix_and_catalog_keys(tmp_path: Path) -> None:
    """DeltaAlterTableTests: a log retention below the deleted-file retention (the other at its
    default when not given) is refused ("needs to be greater than or equal to"), unless
    enforce_retention_compatibility is off; ``delta.randomPrefixLength`` must be > 0; RENAME / DROP
    COLUMN without column mapping are DELTA_UNSUPPORTED_RENAME_COLUMN / _DROP_COLUMN; ``comment`` is
    the description (SET/UNSET comment by TBLPROPERTIES); ``location`` / ``provider`` are refused."""
    log = _create(tmp_path, {})
    before = log.update().version
    refused = [
        ({"delta.deletedFileRetentionDuration": "interval 10 days", "delta.logRetentionDuration": "interval 6 days"}),
        ({"delta.deletedFileRetentionDuration": "interval 45 days"}),
        ({"DELTA.LOGRETENTIONDURATION": "interval 5 days"}),
        ({"delta.randomPrefixLength": "-1"}),
        ({"delta.randomPrefixLength": "value"}),
        ({"location": "/elsewhere"}),
        ({"provider": "json"}),
    ]
    for properties in refused:
        with pytest.raises(InvalidPropertyError, match=r"RetentionDuration|greater than 0|LOCATION|PROVIDER"):
            alter.set_table_properties(log, properties)
    with pytest.raises(ColumnMappingRequiredError, match="DELTA_UNSUPPORTED_RENAME_COLUMN"):
        alter.rename_column(log, "id", "ident")
    with pytest.raises(ColumnMappingRequiredError, match="DELTA_UNSUPPORTED_DROP_COLUMN"):
        alter.drop_columns(log, ["id"])
    assert log.update().version == before
    alter.set_table_properties(
        log,
        {"delta.deletedFileRetentionDuration": "interval 4 days", "delta.logRetentionDuration": "interval 120 hours"},
    )
    alter.set_table_properties(
        log, {"delta.logRetentionDuration": "interval 1 day"}, enforce_retention_compatibility=False
    )
    alter.set_table_properties(log, {"comment": "does it work?", "team": "a"})
    meta = log.update().metadata
    assert meta.description == "does it work?" and "comment" not in meta.configuration
    alter.unset_table_properties(log, ["comment"], if_exists=False)
    assert log.update().metadata.description is None
