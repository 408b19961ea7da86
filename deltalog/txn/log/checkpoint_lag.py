"""How far a table's checkpoints are behind its log, and when a commit must (re)try one.

Delta checkpoints after a commit whose version is a multiple of
``delta.checkpointInterval``. If that checkpoint fails (a store error, a missing
permission), waiting for the next multiple leaves the table without a fresh checkpoint
for another interval, and reads get slower. So a commit also checkpoints whenever the
newest checkpoint is ``interval`` or more commits behind it, and warns on every commit
while that stays so. ``deltalog describe`` prints the same lag.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.txn.log.last_checkpoint import read_last_checkpoint

if TYPE_CHECKING:
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["CheckpointLag", "checkpoint_due", "checkpoint_lag", "warn_if_checkpoints_behind"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointLag:
    """``last_checkpoint`` is the newest checkpoint at or before ``version`` (None: none
    yet, counted from version 0); ``behind`` the commits since."""

    version: int
    last_checkpoint: int | None
    behind: int

    def describe(self) -> str:
        if self.last_checkpoint is None:
            return f"no checkpoint yet, {self.behind} commits behind"
        return f"last checkpoint at {self.last_checkpoint}, {self.behind} commits behind"

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.last_checkpoint, "commits_behind": self.behind}


def checkpoint_lag(snapshot: Snapshot) -> CheckpointLag:
    last = snapshot.checkpoint_version
    return CheckpointLag(snapshot.version, last, snapshot.version - (last if last is not None else 0))


def checkpoint_due(dlog: SnapshotManagement, snapshot: Snapshot, interval: int) -> bool:
    """Whether the commit of ``snapshot.version`` should checkpoint: at every multiple of
    ``interval`` (as Delta), and whenever the newest checkpoint is ``interval`` or more
    commits behind -- a failed checkpoint is retried by the next commit. A checkpoint
    another writer made counts (``_last_checkpoint`` is read only in that case)."""
    if snapshot.version % interval == 0:
        return True
    if checkpoint_lag(snapshot).behind < interval:
        return False
    try:
        hint = read_last_checkpoint(dlog.store, dlog.log_uri)
    except Exception:  # after a commit nothing may raise: try the checkpoint instead
        log.debug("cannot read _last_checkpoint of %s", dlog.table_uri, exc_info=True)
        return True
    if hint is None or snapshot.version - hint.version >= interval:
        return True
    if hint.version <= snapshot.version:
        snapshot.checkpoint_version = hint.version  # another writer's: no need to read it again
    return False


def warn_if_checkpoints_behind(dlog: SnapshotManagement, snapshot: Snapshot, interval: int) -> None:
    """After a checkpoint attempt: a warning when the table is still ``interval`` or more
    commits past its newest checkpoint (the attempt failed; the error was logged)."""
    lag = checkpoint_lag(snapshot)
    if lag.behind >= interval:
        log.warning(
            "checkpoints of %s are behind: %s (delta.checkpointInterval=%d); the checkpoint of "
            "version %d failed (the error is logged above) and the next commit retries it. Reads "
            "replay more commits until one succeeds; `deltalog checkpoint %s` writes one now.",
            dlog.table_uri,
            lag.describe(),
            interval,
            snapshot.version,
            dlog.table_uri,
        )
