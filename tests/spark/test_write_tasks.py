"""The write tasks (:func:`~deltalog.contrib.spark.files.write_batches`): each row lands in
exactly one file, of its own partition; and what a write's plan refuses or replaces, as Delta
does. No Spark session: the tasks' rows are Arrow."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark.files import file_actions, write_batches
from deltalog.contrib.spark.options import WriteOptions
from deltalog.contrib.spark.writes import commit_write, plan_write
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.actions import decode_path
from deltalog.txn.protocol.partition_filters import PartitionPredicate

DOUBLE_PARTITIONS = (
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"d","type":"double","nullable":true,"metadata":{}}]}'
)


def test_floating_partition_values_nan_and_signed_zero_each_row_once(tmp_path: str) -> None:
    """NaN never equals itself and -0.0 equals 0.0: a row must still go to the partition its
    group has, once (Spark writes ``d=NaN``, ``d=-0.0`` and ``d=0.0`` directories)."""
    path = str(tmp_path)
    plan = plan_write(WriteOptions.parse({"path": path, "partitionBy": "d"}, False), DOUBLE_PARTITIONS)
    d = [math.nan, 1.0, None, math.nan, -0.0, 0.0, -math.inf]
    rows = pa.table({"id": pa.array(range(7), pa.int64()), "d": pa.array(d, pa.float64())})
    lines = write_batches(plan.spec, rows.to_batches(), 0)
    assert commit_write(plan, lines) == 0
    got = []
    for add in file_actions(lines)[0]:
        ids = pq.read_table(os.path.join(path, decode_path(add.path))).column("id").to_pylist()
        got.extend((i, add.partition_values["d"]) for i in ids)
    assert sorted(got) == [(0, "NaN"), (1, "1.0"), (2, None), (3, "NaN"), (4, "-0.0"), (5, "0.0"), (6, "-Infinity")]


def test_a_timestamp_partition_value_beyond_python_datetimes_is_refused_by_name(tmp_path: str) -> None:
    """Spark's timestamps reach before 0001-01-01 UTC (``0001-01-01 00:00`` in Asia/Kolkata);
    a partition value there (its UTC text has year 0) is refused with an error naming the
    column, nothing written (it was pyarrow's ``OverflowError: date value out of range``)."""
    from deltalog.contrib.spark.errors import DeltaAnalysisError

    schema = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    schema += '{"name":"ts","type":"timestamp","nullable":true,"metadata":{}}]}'
    path = str(tmp_path)
    plan = plan_write(WriteOptions.parse({"path": path, "partitionBy": "ts"}, False), schema)
    micros = [0, -62135596800_000_000 - 21208_000_000]  # 1970-01-01, 0000-12-31T18:06:32Z
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "ts": pa.array(micros, pa.timestamp("us", "UTC"))})
    with pytest.raises(DeltaAnalysisError, match=r"partition column ts .*0001-01-01"):
        write_batches(plan.spec, rows.to_batches(), 0)
    assert not [name for _, _, names in os.walk(path) for name in names if name.endswith(".parquet")]


def test_dynamic_partition_overwrite_replaces_the_nan_partition(tmp_path: str) -> None:
    """Spark SQL orders NaN above every number and equal to itself, so the partition
    ``d = NaN`` is replaced like any other (its old rows were kept next to the new ones)."""
    path = str(tmp_path)
    first = plan_write(WriteOptions.parse({"path": path, "partitionBy": "d"}, False), DOUBLE_PARTITIONS)
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "d": pa.array([math.nan, 1.0], pa.float64())})
    commit_write(first, write_batches(first.spec, rows.to_batches(), 0))
    options = {"path": path, "partitionOverwriteMode": "dynamic"}
    again = plan_write(WriteOptions.parse(options, True), DOUBLE_PARTITIONS)
    rows = pa.table({"id": pa.array([3], pa.int64()), "d": pa.array([math.nan], pa.float64())})
    commit_write(again, write_batches(again.spec, rows.to_batches(), 0))
    snapshot = DeltaLog.for_table(path).update()
    assert sorted(str(f.partition_values["d"]) for f in snapshot.files) == ["1.0", "NaN"]
    assert PartitionPredicate([("d", ">", 1e308)], {"d": "double"}).matches({"d": "NaN"})


_ODD = (
    '{"type":"struct","fields":[{"name":"value","type":"integer","nullable":true,"metadata":{}},'
    '{"name":"is_odd","type":"boolean","nullable":true,"metadata":{}}]}'
)
_ONLY_ODD = '{"type":"struct","fields":[{"name":"is_odd","type":"boolean","nullable":true,"metadata":{}}]}'
_ONLY_VALUE = '{"type":"struct","fields":[{"name":"value","type":"integer","nullable":true,"metadata":{}}]}'
_WITH_ID2 = _ODD.replace("]}", ',{"name":"id2","type":"integer","nullable":true,"metadata":{}}]}')
_VOID_VALUE = _ODD.replace('"integer"', '"void"')
_VOID_ODD = _ODD.replace('"boolean"', '"void"')
_VOID_ARRAY = _ODD.replace(
    "]}",
    ',{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":{"type":"array",'
    '"elementType":"void","containsNull":true},"nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}',
)
_DATA_COLUMNS_OFF = {"spark.databricks.delta.replaceWhere.dataColumns.enabled": "false"}
_CONSTRAINT_CHECK_OFF = {"spark.databricks.delta.replaceWhere.constraintCheck.enabled": "false"}

# (case, data schema, overwrite options, Delta's error condition): writes Delta refuses before
# writing anything. DeltaSuite "invalid replaceWhere", "replaceWhere with rearrangeOnly",
# "missing partition columns", "incompatible schema merging throws errors"; DeltaOptionSuite
# "dataChange is set to false on metadata changing operation"; on a table partitioned by is_odd.
_REFUSED_WRITES = [
    ("empty replaceWhere", _ODD, {"replaceWhere": " "}, "DELTA_FAILED_RECOGNIZE_PREDICATE"),
    ("incompatible type", _ODD.replace('"integer"', '"string"'), {}, "DELTA_FAILED_TO_MERGE_FIELDS"),
    ("incompatible type, mergeSchema", _ODD.replace('"integer"', '"long"'), {"mergeSchema": "true"}, "MERGE_FIELDS"),
    ("partition columns only", _ONLY_ODD, {"replaceWhere": "is_odd = true"}, "DELTA_NON_PARTITION_COLUMN_ABSENT"),
    ("no partition column", _ONLY_VALUE, {}, "DELTA_PARTITION_COLUMN_NOT_FOUND"),
    # SchemaEnforcementSuite "JSON ETL workflow, ...": Delta drops void columns before it checks
    # the partition columns, and refuses a void inside an array or map
    ("void data column", _VOID_VALUE, {}, "DELTA_NON_PARTITION_COLUMN_ABSENT.NULL_TYPE_COLUMNS_DROPPED"),
    ("void partition column", _VOID_ODD, {}, "DELTA_PARTITION_COLUMN_NOT_FOUND"),
    ("void in an array", _VOID_ARRAY, {"mergeSchema": "true"}, "DELTA_COMPLEX_TYPE_COLUMN_CONTAINS_NULL_TYPE.*s.a"),
    (
        "data columns off",
        _ODD,
        {"replaceWhere": "value = 1", **_DATA_COLUMNS_OFF},
        "DELTA_NON_PARTITION_COLUMN_REFERENCE",
    ),
    ("unknown column, data columns off", _ODD, {"replaceWhere": "nope = 1", **_DATA_COLUMNS_OFF}, "'nope'"),
    (
        "data filter, dataChange=false",
        _ODD,
        {"replaceWhere": "is_odd AND value < 2", "dataChange": "false"},
        "FILTER_DATA",
    ),
    ("mergeSchema, dataChange=false", _WITH_ID2, {"mergeSchema": "true", "dataChange": "false"}, "DATA_CHANGE_FALSE"),
    (
        "overwriteSchema, dataChange=false",
        _WITH_ID2,
        {"overwriteSchema": "true", "dataChange": "false"},
        "schema or change",
    ),
]
# (replaceWhere, values written, options, the table's values after), one after the other:
# DeltaSuite "replaceWhere with constraint check disabled" and "valid replaceWhere" (a term
# naming no column checks no row: "1 = 2" replaces nothing, "1 = 1" everything).
_REPLACE_WHERE_STEPS = [
    ("is_odd = true", [6], _CONSTRAINT_CHECK_OFF, [2, 4, 6]),
    ("1 = 2", [10, 12], {}, [2, 4, 6, 10, 12]),
    ("1 = 1 AND value > 9", [11], {}, [2, 4, 6, 11]),
    ("1 = 1", [10, 12], {}, [10, 12]),
]


def _write_odd(path: str, values: list[int], options: dict[str, str], overwrite: bool) -> None:
    plan = plan_write(WriteOptions.parse({"path": path, **options}, overwrite), _ODD)
    rows = pa.table({"value": pa.array(values, pa.int32()), "is_odd": pa.array([v % 2 != 0 for v in values])})
    commit_write(plan, write_batches(plan.spec, rows.to_batches(), 0))


def test_a_negative_max_records_per_file_is_no_limit_as_in_spark(tmp_path: str) -> None:
    """Spark's file writer (and its ``spark.sql.files.maxRecordsPerFile``, which Delta's writes
    and OPTIMIZE go by) takes zero or a negative number as no limit: the write's option, any
    case, is no limit too, not refused."""
    for value in ("-1", "0", "-20"):
        opts = WriteOptions.parse({"path": str(tmp_path), "MAXRECORDSPERFILE": value}, False)
        assert opts.max_records_per_file == 0
    assert WriteOptions.parse({"path": str(tmp_path), "maxRecordsPerFile": "3"}, False).max_records_per_file == 3


def test_a_partition_column_named_twice_is_refused_before_any_file(tmp_path: str) -> None:
    """``partitionBy`` naming a column twice, in any case, is Delta's
    ``DELTA_DUPLICATE_COLUMNS_FOUND`` when the write is planned (it failed the commit, after the
    tasks wrote their files, or was refused as partitioning by every column)."""
    from deltalog.contrib.spark.errors import SchemaMismatchError

    schema = (
        '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
        '{"name":"k","type":"string","nullable":true,"metadata":{}}]}'
    )
    for columns in ("k,K", "k,k"):
        opts = WriteOptions.parse({"path": str(tmp_path), "partitionBy": columns}, False)
        with pytest.raises(SchemaMismatchError, match=r"DELTA_DUPLICATE_COLUMNS_FOUND: .* partition schema: k"):
            plan_write(opts, schema)
        with pytest.raises(SchemaMismatchError, match="DELTA_DUPLICATE_COLUMNS_FOUND"):
            plan_write(opts, schema.replace("}]}", '},{"name":"x","type":"double","nullable":true,"metadata":{}}]}'))


def test_writes_refused_and_replace_where_as_delta_suite(tmp_path: str) -> None:
    import pytest

    path = str(tmp_path)
    _write_odd(path, [1, 2, 3, 4], {"partitionBy": "is_odd"}, False)
    for case, schema, options, condition in _REFUSED_WRITES:
        with pytest.raises(ValueError, match=condition):
            plan_write(WriteOptions.parse({"path": path, **options}, True), schema)
        assert DeltaLog.for_table(path).update().version == 0, case
    with pytest.raises(ValueError, match="DELTA_DATA_CHANGE_FALSE"):
        plan_write(WriteOptions.parse({"path": path + "-new", "dataChange": "false"}, False), _ODD)
    with pytest.raises(ValueError, match="DELTA_EMPTY_DATA"):  # "can't create zero-column table with a write"
        plan_write(WriteOptions.parse({"path": path + "-new"}, False), '{"type":"struct","fields":[]}')
    for schema, options, condition in [
        (_VOID_VALUE, {"partitionBy": "is_odd"}, "NULL_TYPE_COLUMNS_DROPPED"),
        (_VOID_ODD, {"partitionBy": "is_odd"}, "DELTA_PARTITION_COLUMN_NOT_FOUND"),
        (_VOID_ARRAY, {}, "DELTA_COMPLEX_TYPE_COLUMN_CONTAINS_NULL_TYPE"),
    ]:
        with pytest.raises(ValueError, match=condition):
            plan_write(WriteOptions.parse({"path": path + "-new", **options}, False), schema)
    assert not os.path.exists(path + "-new")
    for predicate, values, options, expected in _REPLACE_WHERE_STEPS:
        _write_odd(path, values, {"replaceWhere": predicate, **options}, True)
        files = DeltaLog.for_table(path).update().files
        got = [
            v for f in files for v in pq.read_table(os.path.join(path, decode_path(f.path))).column("value").to_pylist()
        ]
        assert sorted(got) == expected, predicate


_VP = (
    '{"type":"struct","fields":[{"name":"value","type":"integer","nullable":true,"metadata":{}},'
    '{"name":"part","type":"string","nullable":true,"metadata":{}}]}'
)
_DYNAMIC = {"partitionOverwriteMode": "dynamic"}
_X, _Y, _Z = "x", "y", "z"
# Cases where deltalog already agreed with Delta's DeltaSuite ("batch write: append, dynamic
# partition overwrite ...", "... overwrite non-partitioned table with replaceWhere ignores
# partition overwrite mode option", "batch write: overwrite an empty directory with
# replaceWhere", "replace arbitrary with multiple references"):
# (case, table rows, partitionBy, overwrite options, rows written, the table's rows after)
_AGREEING = [
    ("dpo string", [(1, _X), (2, _Y), (3, _X)], "part", _DYNAMIC, [(1, _X), (4, _X)], [(1, _X), (2, _Y), (4, _X)]),
    ("dpo overwrites nothing", [(1, _X), (2, _Y)], "part", _DYNAMIC, [(4, _Z)], [(1, _X), (2, _Y), (4, _Z)]),
    ("dpo null partition", [(1, None), (2, _X)], "part", _DYNAMIC, [(3, None)], [(2, _X), (3, None)]),
    ("dpo unpartitioned", [(1, _X), (2, _Y)], None, _DYNAMIC, [(3, _X)], [(3, _X)]),
    (
        "unpartitioned replaceWhere with dpo",
        [(1, _X), (2, _Y)],
        None,
        {**_DYNAMIC, "replaceWhere": "part = 'x'"},
        [(3, _X)],
        [(2, _Y), (3, _X)],
    ),
    ("empty table replaceWhere", None, "part", {"replaceWhere": "part = 'x'"}, [(1, _X)], [(1, _X)]),
    ("arbitrary", [(1, _X), (8, _Y)], None, {"replaceWhere": "value + 1 < 5"}, [(2, _Z)], [(2, _Z), (8, _Y)]),
]


def _write_vp(path: str, rows: list[tuple[int, str | None]], options: dict[str, str], overwrite: bool) -> None:
    plan = plan_write(WriteOptions.parse({"path": path, **options}, overwrite), _VP)
    table = pa.table({"value": pa.array([r[0] for r in rows], pa.int32()), "part": [r[1] for r in rows]})
    commit_write(plan, write_batches(plan.spec, table.to_batches(), 0))


@pytest.mark.parametrize(
    ("case", "before", "by", "options", "written", "after"), _AGREEING, ids=[c[0] for c in _AGREEING]
)
def test_overwrites_as_delta_suite(tmp_path: str, case, before, by, options, written, after) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path)
    if before is not None:
        _write_vp(path, before, {"partitionBy": by} if by else {}, False)
    _write_vp(path, written, {"partitionBy": by, **options} if by and before is None else options, True)
    got = []
    for f in DeltaLog.for_table(path).update().files:
        values = pq.read_table(os.path.join(path, decode_path(f.path))).column("value").to_pylist()
        got.extend((v, f.partition_values["part"]) if by else (v, None) for v in values)
    assert sorted(got, key=str) == sorted(((v, p if by else None) for v, p in after), key=str), case


def _struct(*fields: tuple[str, object, dict[str, object]]) -> dict[str, object]:
    return {
        "type": "struct",
        "fields": [{"name": n, "type": t, "nullable": True, "metadata": m} for n, t, m in fields],
    }


def test_a_write_retyping_a_column_an_expression_reads_is_refused(tmp_path: str) -> None:
    """Delta's ``ImplicitMetadataOperation.checkDependentExpressions`` (TypeWideningConstraintsSuite
    "check constraint (on nested field) with type evolution", TypeWideningGeneratedColumnsSuite):
    before merging, a write whose data types a column differently from the table (a wider or a
    narrower INT32 type, at any depth) is refused when a CHECK constraint or a generated column
    reads it, with or without ``mergeSchema``; the other columns widen."""
    import json
    import uuid

    from deltalog.txn.commit.operations import CreateTable
    from deltalog.txn.protocol.actions import Metadata

    path = str(tmp_path)
    table = _struct(
        ("s", "short", {}),
        ("st", _struct(("x", "short", {}), ("y", "short", {})), {}),
        ("g", "integer", {"delta.generationExpression": "st.x + 1"}),
        ("free", "short", {}),
    )
    txn = DeltaLog.for_table(path).start_transaction()
    config = {"delta.constraints.ck": "s > 0"}
    txn.update_metadata(Metadata(id=str(uuid.uuid4()), schema_string=json.dumps(table), configuration=config))
    txn.commit([], CreateTable())

    def plan(s: str, x: str, y: str, free: str, merge: bool = True) -> object:
        data = _struct(("s", s, {}), ("st", _struct(("x", x, {}), ("y", y, {})), {}), ("free", free, {}))
        options = {"path": path, "mergeSchema": str(merge).lower()}
        return plan_write(WriteOptions.parse(options, False), json.dumps(data))

    with pytest.raises(ValueError, match=r"DELTA_CONSTRAINT_DATA_TYPE_MISMATCH.*column s .*ck"):
        plan("integer", "short", "short", "short")
    with pytest.raises(ValueError, match=r"DELTA_CONSTRAINT_DATA_TYPE_MISMATCH.*column s "):
        plan("byte", "short", "short", "short", merge=False)  # narrower data too, as Delta
    with pytest.raises(ValueError, match=r"DELTA_GENERATED_COLUMNS_DATA_TYPE_MISMATCH.*column st.x .*'g'"):
        plan("short", "integer", "short", "short")
    widened = plan("short", "short", "integer", "integer").new_metadata  # type: ignore[attr-defined]
    fields = json.loads(widened.schema_string)["fields"]
    assert [f["type"] if f["name"] != "st" else f["type"]["fields"][1]["type"] for f in fields] == [
        "short",
        "integer",
        "integer",
        "integer",
    ]


def test_replace_where_in_append_mode_is_ignored_as_delta(tmp_path: str) -> None:
    """Delta's ``WriteIntoDelta`` applies ``replaceWhere`` only with ``SaveMode.Overwrite``:
    an append appends every row (inside the predicate or not), checks none against it and
    removes nothing, a blind append whose commitInfo still records the predicate and, with
    data columns on (``registerInsertReplaceMetrics``), replaceWhere's metrics without the
    removes. The predicate is still split into partition and data terms, so a data filter
    with ``dataChange=false`` is refused as in an overwrite."""
    path = str(tmp_path)
    _write_odd(path, [1, 2], {"partitionBy": "is_odd"}, False)
    _write_odd(path, [3, 4], {"replaceWhere": "is_odd = true"}, False)
    _write_odd(path, [5], {"replaceWhere": "value > 100"}, False)
    _write_odd(path, [7], {"replaceWhere": "is_odd = false", **_DATA_COLUMNS_OFF}, False)
    log = DeltaLog.for_table(path)
    values = [
        v for f in log.update().files for v in pq.read_table(os.path.join(path, f.path)).column("value").to_pylist()
    ]
    assert sorted(values) == [1, 2, 3, 4, 5, 7]
    infos = {r.version: r.commit_info for r in log.history()}
    assert infos[1] is not None and infos[3] is not None
    params = infos[1].operation_parameters or {}
    assert (params["mode"], params["predicate"]) == ("Append", "is_odd = true")
    assert infos[1].is_blind_append is True
    metrics = infos[1].operation_metrics or {}
    assert sorted(metrics) == ["numAddedChangeFiles", "numCopiedRows", "numFiles", "numOutputBytes", "numOutputRows"]
    assert (metrics["numCopiedRows"], metrics["numAddedChangeFiles"], metrics["numOutputRows"]) == ("0", "0", "2")
    assert sorted(infos[3].operation_metrics or {}) == ["numFiles", "numOutputBytes", "numOutputRows"]
    with pytest.raises(ValueError, match="DELTA_REPLACE_WHERE_WITH_FILTER_DATA_CHANGE_UNSET"):
        plan_write(WriteOptions.parse({"path": path, "replaceWhere": "value > 1", "dataChange": "false"}, False), _ODD)


def test_reserved_change_data_columns_refused_with_delta_error_classes(tmp_path: str) -> None:
    """Delta's ``CDCReader.checkMetadataChange`` (DeltaCDCSuite "writes with metadata columns",
    "schema evolution with CDC reserved column names - op = write"): a write whose schema has
    ``_commit_version`` / ``_commit_timestamp`` while the change data feed is on is
    ``RESERVED_CDC_COLUMNS_ON_WRITE`` when the table had it on before (an existing table, or a
    new one the session's defaults turn it on for), ``DELTA_TABLE_ALREADY_CONTAINS_CDC_COLUMNS``
    when this write turns it on."""
    from dataclasses import replace

    path = str(tmp_path)
    _write_odd(path, [1], {"delta.enableChangeDataFeed": "true"}, False)
    versioned = _ODD.replace("]}", ',{"name":"_commit_version","type":"long","nullable":true,"metadata":{}}]}')
    with pytest.raises(ValueError, match=r"RESERVED_CDC_COLUMNS_ON_WRITE.*_commit_version"):
        plan_write(WriteOptions.parse({"path": path, "mergeSchema": "true"}, False), versioned)
    new = WriteOptions.parse({"path": path + "-new", "delta.enableChangeDataFeed": "true"}, False)
    with pytest.raises(ValueError, match="DELTA_TABLE_ALREADY_CONTAINS_CDC_COLUMNS"):
        plan_write(new, versioned)
    by_default = replace(new, table_properties={}, session_table_defaults={"delta.enableChangeDataFeed": "true"})
    with pytest.raises(ValueError, match="RESERVED_CDC_COLUMNS_ON_WRITE"):
        plan_write(by_default, versioned)
    assert not os.path.exists(path + "-new")


def test_replace_where_on_partition_columns_selects_files_by_their_values(tmp_path: str) -> None:
    """Delta's ``WriteIntoDelta`` splits ``replaceWhere`` into partition and data predicates
    (``splitMetadataAndDataPredicates``): one naming partition columns only, whatever its shape
    (``OR``, a function of a partition column), replaces whole files selected by their partition
    values, with ``replaceWhere.dataColumns.enabled`` on or off, and the written rows must satisfy
    it (``DELTA_REPLACE_WHERE_MISMATCH``, nothing committed). One deltalog cannot evaluate (a
    subquery) is refused before a file is written."""
    from deltalog.contrib.spark.errors import ReplaceWhereMismatchError

    path = str(tmp_path)
    _write_vp(path, [(1, _X), (2, _Y), (3, _Z), (4, None)], {"partitionBy": "part"}, False)
    log = DeltaLog.for_table(path)

    def table() -> list[tuple[int, str | None]]:
        files = log.update().files
        return sorted(
            (
                (v, f.partition_values["part"])
                for f in files
                for v in pq.read_table(f"{path}/{f.path}")["value"].to_pylist()
            ),
            key=str,
        )

    for step, options in enumerate(({}, _DATA_COLUMNS_OFF)):
        kept = [r for r in table() if r[1] not in (_X, _Y)]
        _write_vp(
            path, [(10 + step, _X), (20 + step, _Y)], {"replaceWhere": "part = 'x' OR part = 'y'", **options}, True
        )
        assert table() == sorted([(10 + step, _X), (20 + step, _Y), *kept], key=str)
        metrics = log.history(1)[0].commit_info.operation_metrics or {}  # whole files: none copied
        assert (metrics.get("numRemovedFiles"), metrics.get("numCopiedRows", "0")) == ("2", "0"), options
        _write_vp(
            path, [(30 + step, None)], {"replaceWhere": "substr(part, 1, 1) = 'z' OR part IS NULL", **options}, True
        )
        assert table() == sorted([(10 + step, _X), (20 + step, _Y), (30 + step, None)], key=str)
        _write_vp(path, [(3, _Z)], {}, False)
        version = log.update().version
        with pytest.raises(ReplaceWhereMismatchError, match="DELTA_REPLACE_WHERE_MISMATCH"):
            _write_vp(path, [(5, _Z)], {"replaceWhere": "part = 'x' OR part = 'y'", **options}, True)
        assert log.update().version == version
        with pytest.raises(ValueError, match="subquery"):
            plan_write(WriteOptions.parse({"path": path, "replaceWhere": "part >= (SELECT 'x')", **options}, True), _VP)


def test_replace_where_with_target_alias_as_delta(tmp_path: str) -> None:
    """DeltaInsertReplaceWhereTargetAliasSuite: with the write option ``targetAlias``, the alias
    qualifying a column of ``replaceWhere`` is stripped (names compared by the session's
    resolver) before the predicate is split into partition and data terms; history records the
    predicate as given. A reference qualified by another name (or by an alias not declared) names
    no column of the table (``UNRESOLVED_COLUMN``)."""
    path = str(tmp_path)
    _write_vp(path, [(1, _X), (2, _X), (3, _Y)], {"partitionBy": "part"}, False)
    alias = {"targetAlias": "t"}
    _write_vp(path, [(4, _X)], {"replaceWhere": "T.part = 'x'", "dataChange": "false", **alias}, True)
    _write_vp(path, [(5, _Y)], {"replaceWhere": "t.value >= 3 AND `t`.part = 'y'", **alias}, True)
    log = DeltaLog.for_table(path)
    rows = sorted((v, f.partition_values["part"]) for f in log.update().files for v in _values(path, f))
    assert rows == [(4, _X), (5, _Y)]
    assert log.history(1)[0].commit_info.operation_parameters["predicate"] == "t.value >= 3 AND `t`.part = 'y'"
    for options, error in [
        ({"replaceWhere": "t.value = 1"}, "UNRESOLVED_COLUMN"),
        ({"replaceWhere": "wrong.value = 1", **alias}, "UNRESOLVED_COLUMN"),
        ({"replaceWhere": "t.part = 'x' AND t.value = 1", "dataChange": "false", **alias}, "FILTER_DATA_CHANGE"),
        ({"replaceWhere": "t.value = 1", **alias, **_DATA_COLUMNS_OFF}, "DELTA_NON_PARTITION_COLUMN_REFERENCE"),
    ]:
        with pytest.raises(ValueError, match=error):
            plan_write(WriteOptions.parse({"path": path, **options}, True), _VP)


def _values(path: str, f: Any) -> list[int]:
    return list(pq.read_table(os.path.join(path, decode_path(f.path))).column("value").to_pylist())


def test_optimized_writes_follow_deltas_precedence(tmp_path: str) -> None:
    """Delta's ``shouldOptimizeWrite``: the write option ``optimizeWrite``, else the session's
    ``spark.databricks.delta.optimizeWrite.enabled``, else the table's
    ``delta.autoOptimize.optimizeWrite``, else off (OptimizedWritesSuite "non-partitioned write -
    table config compatibility", "data frame config trumps table config")."""
    plain, optimizing = str(tmp_path / "plain"), str(tmp_path / "optimizing")
    _write_vp(plain, [(1, _X)], {}, False)
    _write_vp(optimizing, [(1, _X)], {"delta.autoOptimize.optimizeWrite": "true"}, False)
    conf = "spark.databricks.delta.optimizeWrite.enabled"

    def optimized(path: str, options: dict[str, str]) -> bool:
        return bool(plan_write(WriteOptions.parse({"path": path, **options}, False), _VP).spec.optimize_write)

    assert not optimized(plain, {})
    assert optimized(plain, {conf: "true"}) and not optimized(plain, {conf: "true", "optimizeWrite": "false"})
    assert optimized(optimizing, {}) and not optimized(optimizing, {conf: "false"})
    assert optimized(optimizing, {conf: "false", "optimizeWrite": "true"})
    with pytest.raises(ValueError, match="DELTA_ILLEGAL_OPTION"):
        optimized(plain, {"optimizeWrite": "sometimes"})


def test_replace_where_reads_timestamp_text_in_the_session_time_zone(tmp_path: str) -> None:
    """Spark casts a zone-free timestamp text (``'2024-01-01 00:00:00'``, ``TIMESTAMP '...'``)
    to an instant of the session time zone: a ``replaceWhere`` on a timestamp column in a
    ``America/Los_Angeles`` session replaces the rows from LA's midnight on (the row of
    2023-12-31 20:00 LA, 04:00 UTC, stays) and checks the written rows so; a timestamp_ntz column
    compares wall clocks; a text naming its zone is that instant."""
    import datetime as dt

    schema = (
        '{"type":"struct","fields":[{"name":"id","type":"integer","nullable":true,"metadata":{}},'
        '{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},'
        '{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}}]}'
    )
    utc = dt.timezone.utc
    path = str(tmp_path)

    def write(rows: list[tuple[int, int]], options: dict[str, str], overwrite: bool) -> None:
        plan = plan_write(WriteOptions.parse({"path": path, **options}, overwrite), schema)
        instants = [dt.datetime(2024, 1, 1, tzinfo=utc) + dt.timedelta(hours=h) for _, h in rows]
        table = pa.table(
            {
                "id": pa.array([i for i, _ in rows], pa.int32()),
                "ts": pa.array(instants, pa.timestamp("us", tz="UTC")),
                "ntz": pa.array([t.replace(tzinfo=None) for t in instants], pa.timestamp("us")),
            }
        )
        commit_write(plan, write_batches(plan.spec, table.to_batches(), 0))

    def ids() -> list[int]:
        files = DeltaLog.for_table(path).update().files
        return sorted(i for f in files for i in pq.read_table(os.path.join(path, f.path))["id"].to_pylist())

    la = {"spark.sql.session.timeZone": "America/Los_Angeles"}
    write([(1, 4), (2, 18), (3, 30)], {}, False)  # LA: 2023-12-31 20:00, 2024-01-01 10:00, 01-01 22:00
    write([(4, 20)], {"replaceWhere": "ts >= '2024-01-01 00:00:00'", **la}, True)
    assert ids() == [1, 4]
    with pytest.raises(ValueError, match="DELTA_REPLACE_WHERE_MISMATCH"):  # 04:00 UTC is 2023 in LA
        write([(5, 4)], {"replaceWhere": "ts >= TIMESTAMP '2024-01-01 00:00:00'", **la}, True)
    write([(6, 5)], {"replaceWhere": "ntz >= '2024-01-01 00:00:00'", **la}, True)  # wall clocks: 04:00 too
    assert ids() == [6]
    write([(7, 9)], {"replaceWhere": "ts >= '2024-01-01 04:30:00+00:00'", **la}, True)
    assert ids() == [7]


def _committed_action_kinds(path: str, version: int) -> set[str]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        return {next(iter(json.loads(line))) for line in f if line.strip()}


def test_overwrite_schema_with_the_tables_schema_commits_no_metadata(tmp_path: str) -> None:
    """Delta's ``ImplicitMetadataOperation`` updates the metadata of an ``overwriteSchema``
    write only when the schema or the partitioning changes (``isNewSchema ||
    isPartitioningChanged``): an overwrite with the table's own schema is a plain overwrite,
    so a concurrent writer does not fail with a metadata change. A changed schema, or a
    column-mapped table (whose stored schema always differs from the data's, as in Delta),
    still commits one."""
    path = str(tmp_path)
    rows = pa.table({"value": pa.array([1], pa.int32()), "is_odd": pa.array([True])})
    first = plan_write(WriteOptions.parse({"path": path}, False), _ODD)
    commit_write(first, write_batches(first.spec, rows.to_batches(), 0))
    same = plan_write(WriteOptions.parse({"path": path, "overwriteSchema": "true"}, True), _ODD)
    assert commit_write(same, write_batches(same.spec, rows.to_batches(), 0)) == 1
    assert "metaData" not in _committed_action_kinds(path, 1)
    other = plan_write(WriteOptions.parse({"path": path, "overwriteSchema": "true"}, True), _ONLY_VALUE)
    commit_write(other, write_batches(other.spec, rows.select(["value"]).to_batches(), 0))
    assert "metaData" in _committed_action_kinds(path, 2)
    mapped = str(tmp_path / "mapped")
    create = plan_write(WriteOptions.parse({"path": mapped, "delta.columnMapping.mode": "name"}, False), _ODD)
    commit_write(create, write_batches(create.spec, rows.to_batches(), 0))
    again = plan_write(WriteOptions.parse({"path": mapped, "overwriteSchema": "true"}, True), _ODD)
    commit_write(again, write_batches(again.spec, rows.to_batches(), 0))
    assert "metaData" in _committed_action_kinds(mapped, 1)


def test_overwrite_schema_keeps_the_table_properties_and_ignores_the_writes(tmp_path: str) -> None:
    """Delta's ``ImplicitMetadataOperation``: a write's ``delta.*`` options are the properties
    of a table it creates; ``overwriteSchema`` on an existing table replaces only its schema
    and partitioning (``txn.metadata.copy(schemaString, partitionColumns)``), so the table keeps
    its properties and the write's are ignored, as on any other write to it (they were applied:
    ``delta.appendOnly=true`` made the table append-only where Delta leaves it as it was)."""
    path = str(tmp_path)
    first = plan_write(
        WriteOptions.parse({"path": path, "delta.logRetentionDuration": "interval 40 days"}, False), _ODD
    )
    rows = pa.table({"value": pa.array([1], pa.int32()), "is_odd": pa.array([True])})
    commit_write(first, write_batches(first.spec, rows.to_batches(), 0))
    schema = '{"type":"struct","fields":[{"name":"value","type":"long","nullable":true,"metadata":{}}]}'
    options = {"path": path, "overwriteSchema": "true", "delta.appendOnly": "true", "tableProperties": '{"a": "b"}'}
    again = plan_write(WriteOptions.parse(options, True), schema)
    commit_write(again, write_batches(again.spec, pa.table({"value": pa.array([2], pa.int64())}).to_batches(), 0))
    snapshot = DeltaLog.for_table(path).update()
    assert snapshot.metadata.configuration == {"delta.logRetentionDuration": "interval 40 days"}
    assert [f.name for f in snapshot.schema.fields] == ["value"]
