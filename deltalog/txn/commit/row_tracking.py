"""Row tracking in a commit: what the transaction adds to its actions.

- :func:`assign_for_attempt`: row ids and row commit versions of one commit attempt
  (:func:`~deltalog.txn.protocol.row_tracking.assign_row_tracking` on the caller's
  actions, on top of the snapshot the attempt commits after: a retry after a winner gets
  ids above the winner's high-water mark, as Delta's ``ConflictChecker.reassignOverlappingRowIds``
  and ``reassignRowCommitVersions`` do);
- :func:`backfill`: a commit that turns ``delta.enableRowTracking`` on re-adds
  (``dataChange=false``) the files still without a ``baseRowId`` in the same commit, so every
  live file has row ids in that version (PROTOCOL "Writer Requirements for Row Tracking").
  ``SET TBLPROPERTIES`` (:mod:`deltalog.txn.commands.row_tracking_backfill`) gives them ids in
  ``ROW TRACKING BACKFILL`` batches first, as Delta does, so its property commit finds none
  left unless a writer that ignores the feature added some meanwhile;
- :func:`preserved_tag`: ``commitInfo.tags["delta.rowTracking.preserved"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from deltalog.txn.protocol import row_tracking
from deltalog.txn.protocol.actions import Action, AddFile, Metadata, Protocol, RemoveFile, decode_path

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot

__all__ = ["assign_for_attempt", "backfill", "enables_row_tracking", "preserved_tag"]


def enables_row_tracking(read: Snapshot, metadata: Metadata | None) -> bool:
    """Whether committing ``metadata`` turns row tracking on for the table ``read``."""
    if not row_tracking.enabled_property(metadata):
        return False
    return not (read.exists and row_tracking.enabled_property(read.metadata))


def backfill(read: Snapshot, actions: Sequence[Action]) -> list[AddFile]:
    """Re-adds (``dataChange=false``, no ``baseRowId``: the commit assigns one) of the live
    files of ``read`` without a ``baseRowId`` that ``actions`` neither remove nor re-add."""
    if not read.exists:
        return []
    touched = {decode_path(a.path) for a in actions if isinstance(a, (AddFile, RemoveFile))}
    return [
        replace(f, data_change=False, default_row_commit_version=None)
        for f in read.files
        if f.base_row_id is None and decode_path(f.path) not in touched
    ]


def assign_for_attempt(
    actions: Sequence[Action],
    *,
    protocol: Protocol | None,
    metadata: Metadata | None,
    snapshot: Snapshot,
    version: int,
    backfilled: Mapping[str, tuple[int, int | None]] | None = None,
) -> list[Action]:
    """``actions`` with row ids and commit versions for the attempt at ``version`` on top
    of ``snapshot`` (the read snapshot, or the latest winner's). ``backfilled``: ids a
    winner gave to files it re-added, copied into this commit's removes and re-adds of them.

    As Delta's ``reassignOverlappingRowIds`` moves the transaction's read high-water mark to
    each winner's, ids at or below ``snapshot``'s mark are kept (the caller's actions hold
    no id this transaction assigned: they are assigned afresh on every attempt)."""
    if backfilled:
        actions = [_with_backfilled_ids(a, backfilled) for a in actions]
    mark = row_tracking.high_water_mark(snapshot.non_file_state.domains) if snapshot.exists else -1
    return row_tracking.assign_row_tracking(
        actions,
        protocol,
        metadata,
        read_high_water_mark=mark,
        high_water_mark=mark,
        version=version,
    )


def _with_backfilled_ids(action: Action, backfilled: Mapping[str, tuple[int, int | None]]) -> Action:
    if not isinstance(action, (AddFile, RemoveFile)) or action.base_row_id is not None:
        return action
    ids = backfilled.get(decode_path(action.path))
    if ids is None:
        return action
    return replace(action, base_row_id=ids[0], default_row_commit_version=ids[1])


def preserved_tag(
    actions: Sequence[Action], protocol: Protocol | None, metadata: Metadata | None, materialized: bool = False
) -> str | None:
    """``"true"`` / ``"false"`` for ``commitInfo.tags["delta.rowTracking.preserved"]`` on a
    table with row tracking enabled (None otherwise): a commit preserves row ids when the
    rows it copies into new files carry them in the materialized columns (``materialized``:
    what the DML commands write), or when it copies no row into a new file (it removes no
    file, or only swaps a file's deletion vector)."""
    if not row_tracking.is_enabled(protocol, metadata):
        return None
    if materialized:
        return "true"
    added = {decode_path(a.path) for a in actions if isinstance(a, AddFile)}
    removed = {decode_path(a.path) for a in actions if isinstance(a, RemoveFile) and a.data_change}
    rewrites = any(
        isinstance(a, AddFile) and a.data_change and decode_path(a.path) not in removed for a in actions
    ) and bool(removed)
    preserved = not removed or (removed <= added and not rewrites)
    return "true" if preserved else "false"
