"""DataFrames over chosen files of a table, and writing a DataFrame's rows as new files.

The table API (delete, update, merge, optimize) runs in the user's driver process, so it
keeps the transaction there and uses Spark only to move rows: :func:`files_dataframe`
reads exactly the files it is given (each row tagged with its file and row index), and
:func:`write_dataframe` writes rows as files (with Spark's own Parquet writer where it
can, else Python tasks on the executors) and brings back their actions, which the driver
commits together with the removes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.contrib.spark.files import WriteSpec, delete_files, write_batches
from deltalog.contrib.spark.logical_schema import arrow_schema, logical_struct
from deltalog.contrib.spark.reads import FileToRead, ReadSpec, read_file
from deltalog.logstores.base import LogStore
from deltalog.txn.protocol.actions import AddFile

if TYPE_CHECKING:
    from pyspark.accumulators import Accumulator
    from pyspark.sql import DataFrame, Row, SparkSession
    from pyspark.sql.types import StructType

    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = [
    "FILE_COLUMN",
    "ROW_INDEX_COLUMN",
    "WriteTask",
    "files_dataframe",
    "nullable_type",
    "run_write_job",
    "write_dataframe",
]

log = logging.getLogger(__name__)

FILE_COLUMN = "__deltalog_file"
ROW_INDEX_COLUMN = "__deltalog_row_index"


def nullable_type(data_type: Any) -> Any:
    """``data_type`` with every nested field nullable: what the rows to be written are cast
    to (Spark cannot cast to a NOT NULL field; the write tasks check NOT NULL columns)."""
    from pyspark.sql.types import _parse_datatype_json_value

    from deltalog.txn.protocol.schema import as_nullable, data_type_from_json

    value = data_type.jsonValue()
    if not isinstance(value, dict):  # a primitive type
        return data_type
    return _parse_datatype_json_value(as_nullable(data_type_from_json(value)).to_json_value())


def files_dataframe(
    spark: SparkSession,
    delta_log: SnapshotManagement,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    with_file: bool = True,
    row_tracking: bool = False,
) -> DataFrame:
    """The rows of ``files`` (deletion vectors applied), with file and row-index columns;
    with ``row_tracking`` on a table that tracks rows, also each row's stable row id and
    row commit version in the table's materialized columns (see
    :mod:`~deltalog.contrib.spark.row_tracking`)."""
    from pyspark.sql.types import LongType, StringType, StructField

    from deltalog.contrib.spark.reads import DML_ROW_TRACKING_COLUMN, ROW_TRACKING_TYPE, row_tracking_struct
    from deltalog.contrib.spark.row_tracking import tracked_columns

    schema = logical_struct(snapshot.metadata.schema_string)
    tracked = tracked_columns(snapshot) if row_tracking else None
    read_schema = arrow_schema(schema)
    out_schema = schema
    if tracked is not None:
        read_schema = read_schema.append(pa.field(DML_ROW_TRACKING_COLUMN, ROW_TRACKING_TYPE))
        out_schema = StructType_add(schema, [StructField(DML_ROW_TRACKING_COLUMN, row_tracking_struct(), True)])
    spec = ReadSpec.for_snapshot(
        delta_log, snapshot, read_schema, row_tracking_columns=tracked, row_tracking_output=DML_ROW_TRACKING_COLUMN
    )
    if with_file:
        out_schema = StructType_add(
            out_schema,
            [StructField(FILE_COLUMN, StringType(), False), StructField(ROW_INDEX_COLUMN, LongType(), False)],
        )
    seed = _file_items(spark, files)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store = spec.store.build()
        for batch in batches:
            for raw in batch.column(0).to_pylist():
                item = _file_to_read(raw)
                table = _read_with_positions(spec, store, item) if with_file else read_file(spec, store, item)
                yield from table.to_batches(max_chunksize=65536)

    rows = seed.mapInArrow(run, out_schema)
    return rows if tracked is None else _in_materialized_columns(rows, tracked)


def _file_items(spark: SparkSession, files: Sequence[AddFile]) -> DataFrame:
    """One row per file (JSON text of what a task needs to read it), spread over tasks."""
    items = [
        json.dumps(
            {
                "path": f.path,
                "pv": f.partition_values,
                "size": f.size,
                "dv": None if f.deletion_vector is None else f.deletion_vector.to_dict(),
                "ids": [f.base_row_id, f.default_row_commit_version],
            }
        )
        for f in files
    ]
    parallelism = max(1, min(len(items), spark.sparkContext.defaultParallelism * 2))
    seed = spark.createDataFrame([(i,) for i in items] or [("",)], "item string")
    if not items:
        seed = seed.limit(0)
    return seed.repartition(parallelism)


def _file_to_read(raw: str) -> FileToRead:
    d = json.loads(raw)
    return FileToRead(
        d["path"], d["pv"], d["size"], d["dv"], base_row_id=d["ids"][0], default_row_commit_version=d["ids"][1]
    )


def _in_materialized_columns(rows: DataFrame, tracked: tuple[str, str]) -> DataFrame:
    """``rows`` with their row ids (:data:`~deltalog.contrib.spark.reads.DML_ROW_TRACKING_COLUMN`)
    in the materialized columns ``tracked``."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.reads import DML_ROW_TRACKING_COLUMN

    ids = F.col(DML_ROW_TRACKING_COLUMN)
    return (
        rows.withColumn(tracked[0], ids.getField("row_id"))
        .withColumn(tracked[1], ids.getField("row_commit_version"))
        .drop(DML_ROW_TRACKING_COLUMN)
    )


def StructType_add(schema: StructType, fields: Sequence[Any]) -> StructType:
    from pyspark.sql.types import StructType

    return StructType(list(schema.fields) + list(fields))


def _read_with_positions(spec: ReadSpec, store: LogStore, item: FileToRead) -> pa.Table:
    """The file's live rows plus their file path and original row index."""
    import pyarrow.compute as pc

    from deltalog.txn.log.deletion_vectors import keep_mask, read_deletion_vector
    from deltalog.txn.protocol.actions import DeletionVectorDescriptor

    plain = replace(item, deletion_vector=None)
    table = read_file(spec, store, plain)
    positions = pa.array(range(table.num_rows), pa.int64())
    if item.deletion_vector:
        descriptor = DeletionVectorDescriptor.from_dict(dict(item.deletion_vector))
        mask = keep_mask(table.num_rows, read_deletion_vector(store, spec.table_uri, descriptor))
        table = table.filter(mask)
        positions = pc.filter(positions, mask)
    table = table.append_column(FILE_COLUMN, pa.array([item.path] * table.num_rows, pa.string()))
    return table.append_column(ROW_INDEX_COLUMN, positions)


class _Lines:
    """Accumulates the action lines of the tasks that finished (``AccumulatorParam``)."""

    def zero(self, value: list[str]) -> list[str]:
        return []

    def addInPlace(self, value1: list[str], value2: list[str]) -> list[str]:
        value1.extend(value2)
        return value1


#: A write task: ``(its input batches, its partition id)`` -> ``(the action lines of the
#: files it wrote, the batch it hands back to the driver)``.
WriteTask = Callable[[Iterator[pa.RecordBatch], int], tuple[list[str], pa.RecordBatch]]


def run_write_job(df: DataFrame, spec: WriteSpec, task: WriteTask, output: str) -> list[Row]:
    """Run ``task`` over each partition of ``df`` in one Spark job; the rows of the batches
    the tasks hand back (``output``: their DDL schema), collected.

    When the job fails, the files of its tasks are deleted (a failed task deletes its own;
    the ones that finished report theirs through an accumulator) and the error propagates."""
    finished: Accumulator[list[str]] = df.sparkSession.sparkContext.accumulator([], _Lines())  # type: ignore[arg-type]
    names = df.columns
    # PySpark's mapInArrow selects each column by df[name], which reads a dot as a field of
    # a struct: the job sees positional names and the tasks get the real ones back
    positional = any("." in n for n in names)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        if positional:
            batches = (pa.RecordBatch.from_arrays(b.columns, names=names) for b in batches)
        ctx = TaskContext.get()
        lines, out = task(batches, ctx.partitionId() if ctx is not None else 0)
        finished.add(lines)
        yield out

    try:
        source = df.toDF(*(f"_{i}" for i in range(len(names)))) if positional else df
        return source.mapInArrow(run, output).collect()
    except Exception as exc:
        from deltalog.contrib.spark.constraints import raise_task_violation

        delete_files(spec, list(finished.value))
        raise_task_violation(exc)  # a task's constraint check failed: a typed error
        raise


def write_dataframe(df: DataFrame, spec: WriteSpec, native: bool | None = None) -> list[str]:
    """Write ``df``'s rows as files of the table; the add/cdc action lines, collected
    (a failed job leaves no file: :func:`run_write_job`). Spark's own Parquet writer
    writes them where it can (:mod:`~deltalog.contrib.spark.native_write`), Python tasks
    otherwise; ``native`` True or False forces one (True raises
    :class:`~deltalog.contrib.spark.errors.NativeWriteUnsupportedError` where it cannot)."""
    from deltalog.contrib.spark.errors import NativeWriteUnsupportedError
    from deltalog.contrib.spark.native_write import native_write_blocker, write_native

    if spec.optimize_write:  # Delta's DeltaOptimizedWriterExec: balanced tasks, by partition
        df = df.hint("rebalance", *spec.partition_columns)
    blocked = "native=False" if native is False else native_write_blocker(df.sparkSession, spec, df.columns)
    if blocked is None:
        return write_native(df, spec)
    if native:
        raise NativeWriteUnsupportedError(f"cannot write natively to {spec.table_uri}: {blocked}")
    log.info("writing with Python tasks: %s", blocked)

    def task(batches: Iterator[pa.RecordBatch], task_id: int) -> tuple[list[str], pa.RecordBatch]:
        lines = write_batches(spec, batches, task_id)
        return lines, pa.RecordBatch.from_pydict({"action": lines}, schema=pa.schema([("action", pa.string())]))

    return [r["action"] for r in run_write_job(df, spec, task, "action string")]
