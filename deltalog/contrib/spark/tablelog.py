"""Opening a table's log from the Spark side (driver, Python workers, executors), and the
settings every commit the Spark layer makes carries: ``engineInfo`` naming this integration,
and Delta's commit confs (:func:`session_commit_confs`: ``commitInfo.userMetadata``, as
Delta's ``getUserMetadata``, ``history.metricsEnabled``, ...) where the write's options and
the storage options do not give them. A log opened with the session (:func:`open_log` with
``spark``) reads them at each transaction, whichever command (OPTIMIZE, RESTORE, ALTER TABLE,
...) opens it; ``write_table`` passes them to the data source as options."""

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
    "session_commit_confs",
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


def session_commit_confs(spark: Any) -> dict[str, str]:
    """The session's Delta commit confs that are set
    (:data:`~deltalog.txn.commit.settings.DELTA_SESSION_CONFS`: :data:`USER_METADATA_CONF`,
    ``history.metricsEnabled``, ``maxCommitAttempts``, ``writeChecksumFile.enabled``, ...):
    the one place the Spark layer reads them, as Delta reads them at each commit."""
    from deltalog.txn.commit.settings import DELTA_SESSION_CONFS

    confs = {key: spark.conf.get(key, None) for key in DELTA_SESSION_CONFS}
    return {key: str(value) for key, value in confs.items() if value is not None}


def commit_settings(options: StorageOptions, user_metadata: str | None = None) -> EngineSettings:
    """The settings of a commit the Spark layer makes: the storage ``options``', this
    integration's ``engineInfo``, and ``user_metadata`` (a write's ``userMetadata``) over the
    options' own."""
    from deltalog.txn.commit.settings import EngineSettings

    settings = EngineSettings.from_options(options).with_(engine_info=_engine_info())
    return settings if user_metadata is None else settings.with_(user_metadata=user_metadata)


def _session_settings(options: StorageOptions, spark: Any) -> EngineSettings:
    """:func:`commit_settings` of the storage ``options`` over :func:`session_commit_confs`."""
    from deltalog.logstores.options import StorageOptions

    return commit_settings(StorageOptions({**session_commit_confs(spark), **options}))


def open_log(
    path: str, storage_options: Mapping[str, str] | None = None, logstore: str | None = None, *, spark: Any = None
) -> DeltaLog:
    """The log of the table at ``path``; with ``spark``, bound to the session: every
    transaction opened on it, by any command, commits with :func:`commit_settings` and the
    session's :func:`session_commit_confs` as they are at that transaction."""
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
    the one of the session the log is bound to (:func:`open_log`). Its commit is followed by
    auto compaction when that is on and the commit added data files, as Delta's writes register
    ``AutoCompact`` (:mod:`deltalog.txn.commands.auto_compact`)."""
    from deltalog.txn.commands.auto_compact import auto_compact_hook

    if log.settings_source is not None:
        settings = log.settings_source()
        if user_metadata is not None:
            settings = settings.with_(user_metadata=user_metadata)
    else:
        settings = commit_settings(log.storage_options, user_metadata)
    txn = log.start_transaction(settings=settings, snapshot=snapshot)
    txn.register_post_commit_hook(auto_compact_hook(log, txn.settings))
    return txn
