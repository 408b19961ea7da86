"""Time travel beyond ``delta.deletedFileRetentionDuration`` is refused where Delta Spark 4.1+
refuses it (``DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION``):
``versionAsOf``/``timestampAsOf`` reads, batch change-feed reads (their starting version),
RESTORE and CLONE of a version; the latest version always reads. Streaming sources, history
and reads of the latest version are not checked. The session conf
``spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration`` turns it
off for ``read_table`` and ``DeltaTable``; ``format("deltalog")`` takes it as an option."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest

from deltalog.errors import TimeTravelBeyondDeletedFileRetentionDurationError
from tests.log.helpers import set_mtime
from tests.ops.tables import append, create

pytestmark = pytest.mark.spark

DAY_MS = 24 * 3600 * 1000
ENFORCE_CONF = "spark.databricks.delta.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"
ERROR_CLASS = "DELTA_UNSUPPORTED_TIME_TRAVEL_BEYOND_DELETED_FILE_RETENTION_DURATION"


def _aged_table(path: str, config: dict[str, str] | None = None) -> None:
    """Versions 0 (create), 1 ([1]), 2 ([2]) and 3 ([3]) committed 10, 8, 6 and 1 days ago."""
    log = create(path, config=config)
    for ids in ([1], [2], [3]):
        append(log, ids)
    now = int(time.time() * 1000)
    for version, days in enumerate((10, 8, 6, 1)):
        set_mtime(os.path.join(path, "_delta_log", f"{version:020d}.json"), now - days * DAY_MS)


def _ids(df) -> list[int]:
    return sorted(r.id for r in df.collect())


def _days_ago(days: float) -> str:
    return dt.datetime.fromtimestamp(time.time() - days * 86400, tz=dt.timezone.utc).isoformat()


def test_time_travel_reads_beyond_the_retention_are_refused(spark, tmp_path: Path) -> None:
    from deltalog.contrib.spark import read_table

    path = str(tmp_path / "t")
    _aged_table(path)

    def read(**options: object):
        return spark.read.format("deltalog").options(**options).load(path)  # a reader keeps its options

    with pytest.raises(Exception, match=ERROR_CLASS):
        read(versionAsOf=1).collect()
    with pytest.raises(Exception, match=ERROR_CLASS):
        read(timestampAsOf=_days_ago(7.9)).collect()  # version 1
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        read_table(spark, path, versionAsOf=1)  # the native path plans on the driver
    with pytest.raises(Exception, match=ERROR_CLASS):
        read_table(spark, path, versionAsOf=1, native=False).collect()
    assert _ids(read(versionAsOf=2)) == [1, 2]  # six days old
    assert _ids(read_table(spark, path, timestampAsOf=_days_ago(5))) == [1, 2]
    assert _ids(read(versionAsOf=3)) == [1, 2, 3]  # the latest


def test_the_conf_and_the_option_turn_it_off(spark, tmp_path: Path) -> None:
    from deltalog.contrib.spark import read_table

    path = str(tmp_path / "t")
    _aged_table(path)
    assert _ids(spark.read.format("deltalog").option(ENFORCE_CONF, "false").option("versionAsOf", 1).load(path)) == [1]
    spark.conf.set(ENFORCE_CONF, "false")
    try:
        assert _ids(read_table(spark, path, versionAsOf=1)) == [1]
        assert _ids(read_table(spark, path, versionAsOf=1, native=False)) == [1]
    finally:
        spark.conf.unset(ENFORCE_CONF)


def test_a_longer_retention_allows_older_versions(spark, tmp_path: Path) -> None:
    from deltalog.contrib.spark import read_table

    path = str(tmp_path / "t")
    _aged_table(path, config={"delta.deletedFileRetentionDuration": "interval 30 days"})
    assert _ids(read_table(spark, path, versionAsOf=1)) == [1]
    assert _ids(spark.read.format("deltalog").option("versionAsOf", 0).load(path)) == []


def test_restore_and_clone_follow_the_session_conf(spark, tmp_path: Path) -> None:
    from deltalog.contrib.spark import DeltaTable

    path = str(tmp_path / "t")
    _aged_table(path)
    table = DeltaTable.forPath(spark, path)
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        table.restoreToVersion(1)
    with pytest.raises(TimeTravelBeyondDeletedFileRetentionDurationError):
        table.cloneAtVersion(1, str(tmp_path / "c1"), isShallow=True)
    assert _ids(table.cloneAtVersion(2, str(tmp_path / "c2"), isShallow=True).toDF()) == [1, 2]
    spark.conf.set(ENFORCE_CONF, "false")
    try:
        assert _ids(table.cloneAtVersion(1, str(tmp_path / "c3"), isShallow=True).toDF()) == [1]
        table.restoreToVersion(1)
    finally:
        spark.conf.unset(ENFORCE_CONF)
    assert _ids(table.toDF()) == [1]


def test_the_change_feed_checks_its_start_streams_and_history_do_not(spark, tmp_path: Path) -> None:
    """Delta's batch ``CDCReader`` builds the starting version's snapshot with the check; the
    streaming source (``startingVersion``, change feed or not) and ``DESCRIBE HISTORY`` do not."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from deltalog.contrib.spark import DeltaTable
    from deltalog.contrib.spark.source import DeltaLogDataSource
    from tests.spark.test_streaming_source import _reader

    path = str(tmp_path / "t")
    _aged_table(path, config={"delta.enableChangeDataFeed": "true"})

    def feed(start: int):
        return spark.read.format("deltalog").options(readChangeFeed="true", startingVersion=start).load(path)

    with pytest.raises(Exception, match=ERROR_CLASS):
        feed(1).collect()
    assert _ids(feed(2)) == [2, 3]
    assert _ids(feed(3)) == [3]  # the latest
    for options in ({"startingVersion": "1"}, {"startingVersion": "1", "readChangeFeed": "true"}):
        DeltaLogDataSource({"path": path, **options}).schema()  # Spark asks a stream's schema too
        reader = _reader(path, **options)
        start = reader.initialOffset()
        assert sum(len(p.files) for p in reader.partitions(start, reader.latestOffset(start, ReadAllAvailable()))) == 3
    table = DeltaTable.forPath(spark, path)
    assert [r.version for r in table.history().collect()] == [3, 2, 1, 0]
    assert _ids(table.toDF()) == [1, 2, 3]


def test_read_options_carry_the_conf(spark) -> None:
    """``read_table`` hands the session's conf on as the read option unless the read sets it
    itself; a command reading its own snapshot (a new CHECK constraint checked against the
    transaction's snapshot) always turns the check off, as Delta never checks such reads."""
    from deltalog.contrib.spark.time_travel import with_session_retention_conf, without_retention_check

    own = "deltalog.vacuum.enforceTimeTravelWithinDeletedFileRetentionDuration"
    assert with_session_retention_conf(spark, {"a": "1"}) == {"a": "1"}
    spark.conf.set(ENFORCE_CONF, "FALSE")
    try:
        assert with_session_retention_conf(spark, {"a": "1"}) == {"a": "1", ENFORCE_CONF: "false"}
        assert with_session_retention_conf(spark, {own.upper(): "true"}) == {own.upper(): "true"}
    finally:
        spark.conf.unset(ENFORCE_CONF)
    assert without_retention_check({own: "true", "AWS_REGION": "x"}) == {"AWS_REGION": "x", ENFORCE_CONF: "false"}
