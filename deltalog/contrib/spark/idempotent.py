"""Idempotent writes and DML from the session, as Delta's ``DeltaCommand.hasBeenExecuted``
and ``createSetTransaction``.

A write's ``txnAppId``/``txnVersion`` options make it idempotent (:mod:`.writes`). Where
the options are silent, Delta takes the pair from the session confs
``spark.databricks.delta.write.txnAppId`` / ``spark.databricks.delta.write.txnVersion``:
for ``write_table`` and for DELETE, UPDATE and MERGE (which take no options). A command
whose application already committed this version or a later one is skipped; otherwise
its commit carries ``SetTransaction(appId, version)``. With
``spark.databricks.delta.write.txnVersion.autoReset.enabled`` the session's version is
unset once a command used it. Only code that runs with the session can see these confs:
``df.write.format("deltalog")`` plans in a Python worker without one, so the writer wrapper
hands them to it as options (:mod:`~deltalog.contrib.spark.session_writes`).
"""

from __future__ import annotations

import logging
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deltalog.contrib.spark.errors import InvalidWriteOptionError
from deltalog.txn.protocol.actions import SetTransaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from deltalog.txn.commit.operations import Operation
    from deltalog.txn.commit.transaction import OptimisticTransaction

__all__ = [
    "SESSION_TXN_APP_ID",
    "SESSION_TXN_AUTO_RESET",
    "SESSION_TXN_VERSION",
    "ApplicationTransaction",
    "begin_idempotent_command",
    "commit_set_transaction_only",
    "pending_set_transactions",
    "reset_session_version",
    "session_application_transaction",
]

log = logging.getLogger(__name__)

SESSION_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
SESSION_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
SESSION_TXN_AUTO_RESET = "spark.databricks.delta.write.txnVersion.autoReset.enabled"

#: the SetTransaction each open DML transaction commits (set by begin_idempotent_command)
_PENDING: weakref.WeakKeyDictionary[OptimisticTransaction, SetTransaction] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ApplicationTransaction:
    """An application's ``(appId, version)`` pair for an idempotent command."""

    app_id: str
    version: int

    def set_transaction(self) -> SetTransaction:
        return SetTransaction(app_id=self.app_id, version=self.version, last_updated=int(time.time() * 1000))


def session_application_transaction(spark: SparkSession) -> ApplicationTransaction | None:
    """The session's ``txnAppId``/``txnVersion`` pair, None when neither is set; raises
    :class:`InvalidWriteOptionError` (Delta's
    ``DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS.MISSING_SESSION_CONFS``) when one is missing
    or the version is not an integer."""
    app_id = spark.conf.get(SESSION_TXN_APP_ID, None)
    version = spark.conf.get(SESSION_TXN_VERSION, None)
    if app_id is None and version is None:
        return None
    if app_id is None or version is None:
        raise InvalidWriteOptionError(
            f"DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS.MISSING_SESSION_CONFS: both {SESSION_TXN_APP_ID} and "
            f"{SESSION_TXN_VERSION} must be specified for idempotent Delta writes; set the missing one or unset both"
        )
    try:
        return ApplicationTransaction(app_id, int(version))
    except ValueError:
        raise InvalidWriteOptionError(f"{SESSION_TXN_VERSION} must be an integer, got {version!r}") from None


def reset_session_version(spark: SparkSession) -> None:
    """Unset the session's ``txnVersion`` when ``...autoReset.enabled`` is true (Delta's
    safety measure against reusing a version by mistake)."""
    if str(spark.conf.get(SESSION_TXN_AUTO_RESET, "false")).strip().lower() == "true":
        spark.conf.unset(SESSION_TXN_VERSION)


def begin_idempotent_command(spark: SparkSession | None, txn: OptimisticTransaction) -> bool:
    """Delta's ``hasBeenExecuted`` for a DML command on ``txn``: False (run the command)
    unless the session names an application that already committed this version or a
    later one. When it runs, the transaction records the application id it read (a
    concurrent commit of the same application is a conflict) and its commit will carry
    the ``SetTransaction`` (:func:`pending_set_transactions`)."""
    app = None if spark is None else session_application_transaction(spark)
    if app is None or spark is None:
        return False
    done = txn.txn_version(app.app_id)
    reset_session_version(spark)
    if done is not None and done >= app.version:
        log.info(
            "application %s already committed version %s to %s (asked %s); skipping the command",
            app.app_id,
            done,
            txn.delta_log.table_uri,
            app.version,
        )
        return True
    _PENDING[txn] = app.set_transaction()
    return False


def pending_set_transactions(txn: OptimisticTransaction) -> list[SetTransaction]:
    """The ``SetTransaction`` the command running in ``txn`` commits (none, or one)."""
    pending = _PENDING.get(txn)
    return [] if pending is None else [pending]


def commit_set_transaction_only(txn: OptimisticTransaction, operation: Operation) -> int | None:
    """A DML command that changed no row: Delta's ``commitIfNeeded`` of its ``SetTransaction``
    alone. UPDATE and MERGE commit it even then (so running the command again with that
    version is skipped); without one the commit is empty, which Delta records only for a
    data-changing command on a ``WriteSerializable`` table
    (:meth:`~deltalog.txn.commit.transaction.OptimisticTransaction.commit_if_needed`). The
    version, or None when nothing was committed."""
    pending = pending_set_transactions(txn)
    version = txn.commit_if_needed(pending, operation)
    if version is not None:
        app = f" for application {pending[0].app_id}" if pending else ""
        log.info("%s changed no row; committed version %d%s", operation.name, version, app)
    return version
