"""Idempotent writes and DML from the session confs, as Delta's ``hasBeenExecuted`` /
``createSetTransaction``: ``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` make
``write_table``, DELETE, UPDATE and MERGE idempotent; ``...autoReset.enabled`` unsets the
version once a command used it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deltalog.contrib.spark import DeltaTable, write_table
from deltalog.contrib.spark.errors import InvalidWriteOptionError
from deltalog.contrib.spark.idempotent import SESSION_TXN_APP_ID, SESSION_TXN_AUTO_RESET, SESSION_TXN_VERSION
from deltalog.txn.delta_log import DeltaLog


@pytest.fixture
def session(spark: Any) -> Iterator[Any]:
    """The shared session, its idempotency confs unset again after the test."""
    yield spark
    for key in (SESSION_TXN_APP_ID, SESSION_TXN_VERSION, SESSION_TXN_AUTO_RESET):
        spark.conf.unset(key)


def _idempotent(spark: Any, app_id: str | None, version: int | None) -> None:
    for key, value in ((SESSION_TXN_APP_ID, app_id), (SESSION_TXN_VERSION, version)):
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, str(value))


def _rows(spark: Any, uri: str) -> list[tuple[int, int]]:
    return sorted((r.id, r.x) for r in DeltaTable.forPath(spark, uri).toDF().collect())


def _version_and_txn(uri: str, app_id: str) -> tuple[int, int | None]:
    snapshot = DeltaLog.for_table(uri).update()
    return snapshot.version, snapshot.txn_version(app_id)


def test_write_table_takes_the_session_application_transaction(session: Any, table_path: str) -> None:
    df = session.createDataFrame([(1, 10)], "id long, x long")
    _idempotent(session, "nightly", 3)
    assert write_table(df, table_path) == 0
    assert write_table(df, table_path) is None  # version 3 of nightly already committed
    _idempotent(session, "nightly", 2)
    assert write_table(df, table_path) is None  # an older version too
    assert _version_and_txn(table_path, "nightly") == (0, 3)
    # the options win over the session
    assert write_table(df, table_path, txnAppId="nightly", txnVersion=4) == 1
    assert _version_and_txn(table_path, "nightly") == (1, 4)
    assert _rows(session, table_path) == [(1, 10), (1, 10)]


def test_one_session_conf_without_the_other_is_refused(session: Any, table_path: str) -> None:
    df = session.createDataFrame([(1, 10)], "id long, x long")
    write_table(df, table_path)
    _idempotent(session, "nightly", None)
    with pytest.raises(InvalidWriteOptionError, match="MISSING_SESSION_CONFS"):
        write_table(df, table_path)
    _idempotent(session, None, 1)
    with pytest.raises(InvalidWriteOptionError, match="MISSING_SESSION_CONFS"):
        DeltaTable.forPath(session, table_path).delete("id = 1")
    assert _version_and_txn(table_path, "nightly") == (0, None)


def test_auto_reset_unsets_the_version_once_used(session: Any, table_path: str) -> None:
    df = session.createDataFrame([(1, 10)], "id long, x long")
    session.conf.set(SESSION_TXN_AUTO_RESET, "true")
    _idempotent(session, "nightly", 1)
    write_table(df, table_path)
    assert session.conf.get(SESSION_TXN_VERSION, None) is None
    assert session.conf.get(SESSION_TXN_APP_ID) == "nightly"
    assert _version_and_txn(table_path, "nightly") == (0, 1)


def test_dml_is_skipped_when_the_application_committed_its_version(session: Any, table_path: str) -> None:
    write_table(session.createDataFrame([(1, 10), (2, 20), (3, 30)], "id long, x long"), table_path)
    table = DeltaTable.forPath(session, table_path)
    _idempotent(session, "job", 1)
    table.delete("id = 1")
    assert _version_and_txn(table_path, "job") == (1, 1)
    table.update("id = 2", {"x": "x + 1"})  # version 1 again: skipped
    _idempotent(session, "job", 2)
    table.update("id = 2", {"x": "x + 1"})
    source = session.createDataFrame([(3, 33), (4, 40)], "id long, x long")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    assert _version_and_txn(table_path, "job") == (2, 2)  # the MERGE was skipped
    assert _rows(session, table_path) == [(2, 21), (3, 30)]


def test_update_and_merge_that_change_nothing_still_record_the_version(session: Any, table_path: str) -> None:
    """As Delta: an idempotent UPDATE or MERGE matching no row commits its SetTransaction
    (a DELETE that deletes nothing commits nothing)."""
    write_table(session.createDataFrame([(1, 10)], "id long, x long"), table_path)
    table = DeltaTable.forPath(session, table_path)
    _idempotent(session, "job", 1)
    table.delete("id = 9")
    assert _version_and_txn(table_path, "job") == (0, None)
    table.update("id = 9", {"x": "0"})
    assert _version_and_txn(table_path, "job") == (1, 1)
    _idempotent(session, "job", 2)
    source = session.createDataFrame([(9, 90)], "id long, x long")
    table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedDelete().execute()
    assert _version_and_txn(table_path, "job") == (2, 2)
    history = table.history().select("operation").collect()
    assert [r.operation for r in history][:2] == ["MERGE", "UPDATE"]
    assert _rows(session, table_path) == [(1, 10)]


def test_format_deltalog_writes_take_the_session_application_transaction(session: Any, table_path: str) -> None:
    """Delta's ``WriteIntoDelta`` reads ``txnAppId``/``txnVersion`` from the session where the
    write's options are silent (``getTxnVersionAndAppId``): a ``df.write.format("deltalog")``
    run again with the session's version is skipped (it was committed a second time: duplicate
    rows), and ``autoReset`` unsets the version the write used."""
    df = session.createDataFrame([(1, 10)], "id long, x long").coalesce(1)
    _idempotent(session, "nightly", 3)
    for _ in range(2):
        df.write.format("deltalog").mode("append").save(table_path)
    assert _version_and_txn(table_path, "nightly") == (0, 3)
    session.conf.set(SESSION_TXN_AUTO_RESET, "true")
    _idempotent(session, "nightly", 4)
    df.write.format("deltalog").mode("append").save(table_path)
    assert session.conf.get(SESSION_TXN_VERSION, None) is None
    assert _version_and_txn(table_path, "nightly") == (1, 4)
    _idempotent(session, None, 6)
    with pytest.raises(InvalidWriteOptionError, match="MISSING_SESSION_CONFS"):
        df.write.format("deltalog").mode("append").save(table_path)
