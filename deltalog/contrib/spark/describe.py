"""``DESCRIBE HISTORY`` and ``DESCRIBE DETAIL`` as DataFrames with Delta's columns.

The columns, their order and types are those of Delta Spark's ``DeltaHistory`` and
``TableDetail``, so code written against ``delta.tables.DeltaTable.history()`` /
``detail()`` selects the same names:

- history: ``userId``, ``userName``, ``job``, ``notebook`` and ``clusterId`` are null unless
  the commit's writer recorded them (deltalog records none; Databricks does), and so is
  ``operationMetrics`` for a commit written with ``history.metricsEnabled=false``
  (``Option`` in Delta; an operation reporting no metrics has an empty map);
- detail: ``location`` as Hadoop's ``Path`` shows it (``file:/abs/path``),
  ``clusteringColumns`` (logical names, empty unless liquid-clustered), and
  ``tableFeatures`` naming every feature the protocol supports, those its legacy versions
  imply included (``(1, 2)`` is ``appendOnly`` and ``invariants``; ``(1, 5)`` lacks
  ``columnMapping``, which needs reader 2), as Delta lists them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from deltalog.txn.protocol.actions import CommitInfo

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from deltalog.txn.delta_log import DeltaLog

__all__ = ["DETAIL_SCHEMA", "HISTORY_SCHEMA", "detail_dataframe", "hadoop_location", "history_dataframe"]

#: Delta's ``DeltaHistory`` columns.
HISTORY_SCHEMA = (
    "version long, timestamp timestamp, userId string, userName string, operation string, "
    "operationParameters map<string,string>, "
    "job struct<jobId: string, jobName: string, jobRunId: string, runId: string, jobOwnerId: string, "
    "triggerType: string>, "
    "notebook struct<notebookId: string>, clusterId string, readVersion long, isolationLevel string, "
    "isBlindAppend boolean, operationMetrics map<string,string>, userMetadata string, engineInfo string"
)

#: Delta's ``TableDetail`` columns.
DETAIL_SCHEMA = (
    "format string, id string, name string, description string, location string, createdAt timestamp, "
    "lastModified timestamp, partitionColumns array<string>, clusteringColumns array<string>, "
    "numFiles long, sizeInBytes long, properties map<string,string>, minReaderVersion int, "
    "minWriterVersion int, tableFeatures array<string>"
)

_JOB_FIELDS = ("jobId", "jobName", "jobRunId", "runId", "jobOwnerId", "triggerType")


def _utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _struct(value: object, names: tuple[str, ...]) -> tuple[str | None, ...] | None:
    if not isinstance(value, Mapping):
        return None
    return tuple(_text(value.get(name)) for name in names)


def _history_row(version: int, timestamp: int, info: CommitInfo | None) -> tuple[object, ...]:
    extra = {} if info is None else info.extra
    return (
        version,
        _utc(timestamp),
        _text(extra.get("userId")),
        _text(extra.get("userName")),
        None if info is None else info.operation,
        {k: _text(v) for k, v in ((info and info.operation_parameters) or {}).items()},
        _struct(extra.get("job"), _JOB_FIELDS),
        _struct(extra.get("notebook"), ("notebookId",)),
        _text(extra.get("clusterId")),
        None if info is None else info.read_version,
        None if info is None else info.isolation_level,
        None if info is None else info.is_blind_append,
        None
        if info is None or info.operation_metrics is None
        else {k: str(v) for k, v in info.operation_metrics.items()},
        None if info is None else info.user_metadata,
        None if info is None else info.engine_info,
    )


def history_dataframe(spark: SparkSession, delta_log: DeltaLog, limit: int | None = None) -> DataFrame:
    """The table's commits, newest first (at most ``limit``), as Delta's ``DESCRIBE HISTORY``."""
    rows = [_history_row(rec.version, rec.timestamp, rec.commit_info) for rec in delta_log.history(limit)]
    return spark.createDataFrame(rows, HISTORY_SCHEMA)


def hadoop_location(table_uri: str) -> str:
    """A table's location as Delta shows it (``deltaLog.dataPath.toString``, Hadoop's
    ``Path``): a local table is ``file:/abs/path``, not ``file:///abs/path``; other URIs as
    they are."""
    return "file:/" + table_uri[len("file:///") :] if table_uri.startswith("file:///") else table_uri


def _last_modified(delta_log: DeltaLog, version: int, fallback_ms: int) -> dt.datetime:
    """Delta's ``lastModified``: the modification time of the commit file of ``version``
    (``getFileStatus``), whatever time an in-commit timestamp gives the commit;
    ``fallback_ms`` when the file is not listed."""
    uri = delta_log.commit_uri(version)
    first = next(iter(delta_log.store.list_from(uri)), None)
    if first is None or first.name != uri.rsplit("/", 1)[-1]:
        return _utc(fallback_ms)
    return _utc(first.modification_time)


def detail_dataframe(spark: SparkSession, delta_log: DeltaLog, table_name: str | None = None) -> DataFrame:
    """The latest version's ``DESCRIBE DETAIL`` row; ``name`` is ``table_name`` (the catalog
    entry's qualified name) or else the metadata's name, as Delta's."""
    from deltalog.txn.commands.clustering import clustering_columns
    from deltalog.txn.protocol.features import supported_feature_names

    snap = delta_log.require_table()
    md, proto = snap.metadata, snap.protocol
    row = (
        "delta",
        md.id,
        md.name if table_name is None else table_name,
        md.description,
        hadoop_location(delta_log.table_uri),
        None if md.created_time is None else _utc(md.created_time),
        _last_modified(delta_log, snap.version, snap.timestamp),
        list(md.partition_columns),
        clustering_columns(snap) or [],
        snap.num_files,
        snap.size_in_bytes,
        dict(md.configuration),
        proto.min_reader_version,
        proto.min_writer_version,
        supported_feature_names(proto),
    )
    return spark.createDataFrame([row], DETAIL_SCHEMA)
