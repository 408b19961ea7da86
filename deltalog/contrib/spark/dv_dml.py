"""DML with deletion vectors (merge-on-read) for the Spark ``DeltaTable`` API.

Delta's ``DMLWithDeletionVectorsHelper``: when the table can take deletion vectors
(:func:`writes_deletion_vectors`: the ``deletionVectors`` feature in the protocol and
``delta.enableDeletionVectors=true``, and Delta's session switch
``spark.databricks.delta.<delete|update|merge>.deletionVectors.persistent`` not ``false``),
DELETE, UPDATE and MERGE do not rewrite the files holding matched rows. DELETE and UPDATE
find the matched rows with one job over the candidate files: Spark's own Parquet scan
(:func:`~deltalog.contrib.spark.native.scan_with_positions`, existing DVs applied) returns
each matched row's position in its Parquet file (Spark's row index), what the deletion vector counts
(the Python reader's positions when the native path cannot read the table); MERGE takes
the positions of the target rows its clauses act on from its own join;
the driver merges them with the files' existing deletion vectors and commits Delta's
``remove``/``add`` pairs (:func:`~deltalog.txn.log.deletion_vector_writer.mark_rows_deleted`).
UPDATE and MERGE also write the new versions of the changed rows, and only those, as new
files. With the change data feed on, DELETE writes no change files: readers derive the
deleted rows from the deletion vectors, as Delta's do.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from deltalog.contrib.spark.dataframes import FILE_COLUMN, ROW_INDEX_COLUMN, files_dataframe
from deltalog.contrib.spark.files import file_actions
from deltalog.contrib.spark.writes import commit_files
from deltalog.txn.commit.commit_errors import commit_certainly_failed
from deltalog.txn.log.deletion_vector_writer import (
    DEFAULT_PACKING_TARGET_SIZE,
    DeletionVectorCommit,
    mark_rows_deleted,
)
from deltalog.txn.protocol.actions import Action, AddFile
from deltalog.txn.protocol.features import protocol_features

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from deltalog.contrib.spark.files import WriteSpec
    from deltalog.txn.commit.operations import Operation
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "PositionScan",
    "RowMarks",
    "commit_with_deletion_vectors",
    "dml_metrics",
    "dv_packing_target_size",
    "mark_deleted_rows",
    "matched_row_indexes",
    "target_rows",
    "writes_deletion_vectors",
]

log = logging.getLogger(__name__)

#: Row positions per file path: the rows a command deletes or replaces.
RowMarks = dict[str, np.ndarray]

#: Delta's internal ``DELETION_VECTOR_PACKING_TARGET_SIZE``: the bytes of DVs one DV file takes.
PACKING_TARGET_SIZE_CONF = "spark.databricks.delta.deletionVectors.packing.targetSize"
_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
#: Delta's bound on the conf: a DV's offset is an int32, so a DV file stays well below 2 GiB.
_MAX_PACKING_TARGET_SIZE = 3 * 1024 * 1024 * 1024 // 2


def writes_deletion_vectors(spark: SparkSession, snapshot: Snapshot, command: str) -> bool:
    """Whether ``command`` (``delete``, ``update``, ``merge``) marks rows in deletion
    vectors on this table (Delta's ``DeletionVectorUtils.deletionVectorsWritable`` and the
    command's ``deletionVectors.persistent`` switch)."""
    _, writer = protocol_features(snapshot.protocol)
    if "deletionVectors" not in writer or not snapshot.properties.enable_deletion_vectors:
        return False
    switch = spark.conf.get(f"spark.databricks.delta.{command}.deletionVectors.persistent", "true")
    return str(switch).strip().lower() != "false"


#: ``(spark, delta_log, snapshot, paths) -> (rows with FILE_KEY/ROW_KEY, {FILE_KEY: path})``:
#: :func:`deltalog.contrib.spark.native.scan_with_positions` (passed in by the caller, so this
#: module does not import the native read path).
PositionScan = Callable[[Any, Any, Any, Sequence[str]], "tuple[DataFrame, dict[str, str]]"]


def matched_row_indexes(
    spark: SparkSession,
    delta_log: DeltaLog,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    cond: Column,
    scan: PositionScan | None = None,
    alias: str | None = None,
) -> RowMarks:
    """One job over ``files``: the Parquet row positions of the live rows where ``cond`` is
    true, per file path as in the log (files without such a row are absent). ``scan``
    (Spark's Parquet scan with each row's position) where it can read the table, else
    the Python reader (:func:`~deltalog.contrib.spark.dataframes.files_dataframe`); the
    rows are named ``alias`` (the table's, which ``cond`` may use)."""
    from pyspark.sql import functions as F

    from deltalog.contrib.spark.errors import NativeReadUnsupportedError
    from deltalog.contrib.spark.native_dv import FILE_KEY, ROW_KEY

    if not files:
        return {}
    matches = F.coalesce(cond, F.lit(False))
    try:
        if scan is None:
            raise NativeReadUnsupportedError("no native scan given")
        native, paths = scan(spark, delta_log, snapshot, [f.path for f in files])
    except NativeReadUnsupportedError as exc:
        log.info("finding the matched rows with the Python reader: %s", exc)
    else:
        found = (native.alias(alias) if alias else native).filter(matches).select(FILE_KEY, ROW_KEY).toArrow()
        uris = found.column(FILE_KEY).to_pylist()
        try:
            logged = pa.array([paths[u] for u in uris], pa.string())
        except KeyError as exc:  # Spark named a file otherwise than we do: never guess
            raise AssertionError(f"the native scan returned an unknown file {exc}") from None
        return group_rows(pa.table({FILE_COLUMN: logged, ROW_INDEX_COLUMN: found.column(ROW_KEY)}))
    df = files_dataframe(spark, delta_log, snapshot, files)
    hits = (df.alias(alias) if alias else df).filter(matches).select(FILE_COLUMN, ROW_INDEX_COLUMN).toArrow()
    return group_rows(hits)


def target_rows(rows: DataFrame, target_alias: str) -> RowMarks:
    """The file and row positions of the target rows in ``rows`` (a MERGE's joined rows
    that a clause updates or deletes), per file path."""
    from pyspark.sql import functions as F

    hits = rows.select(
        F.col(f"{target_alias}.{FILE_COLUMN}").alias(FILE_COLUMN),
        F.col(f"{target_alias}.{ROW_INDEX_COLUMN}").alias(ROW_INDEX_COLUMN),
    ).toArrow()
    return group_rows(hits)


def group_rows(hits: pa.Table) -> RowMarks:
    """``(FILE_COLUMN, ROW_INDEX_COLUMN)`` rows as sorted row positions per file."""
    if not hits.num_rows:
        return {}
    grouped = hits.group_by(FILE_COLUMN).aggregate([(ROW_INDEX_COLUMN, "list")])
    paths = grouped.column(FILE_COLUMN).to_pylist()
    lists = grouped.column(f"{ROW_INDEX_COLUMN}_list")
    return {
        path: np.sort(np.asarray(lists[i].values.to_numpy(zero_copy_only=False), dtype=np.int64))
        for i, path in enumerate(paths)
    }


def dv_packing_target_size(spark: SparkSession) -> int:
    """The session's ``spark.databricks.delta.deletionVectors.packing.targetSize`` (bytes, with
    Spark's byte-string units: ``200``, ``64k``, ``2mb``), 2 MiB by default; a value Delta's
    conf refuses (not a size, negative, 1.5 GiB or more) raises :class:`DeltaAnalysisError`."""
    import re

    from deltalog.contrib.spark.errors import DeltaAnalysisError

    raw = spark.conf.get(PACKING_TARGET_SIZE_CONF, None)
    if raw is None or not str(raw).strip():
        return DEFAULT_PACKING_TARGET_SIZE
    found = re.fullmatch(r"(-?\d+)\s*([bkmgtp]?)b?", str(raw).strip().lower())
    if found is None:
        raise DeltaAnalysisError(f"{PACKING_TARGET_SIZE_CONF} must be a size in bytes (e.g. 2mb), got {raw!r}")
    value = int(found.group(1)) * _BYTE_UNITS[found.group(2)]
    if not 0 <= value < _MAX_PACKING_TARGET_SIZE:
        raise DeltaAnalysisError(f"{PACKING_TARGET_SIZE_CONF} must be non-negative and less than 1.5GB, got {raw!r}")
    return value


def mark_deleted_rows(
    delta_log: DeltaLog,
    txn: OptimisticTransaction,
    files: Sequence[AddFile],
    marks: RowMarks,
    packing_target_size: int = DEFAULT_PACKING_TARGET_SIZE,
) -> DeletionVectorCommit:
    """The deletion-vector actions that delete ``marks`` from ``files``, their DVs packed
    into files of about ``packing_target_size`` bytes (:func:`dv_packing_target_size`)."""
    return mark_rows_deleted(
        delta_log.store,
        delta_log.table_uri,
        txn.snapshot.metadata.configuration,
        [(f, marks[f.path]) for f in files if f.path in marks],
        int(time.time() * 1000),
        packing_target_size=packing_target_size,
        metadata=txn.snapshot.metadata,
    )


def dml_metrics(
    dv: DeletionVectorCommit, lines: Sequence[str], started: float, scanned: float
) -> tuple[dict[str, str], int]:
    """Delta's file, byte, deletion-vector and timing metrics of a DML commit that marks
    rows with ``dv`` and adds the files of ``lines``; and the rows of the added data files."""
    adds, cdcs = file_actions(lines)
    done = time.perf_counter()
    metrics = {
        "numRemovedFiles": str(dv.num_removed_files),
        "numAddedFiles": str(len(adds)),
        "numAddedChangeFiles": str(len(cdcs)),
        "numRemovedBytes": str(sum(f.size for f in dv.fully_removed)),
        "numAddedBytes": str(sum(a.size for a in adds)),
        **dv.metrics(),
        "executionTimeMs": str(int((done - started) * 1000)),
        "scanTimeMs": str(int((scanned - started) * 1000)),
        "rewriteTimeMs": str(int((done - scanned) * 1000)),
    }
    return metrics, sum(a.num_records() or 0 for a in adds)


def commit_with_deletion_vectors(
    txn: OptimisticTransaction, dv: DeletionVectorCommit, lines: Sequence[str], operation: Operation, spec: WriteSpec
) -> int | None:
    """Commit the deletion-vector actions with the files written as ``lines`` (nothing when
    there is nothing to commit: :func:`~deltalog.contrib.spark.writes.commit_files`); when the
    commit certainly did not land, the new DV files are deleted with the data files."""
    adds, cdcs = file_actions(lines)
    actions: list[Action] = [*dv.actions, *adds, *cdcs]
    try:
        return commit_files(txn, actions, operation, spec, lines)
    except BaseException as exc:
        if commit_certainly_failed(exc, txn.may_have_landed):
            dv.writer.discard()
        raise
