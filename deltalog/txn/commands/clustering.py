"""Liquid clustering: clustering columns on create (``CREATE TABLE ... CLUSTER BY``) and on
an existing table (``ALTER TABLE ... CLUSTER BY`` / ``CLUSTER BY NONE``), Delta's
``ClusteredTableUtils``.

:func:`clustering_actions` is the building block: on a transaction that creates a table (or
alters an unpartitioned one) it validates the columns against the transaction's metadata,
upgrades the protocol to the ``clustering`` and ``domainMetadata`` writer features, and
returns the ``delta.clustering`` domain metadata to commit. OPTIMIZE of a clustered table
(:func:`deltalog.txn.commands.optimize.optimize`) then orders rows along a Hilbert curve of
the clustering columns; appends are written unclustered, as Delta writes them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from deltalog.txn.commit.operations import Operation
from deltalog.txn.protocol.actions import Action, AddFile, DomainMetadata
from deltalog.txn.protocol.clustering import (
    CLUSTERING_PROVIDER,
    ClusteringColumnsError,
    clustering_domain,
    clustering_protocol,
    logical_clustering_columns,
    physical_clustering_columns,
)
from deltalog.txn.protocol.protocol_requirements import merge_protocols
from deltalog.txn.protocol.stats_columns import StatsColumns

if TYPE_CHECKING:
    from deltalog.txn.commit.locks.base import CommitLock
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot
    from deltalog.txn.protocol.actions import Metadata

__all__ = [
    "ClusterBy",
    "ClusteringStats",
    "cluster_by",
    "clustering_actions",
    "clustering_columns",
    "clustering_plan",
    "clustering_stats",
    "is_clustered",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterBy(Operation):
    """``CLUSTER BY``: the clustering columns changed; each parameter is the logical names
    joined by commas (Delta's ``mkString(",")``, ``""`` for none), not a JSON list."""

    name: ClassVar[str] = "CLUSTER BY"
    old_clustering_columns: Sequence[str] = ()
    new_clustering_columns: Sequence[str] = ()

    def parameter_values(self) -> dict[str, Any]:
        return {
            "oldClusteringColumns": ",".join(self.old_clustering_columns),
            "newClusteringColumns": ",".join(self.new_clustering_columns),
        }


def clustering_columns(snapshot: Snapshot) -> list[str] | None:
    """The table's clustering columns (logical names), or None when it is not clustered."""
    if snapshot.version < 0:
        return None
    schema = json.loads(snapshot.metadata.schema_string)
    return logical_clustering_columns(snapshot.domain_metadata, schema, snapshot.protocol)


def clustering_plan(snapshot: Snapshot, z_order_by: Sequence[str]) -> tuple[str, ...] | None:
    """The columns OPTIMIZE clusters by (None: the table is not clustered, or clustered by
    no column, and OPTIMIZE compacts). Z-ordering a clustered table is refused, as Delta
    does (``DELTA_CLUSTERING_WITH_ZORDER_BY``)."""
    columns = clustering_columns(snapshot)
    if columns is None:
        return None
    if z_order_by:
        raise ClusteringColumnsError(
            f"the table is clustered by {columns}: OPTIMIZE clusters it by those columns; ZORDER BY cannot "
            "be used on a clustered table (Delta's DELTA_CLUSTERING_WITH_ZORDER_BY)"
        )
    return tuple(columns) or None


@dataclass(frozen=True)
class ClusteringStats:
    """Delta's ``ClusteringStats`` of an OPTIMIZE of a clustered table; each ``*_files`` is
    ``(numFiles, size)`` (Delta's ``ClusteringFileStats``)."""

    #: the considered files of a ZCube clustered by the table's columns (any ZCube with FULL)
    input_z_cube_files: tuple[int, int]
    #: the other considered files (not clustered, or clustered by other columns)
    input_other_files: tuple[int, int]
    input_num_z_cubes: int
    #: the files rewritten
    merged_files: tuple[int, int]
    #: one ZCube per bin
    num_output_z_cubes: int


def _z_cube_columns(f: AddFile) -> list[Any] | None:
    """The clustering columns of the ZCube ``f`` belongs to (Delta's ``ZCubeInfo.getForFile``)."""
    tags = f.tags or {}
    if "ZCUBE_ID" not in tags or "ZCUBE_ZORDER_BY" not in tags:
        return None
    try:
        columns = json.loads(tags["ZCUBE_ZORDER_BY"])
    except ValueError:
        return None
    return columns if isinstance(columns, list) else None


def clustering_stats(
    considered: Sequence[AddFile], rewritten: Sequence[AddFile], bins: int, columns: Sequence[str], full: bool
) -> ClusteringStats:
    """Delta's ``ClusteringStatsCollector`` for an OPTIMIZE that considered ``considered`` and
    rewrote ``rewritten`` in ``bins`` bins of a table clustered by ``columns``."""
    cube = [f for f in considered if (c := _z_cube_columns(f)) is not None and (full or c == list(columns))]
    in_cube = {id(f) for f in cube}
    other = [f for f in considered if id(f) not in in_cube]

    def pair(files: Sequence[AddFile]) -> tuple[int, int]:
        return (len(files), sum(f.size for f in files))

    cubes = len({(f.tags or {})["ZCUBE_ID"] for f in cube})
    return ClusteringStats(pair(cube), pair(other), cubes, pair(rewritten), bins)


def is_clustered(f: AddFile) -> bool:
    """Whether OPTIMIZE already clustered ``f`` (and no row of it was deleted since)."""
    return f.clustering_provider == CLUSTERING_PROVIDER and f.deletion_vector is None


def _check_statistics(metadata: Metadata, columns: Sequence[str], paths: list[list[str]]) -> None:
    """Delta's ``validateClusteringColumnsInStatsSchema``: every clustering column gets
    statistics (``delta.dataSkippingStatsColumns`` lists it, or, without that property, it is
    among the first ``delta.dataSkippingNumIndexedCols`` columns)."""
    with_stats = set(StatsColumns.of(metadata).physical_paths)
    missing = [name for name, path in zip(columns, paths, strict=True) if tuple(path) not in with_stats]
    if missing:
        raise ClusteringColumnsError(
            f"clustering columns {missing} get no statistics (Delta's DELTA_CLUSTERING_COLUMN_MISSING_STATS): "
            "list them in delta.dataSkippingStatsColumns, or, without that property, move them among the first "
            "delta.dataSkippingNumIndexedCols columns or raise it"
        )


def _domain(txn: OptimisticTransaction, columns: Sequence[str]) -> DomainMetadata:
    metadata = txn.metadata
    if metadata is None:
        raise ClusteringColumnsError("set the table's metadata (schema) before its clustering columns")
    if metadata.partition_columns:
        raise ClusteringColumnsError(
            f"the table is partitioned by {list(metadata.partition_columns)}: a partitioned table cannot be "
            "clustered (Delta's DELTA_CLUSTER_BY_WITH_PARTITIONED_BY)"
        )
    schema = json.loads(metadata.schema_string)
    paths = physical_clustering_columns(schema, list(columns))
    _check_statistics(metadata, columns, paths)
    protocol = txn.protocol
    if protocol is None:
        txn.upgrade_protocol(clustering_protocol())
    elif (merged := merge_protocols(protocol, clustering_protocol())) is not None:
        txn.upgrade_protocol(merged)
    return clustering_domain(paths)


def clustering_actions(txn: OptimisticTransaction, columns: Sequence[str]) -> list[Action]:
    """Make the table of ``txn`` (its new or current metadata) clustered by ``columns``:
    upgrade the protocol and return the ``delta.clustering`` domain metadata to commit.
    Raises :class:`ClusteringColumnsError` (nothing changed) on columns Delta refuses."""
    return [_domain(txn, columns)]


def cluster_by(delta_log: DeltaLog, columns: Sequence[str], *, lock: str | CommitLock | None = None) -> int | None:
    """``ALTER TABLE ... CLUSTER BY (columns)`` (empty: ``CLUSTER BY NONE``): a metadata-only
    commit of the new ``delta.clustering`` domain, its version returned; an unclustered,
    unpartitioned table becomes clustered (protocol upgraded); a partitioned table is refused,
    also by ``CLUSTER BY NONE``, as Delta's catalog refuses it. ``CLUSTER BY NONE`` on a table
    that is not clustered commits nothing and returns None, as Delta skips it. Files already
    clustered keep their layout until OPTIMIZE."""
    delta_log.require_table()
    txn = delta_log.start_transaction(lock=lock)
    if txn.snapshot.metadata.partition_columns:
        raise ClusteringColumnsError(
            "[DELTA_ALTER_TABLE_CLUSTER_BY_ON_PARTITIONED_TABLE_NOT_ALLOWED] ALTER TABLE CLUSTER BY cannot be "
            f"applied to a partitioned table (partitioned by {list(txn.snapshot.metadata.partition_columns)}), "
            "nor CLUSTER BY NONE: replace the table with clusterBy instead of partitionBy to cluster it"
        )
    if not columns and "clustering" not in (txn.snapshot.protocol.writer_features or ()):
        log.info("CLUSTER BY NONE on %s, which is not clustered: nothing to commit", delta_log.table_uri)
        return None
    old = clustering_columns(txn.snapshot) or []
    domain = _domain(txn, columns)
    new = logical_clustering_columns({domain.domain: domain}, json.loads(txn.snapshot.metadata.schema_string))
    version: int = txn.commit([domain], ClusterBy(old_clustering_columns=old, new_clustering_columns=new or []))
    return version
