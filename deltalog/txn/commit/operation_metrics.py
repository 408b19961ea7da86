"""The metric names each operation reports in ``commitInfo.operationMetrics``, as Delta's
``DeltaOperationMetrics``; and the counts the engine knows of any commit's file actions.

Each :class:`~deltalog.txn.commit.operations.Operation` declares which of these sets it
reports (``operation_metrics``); the transaction keeps only those names
(``Operation.transform_metrics``, Delta's ``transformMetrics``).
"""

from __future__ import annotations

from collections.abc import Mapping

from deltalog.txn.commit.commit_stats import CommitStats

__all__ = [
    "CLONE",
    "CONVERT",
    "DELETE",
    "DELETE_PARTITIONS",
    "MERGE",
    "OPTIMIZE",
    "OVERWRITE_REMOVES",
    "REMOVE_COLUMN_MAPPING",
    "RESTORE",
    "STREAMING_UPDATE",
    "TRUNCATE",
    "UPDATE",
    "VACUUM_END",
    "VACUUM_START",
    "WRITE",
    "WRITE_REPLACE_WHERE",
    "WRITE_REPLACE_WHERE_PARTITIONS",
    "drop_unknown_row_metrics",
    "file_metrics",
]

WRITE = frozenset({"numFiles", "numOutputBytes", "numOutputRows"})

OVERWRITE_REMOVES = frozenset({"numRemovedFiles", "numRemovedBytes"})

STREAMING_UPDATE = frozenset({"numAddedFiles", "numRemovedFiles", "numOutputRows", "numOutputBytes"})

_TIMES = frozenset({"executionTimeMs", "scanTimeMs", "rewriteTimeMs"})

_DELETION_VECTORS = frozenset({"numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated"})

DELETE = frozenset(
    {
        "numAddedFiles",
        "numRemovedFiles",
        "numAddedChangeFiles",
        "numDeletedRows",
        "numCopiedRows",
        "numRemovedBytes",
        "numAddedBytes",
        *_DELETION_VECTORS,
        *_TIMES,
    }
)

WRITE_REPLACE_WHERE = frozenset(
    {
        *WRITE,
        "numRemovedFiles",
        "numAddedChangeFiles",
        "numDeletedRows",
        "numCopiedRows",
        "numRemovedBytes",
    }
)

#: Delta declares it but uses it only in its tests (a ``Write`` with a predicate reports
#: :data:`WRITE_REPLACE_WHERE`); it is the same set.
WRITE_REPLACE_WHERE_PARTITIONS = WRITE_REPLACE_WHERE

#: Delta declares it but uses it only in its tests (every ``Delete`` reports :data:`DELETE`,
#: less the row metrics when they are unknown: :func:`drop_unknown_row_metrics`).
DELETE_PARTITIONS = DELETE

TRUNCATE = frozenset({"numRemovedFiles", "executionTimeMs"})

CONVERT = frozenset({"numConvertedFiles"})

MERGE = frozenset(
    {
        "numSourceRows",
        "numTargetRowsInserted",
        "numTargetRowsUpdated",
        "numTargetRowsMatchedUpdated",
        "numTargetRowsNotMatchedBySourceUpdated",
        "numTargetRowsDeleted",
        "numTargetRowsMatchedDeleted",
        "numTargetRowsNotMatchedBySourceDeleted",
        "numTargetRowsCopied",
        "numTargetBytesAdded",
        "numTargetBytesRemoved",
        "numOutputRows",
        "numTargetFilesAdded",
        "numTargetFilesRemoved",
        "numTargetChangeFilesAdded",
        "materializeSourceTimeMs",
        "numTargetDeletionVectorsAdded",
        "numTargetDeletionVectorsRemoved",
        "numTargetDeletionVectorsUpdated",
        *_TIMES,
    }
)

UPDATE = frozenset(
    {
        "numAddedFiles",
        "numRemovedFiles",
        "numAddedChangeFiles",
        "numUpdatedRows",
        "numCopiedRows",
        "numRemovedBytes",
        "numAddedBytes",
        *_DELETION_VECTORS,
        *_TIMES,
    }
)

OPTIMIZE = frozenset(
    {
        "numAddedFiles",
        "numRemovedFiles",
        "numAddedBytes",
        "numRemovedBytes",
        "minFileSize",
        "p25FileSize",
        "p50FileSize",
        "p75FileSize",
        "maxFileSize",
        "numDeletionVectorsRemoved",
    }
)

#: Delta's ``REMOVE_COLUMN_MAPPING``
REMOVE_COLUMN_MAPPING = frozenset(
    {"numRewrittenFiles", "numOutputBytes", "numRemovedBytes", "numCopiedRows", "numDeletionVectorsRemoved"}
)

RESTORE = frozenset(
    {
        "tableSizeAfterRestore",
        "numOfFilesAfterRestore",
        "numRemovedFiles",
        "numRestoredFiles",
        "removedFilesSize",
        "restoredFilesSize",
    }
)

CLONE = frozenset(
    {
        "sourceTableSize",
        "sourceNumOfFiles",
        "numRemovedFiles",
        "numCopiedFiles",
        "removedFilesSize",
        "copiedFilesSize",
    }
)

VACUUM_START = frozenset({"numFilesToDelete", "sizeOfDataToDelete"})

VACUUM_END = frozenset({"numDeletedFiles", "numVacuumedDirectories"})


def file_metrics(stats: CommitStats) -> dict[str, str]:
    """The counts the engine knows of a commit's file actions, under every name Delta gives
    them (``numFiles`` and ``numAddedFiles`` both count the added files); an operation keeps
    those it declares. ``numOutputRows`` only when every added file has a row count."""
    metrics = {
        "numFiles": str(stats.num_adds),
        "numAddedFiles": str(stats.num_adds),
        "numOutputBytes": str(stats.bytes_added),
        "numAddedBytes": str(stats.bytes_added),
        "numRemovedFiles": str(stats.num_removes),
        "numRemovedBytes": str(stats.bytes_removed),
        "numAddedChangeFiles": str(stats.num_cdc_files),
    }
    if stats.rows_added is not None:
        metrics["numOutputRows"] = str(stats.rows_added)
    return metrics


def drop_unknown_row_metrics(metrics: Mapping[str, str]) -> dict[str, str]:
    """Delta's rule for DELETE and replaceWhere: files were removed but no deleted row was
    counted (whole files removed without row counts), so the row metrics are unknown and
    ``numDeletedRows``, ``numCopiedRows`` and ``numAddedFiles`` are left out."""
    out = dict(metrics)
    if out.get("numDeletedRows", "0") == "0" and out.get("numRemovedFiles", "0") != "0":
        for name in ("numDeletedRows", "numCopiedRows", "numAddedFiles"):
            out.pop(name, None)
    return out
