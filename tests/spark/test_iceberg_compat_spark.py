"""A UniForm (IcebergCompatV2) table written through every Spark path: the data source, the
native write, UPDATE, MERGE and OPTIMIZE. Every data file holds the partition column after
the data columns and the nested field ids of its arrays and maps, every ``add`` has
``numRecords``, no timestamp is INT96, and delta-rs reads the rows back."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from deltalog.contrib.spark import read_table
from deltalog.contrib.spark.table_writes import write_table
from deltalog.contrib.spark.tables import DeltaTable
from deltalog.txn.delta_log import DeltaLog
from deltalog.txn.protocol.properties import normalize_property_key
from tests.log.test_column_mapping_writes import _delta_rs_rows

SCHEMA = "id long, tags array<string>, m map<string,int>, ts timestamp, p string"
UNIFORM = {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def _rows(df: Any) -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["id"])


def _check_files(path: str) -> None:
    snap = DeltaLog.for_table(path).update()
    fields = {f["name"]: f for f in json.loads(snap.metadata.schema_string)["fields"]}
    phys = {n: f["metadata"]["delta.columnMapping.physicalName"] for n, f in fields.items()}
    nested = {k: v for f in fields.values() for k, v in f["metadata"]["delta.columnMapping.nested.ids"].items()}
    assert snap.files
    for add in snap.files:
        assert add.num_records() is not None
        assert phys["p"] not in json.loads(add.stats or "{}").get("minValues", {})
        parquet = pq.ParquetFile(f"{path}/{add.path}")
        arrow = parquet.schema_arrow
        assert arrow.names[-1] == phys["p"], arrow.names  # the partition column, after the data columns
        tags = arrow.field(phys["tags"]).type.value_field
        assert tags.metadata[b"PARQUET:field_id"] == str(nested[f"{phys['tags']}.element"]).encode()
        m = arrow.field(phys["m"]).type
        assert m.key_field.metadata[b"PARQUET:field_id"] == str(nested[f"{phys['m']}.key"]).encode()
        assert m.item_field.metadata[b"PARQUET:field_id"] == str(nested[f"{phys['m']}.value"]).encode()
        leaves = {parquet.schema.column(i).path: parquet.schema.column(i) for i in range(len(parquet.schema))}
        assert leaves[phys["ts"]].physical_type == "INT64"
        values = set(parquet.read(columns=[phys["p"]]).column(0).to_pylist())
        assert values == {add.partition_values[phys["p"]]}


def test_a_uniform_table_written_through_every_spark_path(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    t0 = dt.datetime(2024, 1, 2, 3, 4, 5)
    first = spark.createDataFrame(
        [(1, ["x", "y"], {"k": 1}, t0, "a"), (2, [], None, None, "b"), (3, None, {"j": 2}, t0, "a")], SCHEMA
    )
    writer = first.write.format("deltalog").mode("append").option("partitionBy", "p")
    for k, v in UNIFORM.items():
        writer = writer.option(k, v)
    writer.save(path)
    table = DeltaTable.forPath(spark, path)
    table.update("id = 2", {"tags": "array('u')"})
    # MERGE writes natively where it can: here it falls back to the Python tasks
    source = spark.createDataFrame([(3, ["m"], {"w": 3}, None, "a"), (5, None, None, t0, "c")], SCHEMA)
    merge = table.alias("t").merge(source.alias("s"), "t.id = s.id")
    merge.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    table.optimize().executeCompaction()

    _check_files(path)
    snap = DeltaLog.for_table(path).update()
    before = snap.files
    assert "deletionVectors" not in (snap.protocol.writer_features or ())
    assert [c.operation for c in DeltaLog.for_table(path).history()][:3] == ["OPTIMIZE", "MERGE", "UPDATE"]
    expected = [
        {"id": 1, "tags": ["x", "y"], "m": {"k": 1}, "ts": t0, "p": "a"},
        {"id": 2, "tags": ["u"], "m": None, "ts": None, "p": "b"},
        {"id": 3, "tags": ["m"], "m": {"w": 3}, "ts": None, "p": "a"},
        {"id": 5, "tags": None, "m": None, "ts": t0, "p": "c"},
    ]
    assert _rows(read_table(spark, path)) == expected
    assert _rows(read_table(spark, path, native=False)) == expected  # files that hold the partition column too
    rs = sorted(_delta_rs_rows(Path(path)), key=lambda r: r["id"])
    assert [(r["id"], r["tags"], r["p"]) for r in rs] == [(e["id"], e["tags"], e["p"]) for e in expected]

    # schema evolution: the new array column gets a nested id, which its file carries
    evolved = spark.createDataFrame([(6, None, None, None, "a", [7])], f"{SCHEMA}, more array<int>")
    evolved.write.format("deltalog").mode("append").option("mergeSchema", "true").save(path)
    snap = DeltaLog.for_table(path).update()
    more = json.loads(snap.metadata.schema_string)["fields"][-1]["metadata"]
    (nested_id,) = more["delta.columnMapping.nested.ids"].values()
    assert nested_id == int(snap.metadata.configuration["delta.columnMapping.maxColumnId"])
    (newest,) = [a for a in snap.files if a.path not in {f.path for f in before}]
    element = pq.read_schema(f"{path}/{newest.path}").field(more["delta.columnMapping.physicalName"]).type.value_field
    assert element.metadata[b"PARQUET:field_id"] == str(nested_id).encode()


def test_the_native_write_of_a_uniform_table_writes_int64_timestamps(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, dt.datetime(2024, 1, 2, 3, 4, 5))], "id long, ts timestamp")
    write_table(df, path, native=True, **UNIFORM)
    snap = DeltaLog.for_table(path).update()
    (add,) = snap.files
    assert add.num_records() == 1
    parquet = pq.ParquetFile(f"{path}/{add.path}")
    assert [parquet.schema.column(i).physical_type for i in range(2)] == ["INT64", "INT64"]


def test_spark_option_names_of_uniform_properties_keep_their_case() -> None:
    """Spark lower-cases option names; the table properties go back to Delta's spelling."""
    assert normalize_property_key("delta.enableicebergcompatv2") == "delta.enableIcebergCompatV2"
    assert normalize_property_key("delta.enableicebergcompatv3") == "delta.enableIcebergCompatV3"
    assert normalize_property_key("delta.universalformat.enabledformats") == "delta.universalFormat.enabledFormats"
    # feature keys are lower-cased, as Delta's validateConfigurations; names match in any case
    assert normalize_property_key("delta.feature.materializePartitionColumns") == (
        "delta.feature.materializepartitioncolumns"
    )


V3 = {"delta.enableIcebergCompatV3": "true", "delta.universalFormat.enabledFormats": "iceberg"}


def _row_tracking_ids(path: str) -> dict[str, set[tuple[str, bytes | None]]]:
    """Per data file: the materialized row tracking columns it holds, with their field ids."""
    config = DeltaLog.for_table(path).update().metadata.configuration
    names = {
        config["delta.rowTracking.materializedRowIdColumnName"],
        config["delta.rowTracking.materializedRowCommitVersionColumnName"],
    }
    out = {}
    for add in DeltaLog.for_table(path).update().files:
        schema = pq.read_schema(f"{path}/{add.path}")
        out[add.path] = {(f.name, (f.metadata or {}).get(b"PARQUET:field_id")) for f in schema if f.name in names}
    return out


def test_a_v3_table_gives_the_materialized_row_tracking_columns_icebergs_field_ids(spark: Any, tmp_path: Path) -> None:
    """IcebergCompatV3: files that hold the materialized row id / row commit version columns
    (rows an UPDATE rewrites, natively or in the Python tasks, and OPTIMIZE's) give them the
    Parquet field ids 2147483540 / 2147483539; stable row ids survive every rewrite."""
    from deltalog.contrib.spark.native_write import NATIVE_WRITE

    path = str(tmp_path / "t")
    df = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, v string")
    write_table(df, path, native=True, **V3)
    snap = DeltaLog.for_table(path).update()
    assert {"icebergCompatV3", "rowTracking", "columnMapping"} <= set(snap.protocol.writer_features or ())
    ids_before = {r["id"]: r["_metadata"]["row_id"] for r in read_table(spark, path, readRowTracking="true").collect()}
    table = DeltaTable.forPath(spark, path)
    table.update("id = 1", {"v": "'x'"})  # the native write
    spark.conf.set(NATIVE_WRITE, "false")
    try:
        table.update("id = 2", {"v": "'y'"})  # the Python write tasks
    finally:
        spark.conf.unset(NATIVE_WRITE)
    rewritten = {p: cols for p, cols in _row_tracking_ids(path).items() if cols}
    assert len(rewritten) == 2
    table.optimize().executeCompaction()
    (compacted,) = _row_tracking_ids(path).values()
    for columns in [*rewritten.values(), compacted]:
        assert sorted(fid for _, fid in columns) == [b"2147483539", b"2147483540"]
    rows = read_table(spark, path, readRowTracking="true").collect()
    assert {r["id"]: r["_metadata"]["row_id"] for r in rows} == ids_before
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "x"), (2, "y"), (3, "c")]
