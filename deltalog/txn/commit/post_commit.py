"""What runs after a version is committed: Delta's ``postCommit`` and post-commit hooks.

In order: a checkpoint when one is due (with the version's ``.crc`` from the counts it
streamed, when the commit could not derive one) (every ``delta.checkpointInterval`` versions, and
on each commit while the newest checkpoint is that far behind, with a warning), the
expired-log cleanup behind it, the symlink manifest when
``delta.compatibility.symlinkFormatManifest.enabled`` is on and files changed, then the
hooks registered on the transaction. Nothing here may fail the commit: a failing step is
logged and the next one runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from deltalog.txn.log.checkpoint_lag import checkpoint_due, warn_if_checkpoints_behind
from deltalog.txn.log.checkpoint_writer import write_checkpoint
from deltalog.txn.log.checksum import record_checkpoint_checksum
from deltalog.txn.log.cleanup import cleanup_expired_logs
from deltalog.txn.log.symlink_manifest import generate_symlink_manifest
from deltalog.txn.protocol.actions import Action, AddFile, RemoveFile

if TYPE_CHECKING:
    from deltalog.txn.commit.settings import EngineSettings
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["PostCommitHook", "run_post_commit"]

log = logging.getLogger(__name__)

#: ``hook(delta_log, version, post_commit_snapshot, committed_actions)``
PostCommitHook = Callable[["SnapshotManagement", int, "Snapshot", Sequence[Action]], None]


def run_post_commit(
    delta_log: SnapshotManagement,
    version: int,
    snapshot: Snapshot,
    actions: Sequence[Action],
    hooks: Sequence[PostCommitHook],
    settings: EngineSettings,
    always_checkpoint: bool = False,
) -> float:
    """Run the post-commit steps of ``version`` (``snapshot`` is the table at it, ``actions``
    what the commit wrote); returns the time they took in milliseconds. ``always_checkpoint``
    (a large commit, as Delta's ``updateAndCheckpoint``) checkpoints whatever the interval."""
    start = time.perf_counter()
    if settings.post_commit_checkpoint and (version > 0 or always_checkpoint) and snapshot.version == version:
        _checkpoint_if_due(delta_log, version, snapshot, actions, settings, always_checkpoint)
    all_hooks = list(hooks)
    if _symlink_manifest_enabled(snapshot) and any(isinstance(a, (AddFile, RemoveFile)) for a in actions):
        all_hooks.insert(0, generate_symlink_manifest)
    for hook in all_hooks:
        name = getattr(hook, "__name__", repr(hook))
        _run_hook(name, lambda h=hook: h(delta_log, version, snapshot, actions), version)  # type: ignore[misc]
    return (time.perf_counter() - start) * 1000


def _checkpoint_if_due(
    delta_log: SnapshotManagement,
    version: int,
    snapshot: Snapshot,
    actions: Sequence[Action],
    settings: EngineSettings,
    always: bool,
) -> None:
    """Checkpoint when due (or ``always``; and write the version's missing ``.crc`` from what
    the checkpoint counted), warn while checkpoints stay behind, then clean up expired logs."""
    interval = snapshot.properties.checkpoint_interval
    if not always and (interval <= 0 or not checkpoint_due(delta_log, snapshot, interval)):
        return

    def checkpoint() -> None:
        result = write_checkpoint(delta_log, snapshot)
        if settings.write_checksum_file:
            counts = (result.num_add_files, result.table_size_bytes)
            record_checkpoint_checksum(delta_log.store, delta_log.log_uri, snapshot, actions, counts)

    _run_hook("checkpoint", checkpoint, version)
    if interval > 0:
        warn_if_checkpoints_behind(delta_log, snapshot, interval)
    if snapshot.properties.enable_expired_log_cleanup:
        _run_hook("expired log cleanup", lambda: cleanup_expired_logs(delta_log, snapshot), version)


def _run_hook(name: str, run: Callable[[], object], version: int) -> None:
    try:
        run()
    except Exception:
        log.exception("Error when executing post-commit hook %s for commit %d", name, version)


def _symlink_manifest_enabled(snapshot: Snapshot) -> bool:
    if snapshot.version < 0:
        return False
    return snapshot.properties.symlink_format_manifest_enabled
