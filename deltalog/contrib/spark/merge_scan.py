"""The target rows a MERGE reads, scanned by Spark's own Parquet reader where it can.

Each pass of a MERGE reads target files: pass 1 the candidate files (only the columns the
merge condition and the clause conditions use, by Spark's column pruning), pass 2 just the
touched ones. :func:`scan_target` gives their live rows with ``FILE_COLUMN`` and
``ROW_INDEX_COLUMN`` (the row's position in its Parquet file, what a deletion vector
counts) through :func:`~deltalog.contrib.spark.native.scan_with_positions`; the file
column then holds the file as Spark names it, and :class:`TargetRows` maps it back to
the path in the log. When the native path cannot read the table (or there is no file to
read) the rows come from the Python reader
(:func:`~deltalog.contrib.spark.dataframes.files_dataframe`), which names files as the log does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.contrib.spark.dataframes import FILE_COLUMN, ROW_INDEX_COLUMN, files_dataframe
from deltalog.contrib.spark.errors import NativeReadUnsupportedError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import AddFile

__all__ = ["TargetRows", "scan_target"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TargetRows:
    """The rows of some target files and how their ``FILE_COLUMN`` values name the files."""

    rows: DataFrame
    #: a ``FILE_COLUMN`` value -> the file's path as in the log
    paths: Mapping[str, str]

    def log_path(self, name: str) -> str:
        """The log's path of the file the rows name ``name``."""
        try:
            return self.paths[name]
        except KeyError:  # Spark named a file otherwise than we do: never guess
            raise AssertionError(f"the target scan returned an unknown file {name!r}") from None


def scan_target(
    spark: SparkSession, delta_log: DeltaLog, snapshot: Snapshot, files: Sequence[AddFile], positions: bool = True
) -> TargetRows:
    """The live rows of ``files`` (of ``snapshot``), with ``FILE_COLUMN`` and
    ``ROW_INDEX_COLUMN``; on a table that tracks rows, also its materialized row tracking
    columns (as the files hold them from Spark's scan, null where not materialized; stable
    values from the Python reader: :func:`~deltalog.contrib.spark.row_tracking.stable_row_tracking`
    gives both the stable values). Without ``positions`` Spark's scan gives the table's
    columns only (no file, row index or row tracking columns; the Python reader's rows
    still have them), and the rows name no file."""
    from deltalog.contrib.spark.native import scan_paths, scan_with_positions
    from deltalog.contrib.spark.native_dv import FILE_KEY, ROW_KEY
    from deltalog.contrib.spark.row_tracking import tracked_columns

    hidden = tracked_columns(snapshot) or ()
    if files:
        try:
            if not positions:
                return TargetRows(scan_paths(spark, delta_log, snapshot, [f.path for f in files]), {})
            native, paths = scan_with_positions(spark, delta_log, snapshot, [f.path for f in files], hidden)
        except NativeReadUnsupportedError as exc:
            log.info("MERGE reads the target with the Python reader: %s", exc)
        else:
            rows = native.withColumnRenamed(FILE_KEY, FILE_COLUMN).withColumnRenamed(ROW_KEY, ROW_INDEX_COLUMN)
            return TargetRows(rows, paths)
    rows = files_dataframe(spark, delta_log, snapshot, files, row_tracking=bool(hidden))
    return TargetRows(rows, {f.path: f.path for f in files})
