"""Deletion vectors on the native read path: the deleted rows as a small DataFrame.

The driver reads each file's deletion vector (:func:`~deltalog.txn.log.deletion_vectors.read_deletion_vector`)
and hands Spark one ``(file, row index)`` row per deleted row. The native scan reads
Spark's ``_metadata.file_path`` and ``_metadata.row_index`` (the row's position in its
Parquet file, which is what a deletion vector counts) and drops the deleted rows with a
broadcast left-anti join, so no Python runs in the tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from deltalog.txn.log.deletion_vectors import read_deletion_vector
from deltalog.txn.protocol.actions import DeletionVectorDescriptor

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.logstores.base import LogStore

__all__ = ["FILE_KEY", "ROW_KEY", "deleted_rows", "drop_deleted_rows"]

#: The join keys the native scan adds from Spark's hidden ``_metadata`` column.
FILE_KEY = "__deltalog_file"
ROW_KEY = "__deltalog_row"


def deleted_rows(store: LogStore, table_uri: str, files: Sequence[tuple[str, DeletionVectorDescriptor]]) -> pa.Table:
    """``(FILE_KEY, ROW_KEY)`` for every row deleted by the deletion vectors of ``files``
    (``(file URI as Spark names it, descriptor)``)."""
    uris: list[pa.Array] = []
    rows: list[pa.Array] = []
    for uri, dv in files:
        deleted = read_deletion_vector(store, table_uri, dv).cast(pa.int64())
        rows.append(deleted)
        uris.append(pa.array([uri] * len(deleted), pa.string()))
    return pa.table({FILE_KEY: pa.chunked_array(uris, pa.string()), ROW_KEY: pa.chunked_array(rows, pa.int64())})


def drop_deleted_rows(spark: SparkSession, df: DataFrame, deleted: pa.Table) -> DataFrame:
    """``df`` (with ``FILE_KEY`` and ``ROW_KEY`` columns) without the ``deleted`` rows."""
    from pyspark.sql import functions as F

    deleted_df: Any = spark.createDataFrame(deleted.combine_chunks())
    return df.join(F.broadcast(deleted_df), on=[FILE_KEY, ROW_KEY], how="left_anti")
