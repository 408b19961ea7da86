"""Auto compaction: Delta's ``AutoCompact`` post-commit hook.

After a commit of the Spark layer that wrote data files (a write, also with
``dataChange=false``, a streaming append, MERGE, UPDATE, DELETE; never OPTIMIZE or REORG, which
run their own transactions, as Delta's ``writeFiles`` registers the hook unless it optimizes),
small files are compacted when auto compaction is on: the session's
``spark.databricks.delta.autoCompact.enabled`` (:class:`EngineSettings.auto_compact`) wins,
else the table's ``delta.autoOptimize.autoCompact`` (or the deprecated ``delta.autoOptimize``)
(:attr:`TableProperties.auto_compact`). As Delta's ``AutoCompactUtils``:

- with ``modifiedPartitionsOnly`` (the default), only the partitions the commit added files
  to are candidates, and of those only the ones holding at least ``minNumFiles`` (50) files
  smaller than ``minFileSize`` (half of ``maxFileSize``, 128 MiB); at most
  ``maxNumModifiedPartitions`` (128) of them, chosen at random, are compacted. Without it the
  whole table is compacted once any partition holds that many small files;
- the compaction is :func:`~deltalog.txn.commands.optimize.optimize` of the files below
  ``minFileSize`` in those partitions, in bins of ``maxFileSize``, committed as ``OPTIMIZE``
  with ``auto: true`` and the partition predicate Delta records.

Delta counts the small files of a partition from the commits its driver has seen since it
last compacted it; deltalog counts them in the table's snapshot after the commit, which is
the same number when one writer wrote them and the right one when several did. A failed
compaction is logged and leaves the write committed, as Delta's hooks do outside its tests.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from deltalog.txn.commands.optimize import OptimizeResult, optimize, partition_key
from deltalog.txn.commit.post_commit import PostCommitHook
from deltalog.txn.protocol.actions import Action, AddFile

if TYPE_CHECKING:
    from deltalog.txn.commit.settings import EngineSettings
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.log.snapshot_management import SnapshotManagement

__all__ = ["PartitionKey", "auto_compact_hook", "compact_after_commit", "enabled_for"]

log = logging.getLogger(__name__)

#: a partition as its ``partitionValues`` (physical names), sorted
PartitionKey = tuple[tuple[str, str | None], ...]


def enabled_for(snapshot: Snapshot, settings: EngineSettings) -> bool:
    """Delta's ``getAutoCompactType``: the session's setting, else the table's property."""
    if settings.auto_compact is not None:
        return settings.auto_compact
    return bool(snapshot.properties.auto_compact)


def auto_compact_hook(delta_log: DeltaLog, settings: EngineSettings) -> PostCommitHook:
    """The post-commit hook a writer registers on its transaction (Delta's ``writeFiles``
    registering ``AutoCompact``)."""

    def auto_compact(_log: SnapshotManagement, version: int, snapshot: Snapshot, actions: Sequence[Action]) -> None:
        compact_after_commit(delta_log, snapshot, actions, settings)

    return auto_compact


def compact_after_commit(
    delta_log: DeltaLog, snapshot: Snapshot, actions: Sequence[Action], settings: EngineSettings
) -> OptimizeResult | None:
    """Compact what the commit of ``actions`` (``snapshot`` is the table after it) calls for;
    the compaction's result, or None when auto compaction is off or finds nothing to do."""
    if not enabled_for(snapshot, settings):  # the common case, on every commit: nothing else read
        return None
    added = {partition_key(a) for a in actions if isinstance(a, AddFile)}
    if not added:
        return None
    max_size = settings.auto_compact_max_file_size
    min_size = settings.auto_compact_min_file_size
    min_size = max_size // 2 if min_size is None else min_size
    small = _small_files_per_partition(snapshot, min_size)
    chosen = _choose_partitions(added, small, settings)
    if chosen is None:
        log.info("auto compaction of %s: skipped, too few small files", delta_log.table_uri)
        return None
    log.info("auto compaction of %s: %s", delta_log.table_uri, f"{len(chosen)} partitions" if chosen else "table")

    def in_chosen(_snapshot: Snapshot, files: list[AddFile]) -> list[AddFile]:
        return [f for f in files if partition_key(f) in chosen] if chosen else files

    return optimize(
        delta_log,
        target_size=max_size,
        min_file_size=min_size,
        select_files=in_chosen,
        predicate=_predicate(snapshot, chosen),
        auto=True,
    )


def _small_files_per_partition(snapshot: Snapshot, min_size: int) -> dict[PartitionKey, int]:
    counts: dict[PartitionKey, int] = defaultdict(int)
    for f in snapshot.files:
        if f.size < min_size:
            counts[partition_key(f)] += 1
    return counts


def _choose_partitions(
    added: set[PartitionKey], small: dict[PartitionKey, int], settings: EngineSettings
) -> set[PartitionKey] | None:
    """The partitions to compact (empty: the whole table), or None to skip."""
    enough = settings.auto_compact_min_num_files
    if not settings.auto_compact_modified_partitions_only:
        return set() if any(n >= enough for n in small.values()) else None
    chosen = {p for p in added if small.get(p, 0) >= enough}
    if not chosen:
        return None
    limit = settings.auto_compact_max_num_modified_partitions
    if len(chosen) > limit:
        chosen = set(random.sample(sorted(chosen), limit))
    return chosen if any(chosen) else set()


def _predicate(snapshot: Snapshot, chosen: set[PartitionKey]) -> list[str]:
    """Delta's ``createPartitionPredicate`` as SQL: ``(p <=> CAST('v' AS TYPE))`` per
    column, and-ed per partition, or-ed over partitions; none for the whole table."""
    types = {f.physical_name: f.type.simple_string().upper() for f in snapshot.schema.fields}
    branches = []
    for key in sorted(chosen, key=repr):
        if not key:
            continue
        terms = [f"({name} <=> CAST({_literal(value)} AS {types.get(name, 'STRING')}))" for name, value in key]
        branches.append(terms[0] if len(terms) == 1 else f"({' AND '.join(terms)})")
    if not branches:
        return []
    return [branches[0] if len(branches) == 1 else f"({' OR '.join(branches)})"]


def _literal(value: str | None) -> str:
    return "NULL" if value is None else "'" + value.replace("'", "\\'") + "'"
