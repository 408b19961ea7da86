"""OPTIMIZE (compaction), VACUUM, RESTORE and CONVERT TO DELTA for the Spark table API."""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from deltalog.contrib.spark.dataframes import files_dataframe, write_dataframe
from deltalog.contrib.spark.errors import DeltaAnalysisError, VacuumRetentionError
from deltalog.contrib.spark.partitioning import HIVE_DEFAULT_PARTITION, unescape_path_name
from deltalog.contrib.spark.tablelog import start_transaction
from deltalog.contrib.spark.writes import _file_actions
from deltalog.txn.actions import Action, AddFile, decode_path, encode_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.contrib.spark.tables import DeltaTable
    from deltalog.txn.delta_log import DeltaLog

__all__ = ["DeltaOptimizeBuilder", "convert_to_delta", "restore", "vacuum"]

log = logging.getLogger(__name__)

MAX_FILE_SIZE = 1024 * 1024 * 1024  # Delta's optimize.maxFileSize (1 GiB)
MIN_FILE_SIZE = MAX_FILE_SIZE // 4  # smaller files are compaction candidates
OPTIMIZE_ATTEMPTS = 3


class DeltaOptimizeBuilder:
    """``table.optimize().where("day = '2024-01-01'").executeCompaction()``."""

    def __init__(self, table: DeltaTable) -> None:
        self._table = table
        self._where: str | None = None

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        self._where = partitionFilter
        return self

    def executeCompaction(self) -> DataFrame:
        from deltalog.txn.commit_errors import DeltaConcurrentModificationError

        for attempt in range(1, OPTIMIZE_ATTEMPTS + 1):
            try:
                metrics = self._compact()
                break
            except DeltaConcurrentModificationError as exc:
                if attempt == OPTIMIZE_ATTEMPTS:
                    raise
                log.warning("OPTIMIZE conflicted (%s); retrying (%d/%d)", exc, attempt, OPTIMIZE_ATTEMPTS)
        spark = self._table._spark
        return spark.createDataFrame(
            [(self._table._log.table_uri, metrics)], "path string, metrics map<string,string>"
        )

    def _compact(self) -> dict[str, str]:
        from deltalog.contrib.spark.predicates import parse_partition_predicate
        from deltalog.txn.operations import Optimize

        table = self._table
        txn = start_transaction(table._log)
        snapshot = txn.snapshot
        filters = parse_partition_predicate(self._where) if self._where else None
        files = txn.filter_files(filters)
        groups: dict[tuple[tuple[str, str | None], ...], list[AddFile]] = {}
        for f in files:
            if f.size < MIN_FILE_SIZE and f.deletion_vector is None:
                groups.setdefault(tuple(sorted(f.partition_values.items())), []).append(f)
        bins: list[list[AddFile]] = []
        for group in groups.values():
            current: list[AddFile] = []
            size = 0
            for f in sorted(group, key=lambda f: f.size):
                if current and size + f.size > MAX_FILE_SIZE:
                    bins.append(current)
                    current, size = [], 0
                current.append(f)
                size += f.size
            if current:
                bins.append(current)
        bins = [b for b in bins if len(b) > 1]
        compacted = [f for b in bins for f in b]
        if not compacted:
            log.info("OPTIMIZE: nothing to compact in %s", table._log.table_uri)
            return {"numAddedFiles": "0", "numRemovedFiles": "0"}
        df = files_dataframe(table._spark, table._log, snapshot, compacted, with_file=False)
        parts = list(snapshot.metadata.partition_columns)
        df = df.repartition(len(bins), *parts) if parts else df.coalesce(len(bins))
        lines = write_dataframe(df, table._write_spec(snapshot, data_change=False))
        adds, _ = _file_actions(lines)
        now = int(time.time() * 1000)
        actions: list[Action] = [f.remove(now, data_change=False) for f in compacted]
        actions.extend(adds)
        metrics = {
            "numAddedFiles": str(len(adds)),
            "numRemovedFiles": str(len(compacted)),
            "numAddedBytes": str(sum(a.size for a in adds)),
            "numRemovedBytes": str(sum(f.size for f in compacted)),
            "numBatches": "1",
            "totalConsideredFiles": str(len(files)),
            "totalFilesSkipped": str(len(files) - len(compacted)),
            "numPartitionsOptimized": str(
                len({tuple(sorted(f.partition_values.items())) for f in compacted})
            ),
        }
        try:
            version = txn.commit(
                actions, Optimize(predicate=[self._where] if self._where else [], user_metrics=metrics)
            )
        except BaseException:
            from deltalog.contrib.spark.files import delete_files

            delete_files(table._write_spec(snapshot), lines)
            raise
        log.info("OPTIMIZE committed version %d: %s", version, metrics)
        return metrics


# -- vacuum -------------------------------------------------------------------------------


def _retention_check_enabled(spark: SparkSession) -> bool:
    value = spark.conf.get("spark.databricks.delta.retentionDurationCheck.enabled", "true")
    return str(value).strip().lower() != "false"


def vacuum(spark: SparkSession, delta_log: DeltaLog, retention_hours: float | None) -> list[str]:
    """Delete files under the table root that no version within the retention needs."""
    import pyarrow.fs as pafs

    from deltalog.txn.operations import VacuumEnd, VacuumStart

    snapshot = delta_log.update()
    default_ms = int(snapshot.properties.deleted_file_retention.total_seconds() * 1000)
    retention_ms = default_ms if retention_hours is None else int(retention_hours * 3600 * 1000)
    check = _retention_check_enabled(spark)
    if retention_ms < 0:
        raise VacuumRetentionError("retentionHours must be >= 0")
    if check and retention_ms < default_ms:
        raise VacuumRetentionError(
            f"VACUUM with a retention of {retention_ms / 3600000:g} hours is shorter than the table's "
            f"delta.deletedFileRetentionDuration ({default_ms / 3600000:g} hours): readers of older versions "
            "and "
            "running writers could lose files. Use a longer retention, or set "
            "spark.databricks.delta.retentionDurationCheck.enabled=false if you are sure"
        )
    now = int(time.time() * 1000)
    cutoff = now - retention_ms
    store = delta_log.store
    fs = store.filesystem()
    root = store.fs_path(delta_log.table_uri).rstrip("/")
    keep: set[str] = set()
    for f in snapshot.files:
        keep.add(decode_path(f.path))
        if f.deletion_vector is not None and f.deletion_vector.storage_type == "u":
            from deltalog.txn.deletion_vectors import dv_absolute_path

            keep.add(store.fs_path(dv_absolute_path(delta_log.table_uri, f.deletion_vector))[len(root) + 1 :])
    # tombstones newer than the retention keep their files (time travel within it)
    table_ms = default_ms
    for r in snapshot.tombstones_table(now_ms=now - retention_ms + table_ms).column("path").to_pylist():
        keep.add(decode_path(r))
    txn = start_transaction(delta_log)
    txn.commit(
        [],
        VacuumStart(
            retention_check_enabled=check,
            specified_retention_millis=retention_ms,
            default_retention_millis=default_ms,
        ),
    )
    deleted: list[str] = []
    selector = pafs.FileSelector(root, recursive=True, allow_not_found=True)
    for info in fs.get_file_info(selector):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root) + 1 :] if info.path.startswith(root + "/") else None
        if rel is None:
            continue  # never outside the table root
        top = rel.split("/", 1)[0]
        if top == "_delta_log" or (top.startswith((".", "_")) and top != "_change_data" and "=" not in top):
            continue
        if any(p.startswith(".") for p in rel.split("/")):
            continue
        if rel in keep:
            continue
        mtime = int(info.mtime.timestamp() * 1000) if info.mtime is not None else now
        if mtime > cutoff:
            continue
        fs.delete_file(info.path)
        deleted.append(rel)
    start_transaction(delta_log).commit(
        [], VacuumEnd(user_metrics={"numDeletedFiles": str(len(deleted)), "numVacuumedDirectories": "0"})
    )
    log.info("VACUUM deleted %d files from %s", len(deleted), delta_log.table_uri)
    return sorted(deleted)


# -- restore ------------------------------------------------------------------------------


def restore(delta_log: DeltaLog, version: int | None = None, timestamp: str | None = None) -> dict[str, int]:
    from deltalog.txn.operations import Restore

    txn = start_transaction(delta_log)
    current = txn.snapshot
    target = delta_log.snapshot(version=version, timestamp=timestamp)
    txn.read_whole_table()
    now = int(time.time() * 1000)
    current_keys = {f.logical_key: f for f in current.files}
    target_keys = {f.logical_key: f for f in target.files}
    to_add = [f for k, f in target_keys.items() if k not in current_keys]
    to_remove = [f for k, f in current_keys.items() if k not in target_keys]
    fs = delta_log.store.filesystem()
    import pyarrow.fs as pafs

    missing = [
        f.path
        for f in to_add
        if fs.get_file_info(delta_log.store.fs_path(f"{delta_log.table_uri}/{decode_path(f.path)}")).type
        == pafs.FileType.NotFound
    ]
    if missing:
        raise DeltaAnalysisError(
            f"cannot restore {delta_log.table_uri} to version {target.version}: {len(missing)} data files "
            "it needs "
            f"were deleted (by VACUUM?), e.g. {missing[0]}"
        )
    if target.metadata != current.metadata:
        txn.update_metadata(target.metadata)
    actions: list[Action] = [f.remove(now) for f in to_remove]
    actions.extend(
        AddFile(
            f.path,
            f.partition_values,
            f.size,
            now,
            True,
            f.stats,
            f.tags,
            f.deletion_vector,
            f.base_row_id,
            f.default_row_commit_version,
            f.clustering_provider,
        )
        for f in to_add
    )
    metrics = {
        "numRestoredFiles": len(to_add),
        "numRemovedFiles": len(to_remove),
        "restoredFilesSize": sum(f.size for f in to_add),
        "removedFilesSize": sum(f.size for f in to_remove),
        "numOfFilesAfterRestore": target.num_files,
        "tableSizeAfterRestore": target.size_in_bytes,
    }
    committed = txn.commit(
        actions,
        Restore(
            version=target.version, timestamp=timestamp, user_metrics={k: str(v) for k, v in metrics.items()}
        ),
    )
    log.info(
        "RESTORE of %s to version %d committed version %d", delta_log.table_uri, target.version, committed
    )
    return metrics


# -- convert ------------------------------------------------------------------------------


def _partition_schema_fields(spark: SparkSession, schema: Any) -> list[dict[str, Any]]:
    if schema is None:
        return []
    from pyspark.sql.types import StructType, _parse_datatype_string

    struct = schema if isinstance(schema, StructType) else _parse_datatype_string(schema)
    fields: list[dict[str, Any]] = [f.jsonValue() for f in struct.fields]  # type: ignore[attr-defined]
    return fields


def convert_to_delta(spark: SparkSession, delta_log: DeltaLog, partition_schema: Any) -> int:
    """One large commit that adds every Parquet file under the directory."""
    import uuid

    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from deltalog.contrib.spark import schemas
    from deltalog.contrib.spark.partitioning import typed_partition_value
    from deltalog.txn.actions import Metadata
    from deltalog.txn.operations import Convert
    from deltalog.txn.schema import from_arrow

    if delta_log.table_exists():
        raise DeltaAnalysisError(f"{delta_log.table_uri} is already a Delta table")
    store = delta_log.store
    fs = store.filesystem()
    root = store.fs_path(delta_log.table_uri).rstrip("/")
    part_fields = _partition_schema_fields(spark, partition_schema)
    part_names = [f["name"] for f in part_fields]
    part_types = schemas.top_level_types({"fields": part_fields})
    entries: list[tuple[str, Any]] = []
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True)):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root) + 1 :]
        if any(p.startswith((".", "_")) for p in rel.split("/")) or not rel.endswith(".parquet"):
            continue
        entries.append((rel, info))
    if not entries:
        raise DeltaAnalysisError(f"no Parquet files under {delta_log.table_uri} to convert")
    arrow_schema = None
    files: list[tuple[str, Any, dict[str, str | None], int]] = []
    for rel, info in sorted(entries):
        values: dict[str, str | None] = {}
        for part in rel.split("/")[:-1]:
            if "=" in part:
                k, v = part.split("=", 1)
                raw = unescape_path_name(v)
                values[unescape_path_name(k)] = None if raw == HIVE_DEFAULT_PARTITION else raw
        if sorted(values) != sorted(part_names):
            raise DeltaAnalysisError(
                f"{rel} has partition directories {sorted(values)}, but partitionSchema names {part_names}; "
                "pass the partition schema that matches the directory layout"
            )
        for name, value in values.items():
            try:
                typed_partition_value(value, part_types.get(name, "string"))
            except ValueError:
                raise DeltaAnalysisError(
                    f"partition value {raw!r} of {rel} is not a {part_types[name]}"
                ) from None
        with fs.open_input_file(info.path) as handle:
            md = pq.ParquetFile(handle).metadata
            if arrow_schema is None:
                arrow_schema = md.schema.to_arrow_schema()
            rows = md.num_rows
        files.append((rel, info, values, rows))
    assert arrow_schema is not None
    data_schema = json.loads(from_arrow(arrow_schema).to_json())
    full = {
        "type": "struct",
        "fields": data_schema["fields"] + [{**f, "nullable": True} for f in part_fields],
    }
    metadata = Metadata(
        id=str(uuid.uuid4()),
        schema_string=json.dumps(schemas.as_nullable(full), separators=(",", ":")),
        partition_columns=tuple(part_names),
        configuration={},
        created_time=int(time.time() * 1000),
    )
    txn = start_transaction(delta_log)
    txn.update_metadata(metadata)

    def adds() -> Any:
        for rel, info, values, rows in files:
            yield AddFile(
                path=encode_path(rel),
                partition_values=values,
                size=info.size,
                modification_time=int(info.mtime.timestamp() * 1000)
                if info.mtime
                else int(time.time() * 1000),
                data_change=True,
                stats=json.dumps({"numRecords": rows}),
            )

    version: int = txn.commit_large(
        adds(), Convert(num_files=len(files), partition_by=tuple(part_names), collect_stats=False)
    )
    log.info(
        "CONVERT TO DELTA: %d files of %s committed as version %d", len(files), delta_log.table_uri, version
    )
    return version
