"""INT96 timestamps (Spark's ``outputTimestampType`` default for years) read right wherever
deltalog reads data files: CONVERT's schema, Spark reads, OPTIMIZE and DML rewrites.

pyarrow reads INT96 as ``timestamp[ns]`` by default, which overflows outside 1677-2262:
9999-12-31 came back as 1816-03-30.
"""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.spark

LATEST = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
EARLIEST = dt.datetime(1, 1, 1)
MIDDLE = dt.datetime(2026, 11, 24, 12, 30)
EPOCH = dt.datetime(1970, 1, 1)


def _micros(t: dt.datetime) -> int:
    return (t - EPOCH) // dt.timedelta(microseconds=1)


def _write_int96(path: str, ids: list[int], stamps: list[dt.datetime | None]) -> None:
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array(stamps, pa.timestamp("us")),
            "s": pa.array([{"t": t} for t in stamps], pa.struct([("t", pa.timestamp("us"))])),
        }
    )
    pq.write_table(table, path, use_deprecated_int96_timestamps=True)
    kinds = {pq.ParquetFile(path).metadata.schema.column(i).physical_type for i in (1, 2)}
    assert kinds == {"INT96"}


def _values(spark, uri: str) -> list[tuple[int, int | None, int | None]]:
    df = spark.read.format("deltalog").load(uri)
    df.createOrReplaceTempView("int96_t")
    rows = spark.sql("SELECT id, unix_micros(ts) AS ts, unix_micros(s.t) AS st FROM int96_t ORDER BY id").collect()
    return [(r["id"], r["ts"], r["st"]) for r in rows]


def test_int96_convert_read_delete_and_optimize(spark, table_path):
    from deltalog.contrib.spark import DeltaTable
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.protocol.schema import PrimitiveType

    os.makedirs(table_path)
    _write_int96(f"{table_path}/part-0.parquet", [1, 2], [LATEST, None])
    _write_int96(f"{table_path}/part-1.parquet", [3, 4], [EARLIEST, MIDDLE])
    expected = [
        (1, _micros(LATEST), _micros(LATEST)),
        (2, None, None),
        (3, _micros(EARLIEST), _micros(EARLIEST)),
        (4, _micros(MIDDLE), _micros(MIDDLE)),
    ]

    # CONVERT: INT96 is Spark's TimestampType (with time zone), never timestamp_ntz
    table = DeltaTable.convertToDelta(spark, f"parquet.`{table_path}`")
    fields = {f.name: f for f in DeltaLog.for_table(table_path).snapshot().schema.fields}
    assert fields["ts"].type == PrimitiveType("timestamp")
    assert fields["s"].type.fields[0].type == PrimitiveType("timestamp")
    assert _values(spark, table_path) == expected

    # a DML rewrite of an INT96 file copies its other rows unchanged, and OPTIMIZE rewrites
    # that file and the other INT96 one as one file of microseconds (checked in the file)
    table.delete("id = 2")
    del expected[1]
    table.optimize().executeCompaction()
    snapshot = DeltaLog.for_table(table_path).snapshot()
    assert len(snapshot.files) == 1
    compacted = pq.read_table(f"{table_path}/{snapshot.files[0].path}").sort_by("id")
    assert compacted.column("ts").type == pa.timestamp("us", tz="UTC")
    assert compacted.column("id").to_pylist() == [e[0] for e in expected]
    assert compacted.column("ts").cast(pa.int64()).to_pylist() == [e[1] for e in expected]
    nested = pa.array(compacted.column("s").combine_chunks().field("t"))
    assert nested.cast(pa.int64()).to_pylist() == [e[2] for e in expected]
