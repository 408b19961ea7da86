"""The write tasks (:func:`~deltalog.contrib.spark.files.write_batches`): each row lands in
exactly one file, of its own partition. No Spark session: the tasks' rows are Arrow."""

from __future__ import annotations

import math
import os

import pyarrow as pa
import pyarrow.parquet as pq

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
