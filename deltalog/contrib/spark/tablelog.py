"""Opening a table's log from the Spark side (driver, Python workers, executors), and the
settings every commit the Spark layer makes carries: ``engineInfo`` naming this integration
and ``commitInfo.userMetadata`` (a write's option, else the session's
:data:`USER_METADATA_CONF`, as Delta's ``getUserMetadata``). A log opened with the session
(:func:`open_log` with ``spark``) reads that conf at each transaction, whichever command
(OPTIMIZE, RESTORE, ALTER TABLE, ...) opens it."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deltalog.logstores.options import StorageOptions
    from deltalog.txn.commit.settings import EngineSettings
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = [
    "ENGINE_INFO",
    "USER_METADATA_CONF",
    "commit_settings",
    "open_log",
    "session_user_metadata",
    "start_transaction",
]

#: Delta's session conf: ``commitInfo.userMetadata`` of a commit whose write gives no ``userMetadata``
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"

ENGINE_INFO_PREFIX = "deltalog-spark"


def _engine_info() -> str:
    from deltalog import __version__

    try:
        import pyspark

        spark_version = pyspark.__version__
    except ImportError:  # pragma: no cover - the integration needs pyspark anyway
        spark_version = "unknown"
    return f"{ENGINE_INFO_PREFIX}/{__version__} PySpark/{spark_version}"


ENGINE_INFO = _engine_info


def session_user_metadata(spark: Any) -> str | None:
    """The session's :data:`USER_METADATA_CONF`: the ``commitInfo.userMetadata`` of the commits
    made with the session that give none, as Delta's ``getUserMetadata``."""
    value = spark.conf.get(USER_METADATA_CONF, None)
    return None if value is None else str(value)


def commit_settings(options: StorageOptions, user_metadata: str | None = None) -> EngineSettings:
    """The settings of a commit the Spark layer makes: the storage ``options``', this
    integration's ``engineInfo``, and ``user_metadata`` (a write's ``userMetadata``) over the
    options' own."""
    from deltalog.txn.commit.settings import EngineSettings

    settings = EngineSettings.from_options(options).with_(engine_info=_engine_info())
    return settings if user_metadata is None else settings.with_(user_metadata=user_metadata)


def _session_settings(options: StorageOptions, spark: Any) -> EngineSettings:
    """:func:`commit_settings`, with the session's ``userMetadata`` when the options give none."""
    settings = commit_settings(options)
    if settings.user_metadata is not None:
        return settings
    return settings.with_(user_metadata=session_user_metadata(spark))


def open_log(
    path: str, storage_options: Mapping[str, str] | None = None, logstore: str | None = None, *, spark: Any = None
) -> DeltaLog:
    """The log of the table at ``path``; with ``spark``, bound to the session: every
    transaction opened on it, by any command, commits with :func:`commit_settings` and the
    session's :data:`USER_METADATA_CONF` as it is at that transaction."""
    from deltalog.txn.delta_log import DeltaLog

    delta_log = DeltaLog.for_table(path, storage_options=dict(storage_options or {}), logstore=logstore)
    if spark is not None:
        delta_log.settings_source = functools.partial(_session_settings, delta_log.storage_options, spark)
    return delta_log


def start_transaction(
    log: DeltaLog, user_metadata: str | None = None, *, snapshot: Snapshot | None = None
) -> OptimisticTransaction:
    """A transaction whose commitInfo names this integration and carries ``user_metadata``
    (a write's ``userMetadata`` option, which wins over the session's conf as in Delta), else
    the one of the session the log is bound to (:func:`open_log`)."""
    if log.settings_source is not None:
        settings = log.settings_source()
        if user_metadata is not None:
            settings = settings.with_(user_metadata=user_metadata)
    else:
        settings = commit_settings(log.storage_options, user_metadata)
    return log.start_transaction(settings=settings, snapshot=snapshot)
