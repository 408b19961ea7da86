"""Opening a table's log from the Spark side (driver, Python workers, executors)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deltalog.txn.commit.transaction import OptimisticTransaction
    from deltalog.txn.delta_log import DeltaLog
    from deltalog.txn.log.snapshot import Snapshot

__all__ = ["ENGINE_INFO", "open_log", "start_transaction"]

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


def open_log(path: str, storage_options: Mapping[str, str] | None = None, logstore: str | None = None) -> DeltaLog:
    from deltalog.txn.delta_log import DeltaLog

    return DeltaLog.for_table(path, storage_options=dict(storage_options or {}), logstore=logstore)


def start_transaction(
    log: DeltaLog, user_metadata: str | None = None, *, snapshot: Snapshot | None = None
) -> OptimisticTransaction:
    """A transaction whose commitInfo names this integration (and carries ``userMetadata``)."""
    from deltalog.txn.commit.settings import EngineSettings

    settings = EngineSettings.from_options(log.storage_options).with_(engine_info=_engine_info())
    if user_metadata is not None:
        settings = settings.with_(user_metadata=user_metadata)
    return log.start_transaction(settings=settings, snapshot=snapshot)
