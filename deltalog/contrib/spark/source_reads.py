"""Reads of a write's own table in the DataFrame it writes.

Delta runs a write's (or a MERGE's) query inside its transaction: a scan of the same table
in that query reads the transaction's snapshot and counts as a read of the whole table
(``PrepareDeltaScan`` / ``OptimisticTransaction.getActive``), so an overwrite computed from
the table replaces exactly the rows it read, and a concurrent commit is judged by the
conflict checker. A deltalog DataFrame cannot be re-planned on another snapshot:
``read_table`` (and ``DeltaTable.toDF()``) is bound to the snapshot it was made on. So the
write's transaction opens on that snapshot instead, and counts as having read the whole
table: the commits made since the source read the table are then checked as concurrent
commits (a conflict error, or a blind append kept under ``WriteSerializable``), never
silently overwritten.

:func:`register_bound_read` records the Parquet scan roots of a ``read_table`` DataFrame;
:func:`target_reads` finds, in a DataFrame's plan, the scans of a given table: those
bound reads (with their versions) and ``format("deltalog")`` scans of its latest version.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = ["TargetReads", "register_bound_read", "target_reads"]

#: bound reads remembered (the oldest are forgotten: a write from a DataFrame made that many
#: ``read_table`` calls ago is no longer recognised as reading its own table)
MAX_BOUND_READS = 10_000


@dataclass(frozen=True)
class _BoundRead:
    table_uri: str
    version: int


_BOUND: OrderedDict[str, _BoundRead] = OrderedDict()
_LOCK = threading.Lock()


def _leaves(df: DataFrame) -> list[Any]:
    leaves = df._jdf.queryExecution().analyzed().collectLeaves()
    return [leaves.apply(i) for i in range(leaves.size())]


def _scan_roots(leaf: Any) -> list[str]:
    """The root paths of a file-based relation (a native Parquet scan), else none."""
    if leaf.getClass().getSimpleName() != "LogicalRelation":
        return []
    relation = leaf.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation":
        return []
    roots = relation.location().rootPaths()
    return [str(roots.apply(i).toString()) for i in range(roots.size())]


def register_bound_read(df: DataFrame, table_uri: str, version: int) -> None:
    """Remember that the Parquet scans of ``df`` (a ``read_table`` DataFrame, not a time
    travel) read ``table_uri`` at ``version``."""
    read = _BoundRead(table_uri, version)
    roots = [root for leaf in _leaves(df) for root in _scan_roots(leaf)]
    with _LOCK:
        for root in roots:
            _BOUND[root] = read
            _BOUND.move_to_end(root)
        while len(_BOUND) > MAX_BOUND_READS:
            _BOUND.popitem(last=False)


@dataclass(frozen=True)
class TargetReads:
    """The scans of one table in a DataFrame's plan."""

    #: versions read by ``read_table`` / ``toDF()`` scans of it
    bound_versions: frozenset[int] = frozenset()
    #: a ``format("deltalog")`` scan of its latest version
    latest: bool = False

    @property
    def reads_table(self) -> bool:
        return bool(self.bound_versions) or self.latest

    def snapshot(self, delta_log: DeltaLog) -> Snapshot | None:
        """The snapshot the write's transaction must open on: the oldest one a bound scan
        read (None: the latest, as usual)."""
        if not self.bound_versions:
            return None
        return delta_log.snapshot(min(self.bound_versions))


def _deltalog_scan_of(leaf: Any, delta_log: DeltaLog) -> bool:
    """Whether ``leaf`` is a ``format("deltalog")`` scan of ``delta_log``'s latest version."""
    from deltalog.contrib.spark.tablelog import open_log

    if leaf.getClass().getSimpleName() != "DataSourceV2Relation":
        return False
    if leaf.table().getClass().getSimpleName() != "PythonTable" or str(leaf.table().name()) != "deltalog":
        return False
    options = leaf.options()
    path = options.get("path")
    if path is None or options.get("versionAsOf") is not None or options.get("timestampAsOf") is not None:
        return False
    return bool(open_log(str(path), delta_log.storage_options).table_uri == delta_log.table_uri)


def target_reads(df: DataFrame, delta_log: DeltaLog) -> TargetReads:
    """The scans of ``delta_log``'s table in ``df`` (time travel reads excluded, as Delta
    excludes them)."""
    if getattr(df, "_jdf", None) is None:  # Spark Connect: no plan to inspect
        return TargetReads()
    versions: set[int] = set()
    latest = False
    for leaf in _leaves(df):
        for root in _scan_roots(leaf):
            with _LOCK:
                read = _BOUND.get(root)
            if read is not None and read.table_uri == delta_log.table_uri:
                versions.add(read.version)
        latest = latest or _deltalog_scan_of(leaf, delta_log)
    return TargetReads(frozenset(versions), latest)
