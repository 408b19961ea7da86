"""The Python data source read path (``format("deltalog")``): splits of large files by
row-group ranges (with deletion vectors), row-group skipping by footer statistics, and
per-file constant columns built as Arrow arrays."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
import math
import os
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.contrib.spark.input_partitions import bins as _bins
from deltalog.contrib.spark.reads import FileToRead, ReadSpec, constant_column, read_file
from deltalog.contrib.spark.row_groups import row_group_offsets, row_groups_in_range, row_groups_may_match
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.log.deletion_vectors import write_dv_file, z85_encode
from deltalog.txn.protocol.actions import AddFile, DeletionVectorDescriptor, Metadata, Protocol, action_to_line

ROWS = 4000
PHYSICAL = "delta.columnMapping.physicalName"
GROUP_ROWS = 500  # 8 row groups
#: deleted rows in row groups 0, 1, 3, 6 and 7 (the last row of the file too)
DELETED = [0, 7, 499, 500, 501, 1999, 3000, 3001, 3500, 3999]
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in (("id", "long"), ("x", "double"), ("s", "string"))
    ],
}


def _data(rows: int = ROWS) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "x": pa.array([float(i) / 2 for i in range(rows)], pa.float64()),
            "s": pa.array([f"v{i:05d}" for i in range(rows)], pa.string()),
        }
    )


def _one_file_table(path: str, deleted: list[int] | None = DELETED) -> tuple[str, int]:
    """A table of one Parquet file of 8 row groups, with a deletion vector on ``deleted``."""
    os.makedirs(path)
    name = "part-00000-0.snappy.parquet"
    pq.write_table(_data(), os.path.join(path, name), row_group_size=GROUP_ROWS)
    size = os.path.getsize(os.path.join(path, name))
    dv = None
    if deleted:
        blob, [(offset, dv_size, cardinality)] = write_dv_file([deleted])
        file_uuid = uuid.uuid4()
        with open(os.path.join(path, f"deletion_vector_{file_uuid}.bin"), "wb") as f:
            f.write(blob)
        dv = DeletionVectorDescriptor("u", z85_encode(file_uuid.bytes), dv_size, cardinality, offset)
    add = AddFile(name, {}, size, int(time.time() * 1000), stats=json.dumps({"numRecords": ROWS}), deletion_vector=dv)
    protocol = Protocol(3, 7, ("deletionVectors",), ("deletionVectors",))
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(SCHEMA),
        configuration={"delta.enableDeletionVectors": "true"},
    )
    log = DeltaLog.for_table(path)
    log.store.write(log.commit_uri(0), [action_to_line(a) for a in (protocol, metadata, add)])
    return name, size


def _spec(path: str, **changes: Any) -> ReadSpec:
    log = DeltaLog.for_table(path)
    out = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
    spec = ReadSpec(log.store.spec(), log.table_uri, json.dumps(SCHEMA), (), output_schema=out)
    return dataclasses.replace(spec, **changes)


def _ids(tables: list[pa.Table]) -> list[int]:
    return sorted(i for t in tables for i in t.column("id").to_pylist())


# -- splits, without Spark -------------------------------------------------------------


def test_every_row_group_is_read_by_exactly_one_split(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    name, size = _one_file_table(path, deleted=None)
    metadata = pq.read_metadata(os.path.join(path, name))
    assert metadata.num_row_groups == 8
    for target in (97, 1000, size // 8, size // 3, size // 2, size - 1):
        splits = [f for b in _bins([FileToRead(name, {}, size)], target) for f in b]
        assert len(splits) > 1 and all(f.is_split for f in splits)
        assert splits[-1].length is None  # the last split reads to the end of the file
        groups = [g for f in splits for g in row_groups_in_range(metadata, f.start, f.length)]
        assert sorted(groups) == list(range(8)), target
    # not larger than the target: one whole-file item
    assert _bins([FileToRead(name, {}, size)], size) == [[FileToRead(name, {}, size)]]


def test_splits_of_a_file_with_a_deletion_vector_read_its_live_rows_once(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    name, size = _one_file_table(path)
    spec = _spec(path)
    store = DeltaLog.for_table(path).store
    dv = DeltaLog.for_table(path).update().files[0].deletion_vector
    assert dv is not None
    item = FileToRead(name, {}, size, dv.to_dict())
    live = sorted(set(range(ROWS)) - set(DELETED))
    assert _ids([read_file(spec, store, item)]) == live
    splits = [f for b in _bins([item], size // 5) for f in b]
    tables = [read_file(spec, store, f) for f in splits]
    assert len(tables) == 6 and sum(1 for t in tables if t.num_rows) >= 5
    assert _ids(tables) == live
    # the rows keep their values (a row group's rows, not the first rows of the file)
    rows = {r["id"]: r for t in tables for r in t.to_pylist()}
    assert rows[3998] == {"id": 3998, "x": 1999.0, "s": "v03998"}


def test_row_ids_are_base_row_id_plus_position_across_splits_and_deletion_vectors(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    name, size = _one_file_table(path)
    dv = DeltaLog.for_table(path).update().files[0].deletion_vector
    assert dv is not None
    out = pa.schema(
        [("id", pa.int64()), ("_metadata", pa.struct([("row_id", pa.int64()), ("row_commit_version", pa.int64())]))]
    )
    spec = _spec(path, output_schema=out, row_tracking_columns=("_row-id-col-x", "_row-commit-version-col-x"))
    store = DeltaLog.for_table(path).store
    item = FileToRead(name, {}, size, dv.to_dict(), base_row_id=1000, default_row_commit_version=3)
    rows = [r for f in (x for b in _bins([item], size // 5) for x in b) for r in read_file(spec, store, f).to_pylist()]
    assert sorted(r["id"] for r in rows) == sorted(set(range(ROWS)) - set(DELETED))
    # the id column holds each row's position in the file
    assert all(r["_metadata"] == {"row_id": 1000 + r["id"], "row_commit_version": 3} for r in rows)


def test_materialized_row_ids_win_over_the_default_ones(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    os.makedirs(path)
    data = pa.table({"id": [0, 1, 2], "_row-id-col-x": [7, None, 9], "_row-commit-version-col-x": [None, 1, None]})
    pq.write_table(data, os.path.join(path, "f.parquet"))
    out = pa.schema(
        [("id", pa.int64()), ("_metadata", pa.struct([("row_id", pa.int64()), ("row_commit_version", pa.int64())]))]
    )
    spec = _spec(path, output_schema=out, row_tracking_columns=("_row-id-col-x", "_row-commit-version-col-x"))
    item = FileToRead("f.parquet", {}, 1, base_row_id=50, default_row_commit_version=4)
    got = read_file(spec, DeltaLog.for_table(path).store, item).column("_metadata").to_pylist()
    assert got == [
        {"row_id": 7, "row_commit_version": 4},
        {"row_id": 51, "row_commit_version": 1},
        {"row_id": 9, "row_commit_version": 4},
    ]


def test_absolute_paths_are_read_decoded_in_every_spelling(tmp_path: Any) -> None:
    """An add's absolute path (a shallow clone's, or Delta's ``file:/x``) names the decoded
    file whether it is a bare path, ``file:/x`` or ``file:///x``; never a path under the table."""
    path = str(tmp_path / "t")
    os.makedirs(path)
    outside = tmp_path / "source" / "g=a b"
    os.makedirs(outside)
    pq.write_table(_data(3), outside / "f#1.parquet")
    encoded = f"{tmp_path}/source/g=a%20b/f%231.parquet"
    spec, store = _spec(path), DeltaLog.for_table(path).store
    for spelling in (encoded, f"file:{encoded}", f"file://{encoded}"):
        assert _ids([read_file(spec, store, FileToRead(spelling, {}, 1))]) == [0, 1, 2], spelling


# -- row-group skipping by footer statistics, without Spark -----------------------------


def _file_metadata(tmp_path: Any, table: pa.Table, group_rows: int) -> pq.FileMetaData:
    target = str(tmp_path / f"f-{uuid.uuid4()}.parquet")
    pq.write_table(table, target, row_group_size=group_rows)
    return pq.read_metadata(target)


def test_row_groups_are_skipped_by_their_statistics(tmp_path: Any) -> None:
    metadata = _file_metadata(tmp_path, _data(), GROUP_ROWS)  # id 0-499 in group 0, ...
    types = {"id": "long", "x": "double", "s": "string"}
    every = list(range(8))

    def select(*terms: Any, groups: list[int] = every) -> list[int]:
        return row_groups_may_match(metadata, groups, list(terms), types)

    assert select(("id", ">=", 3600)) == [7]
    assert select(("id", "<", 500)) == [0]
    assert select(("id", "=", 1234)) == [2]
    assert select(("id", "in", (10, 2600))) == [0, 5]
    assert select(("id", ">", 4000)) == []
    assert select(("s", "<=", "v00600")) == [0, 1]
    assert select(("id", ">=", 1000), ("id", "<", 1500)) == [2]
    assert select(("id", ">=", 1000), groups=[0, 3]) == [3]  # only among the given groups
    assert select(("id", "isnull", None)) == []  # no nulls counted
    assert select(("id", "notnull", None)) == every
    assert select(("missing", "=", 1)) == every  # no statistics: kept
    # a float max never bounds a row group (NaN is above every number in Spark and not in
    # Parquet's max); its min does
    assert select(("x", ">", 1e9)) == every
    assert select(("x", "<", 250.0)) == [0]


def test_nan_nulls_and_column_mapping_in_row_group_statistics(tmp_path: Any) -> None:
    table = pa.table(
        {
            "col-1a": pa.array([1.0, math.nan, 2.0, 3.0, None, None], pa.float64()),
            "col-2b": pa.array([None, None, 5, 6, None, None], pa.int32()),
        }
    )
    metadata = _file_metadata(tmp_path, table, 2)  # [1, NaN] [2, 3] [null, null]
    types = {"x": "double", "n": "integer"}
    physical = {"x": "col-1a", "n": "col-2b"}

    def select(*terms: Any) -> list[int]:
        return row_groups_may_match(metadata, [0, 1, 2], list(terms), types, physical)

    assert select(("x", ">", 100.0)) == [0, 1, 2]  # NaN > 100 in Spark: group 0 kept
    assert select(("x", "<", 1.5)) == [0, 2]  # group 2 has no min/max: kept
    assert select(("x", "isnull", None)) == [2]
    assert select(("x", "notnull", None)) == [0, 1]
    assert select(("n", "notnull", None)) == [1]  # group 0 and 2: all null
    assert select(("n", "=", 6)) == [0, 1, 2]  # all-null groups have no min/max: kept
    assert select(("n", "=", 6), ("x", "isnull", None)) == [2]
    assert select(("n", ">", 6)) == [0, 2]


def test_pushed_terms_skip_row_groups_and_keep_deletion_vector_positions(tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    name, size = _one_file_table(path)
    dv = DeltaLog.for_table(path).update().files[0].deletion_vector
    assert dv is not None
    store = DeltaLog.for_table(path).store
    item = FileToRead(name, {}, size, dv.to_dict())
    # only row groups 0 and 7 may hold these ids
    spec = _spec(path, row_group_terms=(("id", "in", (1, 499, 3999, 3998)),))
    table = read_file(spec, store, item)
    assert _ids([table]) == sorted(set(range(500)) - set(DELETED)) + sorted(set(range(3500, 4000)) - set(DELETED))
    # skipped row groups still count for the positions of the deletion vector: split reads agree
    tables = [read_file(spec, store, f) for b in _bins([item], size // 3) for f in b]
    assert _ids(tables) == _ids([table])
    assert row_group_offsets(pq.read_metadata(os.path.join(path, name)))[-1] == ROWS


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapped_structs_inside_arrays_and_maps_keep_their_fields(mode: str) -> None:
    """Delta's golden ``table-with-columnmapping-mode-*`` tables: struct fields nested in
    arrays and maps are stored by physical name and read back by logical name."""
    from deltalog.contrib.spark.logical_schema import arrow_schema, logical_struct

    path = os.path.join(os.path.dirname(__file__), "..", "log", "golden", f"table-with-columnmapping-mode-{mode}")
    log = DeltaLog.for_table(os.path.abspath(path))
    snapshot = log.update()
    out = arrow_schema(logical_struct(snapshot.metadata.schema_string))
    spec = ReadSpec.for_snapshot(log, snapshot, out)
    rows = [r for a in snapshot.files for r in read_file(spec, log.store, FileToRead(a.path, {}, a.size)).to_pylist()]
    one = next(r for r in rows if r["IntegerType"] == 1)
    assert one["array_of_structs"] == [{"ab": 1}, {"ab": 1}]
    assert one["map_of_rows"] == [(2, {"ab": 20})]
    assert one["struct_of_arrays_maps_of_structs"] == {"aa": [1, 2], "ab": [([1, 2], {"aca": 3})]}
    assert one["nested_struct"] == {"aa": "1", "ac": {"aca": 1}}
    assert one["map_of_maps"] == [(1, [(1, 1)]), (2, [(3, 1)])]
    assert sum(r["IntegerType"] is None for r in rows) == 1
    # slices of lists (a null list, a null struct element) keep their rows
    from deltalog.contrib.spark.reads import _logical_column

    element = {"type": "struct", "fields": [{"name": "x", "type": "integer", "metadata": {PHYSICAL: "p"}}]}
    stored = pa.array([[{"p": 1}], None, [{"p": 2}, None]], pa.list_(pa.struct([("p", pa.int32())]))).slice(1)
    array = {"type": "array", "elementType": element, "containsNull": True}
    target = pa.list_(pa.struct([("x", pa.int32())]))
    assert _logical_column(stored, array, target, mode).to_pylist() == [None, [{"x": 2}, None]]


# -- constant columns --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "type_"),
    [
        (7, pa.int32()),
        ("a=b/c", pa.string()),
        (dt.date(2024, 2, 29), pa.date32()),
        (dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc), pa.timestamp("us", tz="UTC")),
        (decimal.Decimal("12.50"), pa.decimal128(10, 2)),
        (True, pa.bool_()),
        (None, pa.int64()),
        (None, pa.string()),
    ],
)
def test_constant_column_equals_the_list_built_array(value: Any, type_: pa.DataType) -> None:
    built = constant_column(value, type_, 1000)
    assert built.type == type_ and len(built) == 1000
    assert built.equals(pa.array([value] * 1000, type=type_))
    assert len(constant_column(value, type_, 0)) == 0


# -- through Spark ------------------------------------------------------------------------


def test_spark_reads_splits_of_one_file_with_deletion_vectors(spark: Any, tmp_path: Any) -> None:
    path = str(tmp_path / "t")
    _, size = _one_file_table(path)
    assert spark.read.format("deltalog").load(path).rdd.getNumPartitions() == 1
    split = spark.read.format("deltalog").option("maxSplitBytes", str(-(-size // 4))).load(path)
    assert split.rdd.getNumPartitions() == 4
    live = [r for r in _data().to_pylist() if r["id"] not in set(DELETED)]
    assert sorted((r["id"], r["x"], r["s"]) for r in split.collect()) == [(r["id"], r["x"], r["s"]) for r in live]


def test_spark_partition_columns_are_typed_constants_with_nulls(spark: Any, table_path: str) -> None:
    rows = [
        (1, 10, "a", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc), decimal.Decimal("1.50")),
        (2, 10, "a", dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc), decimal.Decimal("1.50")),
        (3, None, None, None, None, None),
        (
            4,
            -5,
            "x/y=z",
            dt.date(1999, 12, 31),
            dt.datetime(1999, 12, 31, 23, 59, 59, 5, tzinfo=dt.timezone.utc),
            decimal.Decimal("12.34"),
        ),
    ]
    schema = "id long, p_int int, p_str string, p_date date, p_ts timestamp, p_dec decimal(10,2)"
    (
        spark.createDataFrame(rows, schema)
        .write.format("deltalog")
        .mode("append")
        .option("partitionBy", "p_int,p_str,p_date,p_ts,p_dec")
        .save(table_path)
    )
    df = spark.read.format("deltalog").load(table_path)
    assert [f.simpleString() for f in df.schema.fields] == [
        "id:bigint",
        "p_int:int",
        "p_str:string",
        "p_date:date",
        "p_ts:timestamp",
        "p_dec:decimal(10,2)",
    ]
    got = sorted((tuple(r) for r in df.collect()), key=lambda r: r[0])
    naive = [(*r[:4], None if r[4] is None else r[4].replace(tzinfo=None), r[5]) for r in rows]
    assert got == naive  # the session time zone is UTC


@pytest.mark.parametrize("plans_per_scan", [True, False])
def test_row_group_skipping_is_under_the_read_plans_per_scan_guard(
    tmp_path: Any, monkeypatch: Any, plans_per_scan: bool
) -> None:
    """On Spark up to 4.3 (``READ_PLANS_PER_SCAN`` false) pushed filters prune nothing, row
    groups included; where plans are per scan, they skip row groups (the reader is driven
    here without a Spark session, as Spark drives it)."""
    from pyspark.sql.datasource import GreaterThanOrEqual
    from pyspark.sql.types import StructType

    from deltalog.contrib.spark import source
    from deltalog.contrib.spark.options import ReadOptions

    path = str(tmp_path / "t")
    _one_file_table(path)
    monkeypatch.setattr(source, "READ_PLANS_PER_SCAN", plans_per_scan)
    reader = source.DeltaReader(ReadOptions.parse({"path": path}), StructType.fromJson(SCHEMA))
    assert list(reader.pushFilters([GreaterThanOrEqual(("id",), 3600)]))  # Spark filters again
    [partition] = reader.partitions()
    assert isinstance(partition, source.FilesPartition)
    assert partition.spec.row_group_terms == ((("id", ">=", 3600),) if plans_per_scan else ())
    ids = _ids([pa.Table.from_batches(list(reader.read(partition)))])
    first = 3500 if plans_per_scan else 0  # row group 7 holds ids 3500-3999
    assert ids == sorted(set(range(first, ROWS)) - set(DELETED))


def test_spark_writes_row_tracking_and_reads_row_ids(spark: Any, table_path: str) -> None:
    df = spark.createDataFrame([(i,) for i in range(6)], "n long").repartition(2)
    df.write.format("deltalog").mode("append").option("delta.enableRowTracking", "true").save(table_path)
    spark.createDataFrame([(i,) for i in range(6, 9)], "n long").write.format("deltalog").mode("append").save(
        table_path
    )
    snap = DeltaLog.for_table(table_path).update()
    assert "rowTracking" in (snap.protocol.writer_features or ())
    assert all(f.base_row_id is not None and f.default_row_commit_version is not None for f in snap.files)
    got = spark.read.format("deltalog").option("readRowTracking", "true").load(table_path)
    rows = got.select("n", "_metadata.row_id", "_metadata.row_commit_version").collect()
    assert sorted(r["n"] for r in rows) == list(range(9))
    assert sorted(r["row_id"] for r in rows) == list(range(9))  # unique, dense from 0
    assert {r["row_commit_version"] for r in rows if r["n"] >= 6} == {1}
