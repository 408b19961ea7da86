"""The DELETE half of a ``replaceWhere`` on data columns, run when the write commits, in
its transaction (Delta's ``WriteIntoDelta`` deletes the predicate's rows in the write's own
transaction): the files of the read snapshot that the predicate's partition terms select
are read (and recorded as read, so the conflict checker sees them); each file holding rows
that match is removed and its other rows are written again. The predicate itself and the
check the write tasks run on their rows are in :mod:`~deltalog.contrib.spark.replace_where`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.contrib.spark.data_skipping import data_skipped_files
from deltalog.contrib.spark.files import CDC_TYPE_COLUMN, WriteSpec, delete_files, write_batches
from deltalog.contrib.spark.logical_schema import arrow_schema, logical_struct
from deltalog.contrib.spark.reads import DML_ROW_TRACKING_COLUMN, ROW_TRACKING_TYPE, FileToRead, ReadSpec, read_file
from deltalog.contrib.spark.replace_where import compiled_predicate, files_in_partition_groups, partition_filter_groups
from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import AddFile

if TYPE_CHECKING:
    from deltalog.txn.commit.transaction import OptimisticTransaction

__all__ = ["rewrite_matching", "rewrite_outside"]


def rewrite_outside(
    txn: OptimisticTransaction, predicate: str, spec: WriteSpec
) -> tuple[list[AddFile], list[str], dict[str, str]]:
    """The DELETE half: read the files of the transaction's snapshot the predicate's
    partition terms select (:func:`partition_filter_groups`) less those whose statistics rule it
    out (the files kept are recorded as read, as Delta's ``filterFiles``), remove those
    holding rows that match ``predicate`` and write their other rows again
    (:func:`rewrite_matching`)."""
    metadata = txn.metadata
    snapshot = txn.snapshot
    zone = spec.session_time_zone
    files = files_in_partition_groups(
        txn,
        partition_filter_groups(predicate, metadata) if metadata is not None else [[]],
        data_skipping=lambda candidates: data_skipped_files(snapshot, candidates, predicate, time_zone=zone),
    )
    compiled = compiled_predicate(predicate, zone)
    return rewrite_matching(txn, files, compiled.evaluate, spec)


def rewrite_matching(
    txn: OptimisticTransaction,
    files: Sequence[AddFile],
    matches: Callable[[pa.Table], pa.Array | pa.ChunkedArray],
    spec: WriteSpec,
) -> tuple[list[AddFile], list[str], dict[str, str]]:
    """Remove the ``files`` (of the transaction's snapshot) holding rows ``matches`` selects
    and write their other rows again. Returns the removed files, the action lines of the
    rewritten files (and, when the table records the change data feed, of the change data of
    the removed rows, as ``delete``) and the metrics."""
    if not files:
        return [], [], {"numDeletedRows": "0", "numCopiedRows": "0"}
    snapshot = txn.snapshot
    output_schema = arrow_schema(logical_struct(snapshot.metadata.schema_string))
    tracked = row_tracking.materialized_columns(snapshot.protocol, snapshot.metadata)
    if tracked is not None:  # the copied rows keep their stable row ids (as DELETE's do)
        output_schema = output_schema.append(pa.field(DML_ROW_TRACKING_COLUMN, ROW_TRACKING_TYPE))
        txn.mark_row_tracking_materialized()
    read_spec = ReadSpec.for_snapshot(
        txn.delta_log,
        snapshot,
        output_schema,
        row_tracking_columns=tracked,
        row_tracking_output=DML_ROW_TRACKING_COLUMN,
    )
    rewrite_spec = replace(spec, replace_where=None, insert_change_data=False)
    removed: list[AddFile] = []
    lines: list[str] = []
    deleted = copied = 0
    try:
        for f in files:
            dv = None if f.deletion_vector is None else f.deletion_vector.to_dict()
            item = FileToRead(
                f.path,
                f.partition_values,
                f.size,
                dv,
                base_row_id=f.base_row_id,
                default_row_commit_version=f.default_row_commit_version,
            )
            table = _materialized(read_file(read_spec, txn.delta_log.store, item), tracked)
            matched = pc.fill_null(matches(table), False)
            hits = int(pc.sum(matched.cast("int64")).as_py() or 0)
            if hits == 0:
                continue
            removed.append(f)
            kept = table.filter(pc.invert(matched))
            deleted += hits
            copied += kept.num_rows
            if kept.num_rows:
                lines.extend(write_batches(rewrite_spec, [kept], 0))
            if spec.change_data:  # the replaced rows, as DELETE records them
                gone = table.filter(matched)
                gone = gone.append_column(CDC_TYPE_COLUMN, pa.array(["delete"] * gone.num_rows))
                lines.extend(write_batches(rewrite_spec, [gone], 0))
    except BaseException:
        delete_files(rewrite_spec, lines)
        raise
    return removed, lines, {"numDeletedRows": str(deleted), "numCopiedRows": str(copied)}


def _materialized(table: pa.Table, tracked: tuple[str, str] | None) -> pa.Table:
    """``table`` with its row ids (:data:`DML_ROW_TRACKING_COLUMN`) in the materialized columns ``tracked``."""
    if tracked is None:
        return table
    ids = table.column(DML_ROW_TRACKING_COLUMN).combine_chunks()
    table = table.drop_columns([DML_ROW_TRACKING_COLUMN])
    table = table.append_column(tracked[0], ids.field("row_id"))
    return table.append_column(tracked[1], ids.field("row_commit_version"))
