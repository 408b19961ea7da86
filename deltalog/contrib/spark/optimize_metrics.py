"""OPTIMIZE's result DataFrame as Delta returns it: ``path`` and a ``metrics`` struct of
Delta's ``OptimizeMetrics`` (``OptimizeStats.scala``; the schema its
``OptimizeMetricsSuite`` "optimize command output schema" pins), filled from the txn
layer's :class:`~deltalog.txn.commands.optimize.OptimizeResult`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.describe import hadoop_location

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from deltalog.txn.commands.optimize import OptimizeResult

__all__ = ["optimize_result_row", "optimize_result_schema"]

_LONG, _DOUBLE, _STRING, _BOOLEAN = "long", "double", "string", "boolean"


def _struct(fields: list[tuple[str, Any, bool]]) -> StructType:
    """A struct of ``(name, type, nullable)``; a type is an atom's name or a nested struct."""
    from pyspark.sql.types import BooleanType, DataType, DoubleType, LongType, StringType, StructField, StructType

    atoms: dict[str, DataType] = {
        _LONG: LongType(),
        _DOUBLE: DoubleType(),
        _STRING: StringType(),
        _BOOLEAN: BooleanType(),
    }
    return StructType([StructField(n, atoms[t] if isinstance(t, str) else t, null) for n, t, null in fields])


def _metrics_schema() -> StructType:
    file_sizes = _struct(
        [
            ("min", _LONG, True),
            ("max", _LONG, True),
            ("avg", _DOUBLE, False),
            ("totalFiles", _LONG, False),
            ("totalSize", _LONG, False),
        ]
    )
    z_files = _struct([("num", _LONG, False), ("size", _LONG, False)])
    z_order = _struct(
        [
            ("strategyName", _STRING, True),
            ("inputCubeFiles", z_files, True),
            ("inputOtherFiles", z_files, True),
            ("inputNumCubes", _LONG, False),
            ("mergedFiles", z_files, True),
            ("numOutputCubes", _LONG, False),
            ("mergedNumCubes", _LONG, True),
        ]
    )
    c_files = _struct([("numFiles", _LONG, False), ("size", _LONG, False)])
    clustering = _struct(
        [
            ("inputZCubeFiles", c_files, True),
            ("inputOtherFiles", c_files, True),
            ("inputNumZCubes", _LONG, False),
            ("mergedFiles", c_files, True),
            ("numOutputZCubes", _LONG, False),
        ]
    )
    # Delta's order: maxCluster, minCluster, maxSession, minSession
    parallelism = _struct(
        [(f"{m}{s}ActiveParallelism", _LONG, True) for s in ("Cluster", "Session") for m in ("max", "min")]
    )
    dvs = _struct([("numDeletionVectorsRemoved", _LONG, False), ("numDeletionVectorRowsRemoved", _LONG, False)])
    longs = ["numBins", "numBatches", "totalConsideredFiles", "totalFilesSkipped"]
    later = ["numFilesSkippedToReduceWriteAmplification", "numBytesSkippedToReduceWriteAmplification"]
    later += ["startTimeMs", "endTimeMs", "totalClusterParallelism", "totalScheduledTasks"]
    return _struct(
        [
            ("numFilesAdded", _LONG, False),
            ("numFilesRemoved", _LONG, False),
            ("filesAdded", file_sizes, True),
            ("filesRemoved", file_sizes, True),
            ("partitionsOptimized", _LONG, False),
            ("zOrderStats", z_order, True),
            ("clusteringStats", clustering, True),
            *[(n, _LONG, False) for n in longs],
            ("preserveInsertionOrder", _BOOLEAN, False),
            *[(n, _LONG, False) for n in later],
            ("autoCompactParallelismStats", parallelism, True),
            ("deletionVectorStats", dvs, True),
            ("numTableColumns", _LONG, False),
            ("numTableColumnsWithStats", _LONG, False),
        ]
    )


def optimize_result_schema() -> StructType:
    """``path string, metrics struct<...>`` with Delta's field names, types and nullability."""
    return _struct([("path", _STRING, True), ("metrics", _metrics_schema(), True)])


def _file_sizes(sizes: tuple[int, ...]) -> tuple[int | None, int | None, float, int, int]:
    """Delta's ``FileSizeMetrics``: min and max are null without files, avg 0."""
    if not sizes:
        return (None, None, 0.0, 0, 0)
    return (min(sizes), max(sizes), sum(sizes) / len(sizes), len(sizes), sum(sizes))


def _z_order_stats(result: OptimizeResult) -> tuple[Any, ...]:
    """Delta's ``ZOrderStrategy.updateOptimizeStats``: every file of a partition is input,
    one output cube per partition."""
    inputs = (result.num_files_removed, result.bytes_removed)
    return ("all", (0, 0), inputs, 0, inputs, result.partitions_optimized, None)


def _clustering_stats(result: OptimizeResult) -> tuple[Any, ...] | None:
    """Delta's ``ClusteringStats`` (a clustered table only)."""
    stats = result.clustering_stats
    if stats is None:
        return None
    return (
        stats.input_z_cube_files,
        stats.input_other_files,
        stats.input_num_z_cubes,
        stats.merged_files,
        stats.num_output_z_cubes,
    )


def optimize_result_row(result: OptimizeResult, z_ordered: bool, cluster_parallelism: int) -> tuple[Any, ...]:
    """The one row Delta's OPTIMIZE returns for ``result`` (what Delta's open-source
    OPTIMIZE leaves unset stays unset: no insertion order, no write amplification skips,
    no scheduled tasks or auto-compaction parallelism); ``path`` is the table's location as
    Delta's ``snapshot.dataPath.toString`` shows it (``file:/abs/path`` for a local table)."""
    dvs = None
    if result.num_deletion_vectors_removed:
        dvs = (result.num_deletion_vectors_removed, result.num_deletion_vector_rows_removed)
    metrics = (
        result.num_files_added,
        result.num_files_removed,
        _file_sizes(result.added_file_sizes),
        _file_sizes(result.removed_file_sizes),
        result.partitions_optimized,
        _z_order_stats(result) if z_ordered else None,
        _clustering_stats(result),
        result.num_bins,
        result.num_batches,
        result.total_considered_files,
        result.total_files_skipped,
        *(False, 0, 0),
        *(result.start_time_ms, result.end_time_ms, cluster_parallelism, 0),
        None,
        dvs,
        result.num_table_columns,
        result.num_table_columns_with_stats,
    )
    return (hadoop_location(result.table_uri), metrics)
