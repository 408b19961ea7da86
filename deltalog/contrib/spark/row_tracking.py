"""Row tracking through DELETE, UPDATE and MERGE: a rewritten row keeps its stable row id.

On a table with row tracking enabled, Delta's commands read each target row's stable row
id and row commit version and write them into the table's materialized columns
(``RowTracking.preserveRowTrackingColumns``; the names are in the table's metadata,
``delta.rowTracking.materializedRowIdColumnName`` / ``...RowCommitVersionColumnName``):

- a copied row (no clause changed it) keeps both;
- an updated row keeps its row id; its row commit version is null in the new file, so it
  reads as that file's ``defaultRowCommitVersion``, the version of the commit;
- an inserted row has neither: it reads as ``baseRowId`` + its position in its new file.

The target rows come from Spark's own Parquet scan (MERGE) or from the Python reader
(DELETE, UPDATE); both give the stable values in the materialized columns' names
(:func:`stable_row_tracking` for the first, ``files_dataframe(row_tracking=True)`` for the
second), and the write tasks write those columns into the data files as they are
(``WriteSpec.row_tracking_columns``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deltalog.txn.protocol import row_tracking

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["carried_columns", "stable_row_tracking", "tracked_columns"]

_BASE = "__deltalog_base_row_id"
_DEFAULT_VERSION = "__deltalog_default_row_commit_version"


def tracked_columns(snapshot: Snapshot) -> tuple[str, str] | None:
    """The materialized (row id, row commit version) column names DML must write on this
    table: None unless row tracking is enabled."""
    return row_tracking.materialized_columns(snapshot.protocol, snapshot.metadata)


def stable_row_tracking(
    rows: DataFrame, files: Mapping[str, AddFile], columns: tuple[str, str], file_column: str, row_column: str
) -> DataFrame:
    """``rows`` with the materialized columns ``columns`` (as read from their files: null
    where not materialized) replaced by each row's stable row id and row commit version:
    the materialized value where present, else its file's ``baseRowId`` + the row's
    position (``row_column``) and the file's ``defaultRowCommitVersion``. ``files``: each
    ``file_column`` value's add action."""
    from pyspark.sql import functions as F

    spark = rows.sparkSession
    ids = spark.createDataFrame(
        [(name, f.base_row_id, f.default_row_commit_version) for name, f in files.items()],
        f"`{file_column}` string, {_BASE} long, {_DEFAULT_VERSION} long",
    )
    row_id, commit_version = columns
    joined = rows.join(F.broadcast(ids), on=file_column, how="left")
    return (
        joined.withColumn(row_id, F.coalesce(F.col(f"`{row_id}`"), F.col(_BASE) + F.col(f"`{row_column}`")))
        .withColumn(commit_version, F.coalesce(F.col(f"`{commit_version}`"), F.col(_DEFAULT_VERSION)))
        .drop(_BASE, _DEFAULT_VERSION)
    )


def carried_columns(columns: tuple[str, str], updated: Column | None) -> list[Column]:
    """The materialized columns a rewritten row is written with: its row id as read, and
    its row commit version unless ``updated`` holds (then null: the new file's
    ``defaultRowCommitVersion`` is the commit's version)."""
    from pyspark.sql import functions as F

    row_id, commit_version = columns
    version = F.col(f"`{commit_version}`")
    if updated is not None:
        version = F.when(updated, F.lit(None).cast("long")).otherwise(version)
    return [F.col(f"`{row_id}`").alias(row_id), version.alias(commit_version)]
