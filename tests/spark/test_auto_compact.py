"""Auto compaction after Spark writes, as Delta's ``AutoCompactConfigurationSuite`` and
``AutoCompactExecutionSuite``: the table property or the session's conf turns it on, the
session's conf wins, only enough small files in the partitions a commit wrote to trigger it,
and it commits ``OPTIMIZE`` with ``auto: true`` without changing the data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark.helpers import commits, operations

pytestmark = pytest.mark.spark

CONF = "spark.databricks.delta.autoCompact"


@pytest.fixture
def confs(spark: Any) -> Iterator[Any]:
    """Set session confs for one test; they are unset afterwards."""
    keys: list[str] = []

    def set_confs(**values: str) -> None:
        for name, value in values.items():
            key = f"{CONF}.{name}"
            keys.append(key)
            spark.conf.set(key, value)

    yield set_confs
    for key in keys:
        spark.conf.unset(key)


def _append(df: Any, path: str, **options: str) -> None:
    df.write.format("deltalog").mode("append").options(**options).save(path)


def _last_commit_info(path: str) -> dict[str, Any]:
    return next(a["commitInfo"] for a in commits(path)[-1] if "commitInfo" in a)


def _num_files(path: str) -> int:
    from deltalog.txn.delta_log import DeltaLog

    return len(DeltaLog.for_table(path).update().files)


def test_the_table_property_compacts_once_enough_small_files(spark, table_path, confs):
    confs(minNumFiles="5")
    _append(spark.range(10).repartition(4), table_path, **{"delta.autoOptimize.autoCompact": "true"})
    assert operations(table_path) == ["WRITE"] and _num_files(table_path) == 4  # 4 < 5 small files
    _append(spark.range(10).repartition(4), table_path)
    assert operations(table_path) == ["WRITE", "WRITE", "OPTIMIZE"]
    info = _last_commit_info(table_path)
    assert info["operationParameters"]["auto"] is True and info["operationParameters"]["predicate"] == "[]"
    assert info["operationMetrics"]["numRemovedFiles"] == "8" and info["operationMetrics"]["numAddedFiles"] == "1"
    assert _num_files(table_path) == 1
    ids = sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect())
    assert ids == sorted(list(range(10)) * 2)


def test_the_session_conf_turns_it_on_and_wins_over_the_table(spark, table_path, confs):
    confs(enabled="true", minNumFiles="2")
    _append(spark.range(10).repartition(3), table_path)
    assert operations(table_path) == ["WRITE", "OPTIMIZE"] and _num_files(table_path) == 1
    confs(enabled="FALSE")
    _append(spark.range(10).repartition(3), table_path, **{"delta.autoOptimize.autoCompact": "true"})
    assert operations(table_path)[-1] == "WRITE" and _num_files(table_path) == 4


def test_only_modified_partitions_with_enough_small_files_are_compacted(spark, table_path, confs):
    confs(enabled="true", minNumFiles="3")
    part = "CASE WHEN id < 3 THEN NULL WHEN id < 6 THEN '' ELSE 'b' END AS p"
    _append(spark.range(0, 9, 1, 9).selectExpr("id", part), table_path, partitionBy="p")  # a file per row
    # p=null (with '', which Delta also writes as null) got 6 files, p=b got 3: both compacted
    info = _last_commit_info(table_path)
    assert operations(table_path) == ["WRITE", "OPTIMIZE"] and info["operationParameters"]["auto"] is True
    predicate = json.loads(info["operationParameters"]["predicate"])
    assert predicate == ["((p <=> CAST('b' AS STRING)) OR (p <=> CAST(NULL AS STRING)))"]
    assert _num_files(table_path) == 2
    confs(minNumFiles="4")
    _append(spark.range(9, 12, 1, 3).selectExpr("id", "'c' AS p"), table_path, partitionBy="p")  # 3 < 4
    confs(minNumFiles="3")
    _append(spark.range(12, 13).selectExpr("id", "'b' AS p"), table_path, partitionBy="p")
    # p=c has 3 small files now, but this commit wrote only to p=b (2 files): nothing compacted
    assert operations(table_path)[-1] == "WRITE" and _num_files(table_path) == 6
    confs(**{"modifiedPartitionsOnly.enabled": "false"})
    _append(spark.range(13, 14).selectExpr("id", "'d' AS p"), table_path, partitionBy="p")
    # without modifiedPartitionsOnly, one partition with enough small files compacts the table
    info = _last_commit_info(table_path)
    assert operations(table_path)[-1] == "OPTIMIZE" and info["operationParameters"]["predicate"] == "[]"
    assert _num_files(table_path) == 4  # p=c and p=b compacted; p=null and p=d hold one file each
    rows = spark.read.format("deltalog").load(table_path)
    assert rows.count() == 14 and rows.where("p IS NULL").count() == 6


def test_dml_triggers_it_and_optimize_does_not(spark, table_path, confs):
    from deltalog.contrib.spark import DeltaTable

    _append(spark.range(12).repartition(4), table_path)
    DeltaTable.forPath(spark, table_path).optimize().executeCompaction()
    assert _last_commit_info(table_path)["operationParameters"]["auto"] is False
    _append(spark.range(12, 20).repartition(4), table_path)
    confs(enabled="true", minNumFiles="5")
    DeltaTable.forPath(spark, table_path).optimize().executeCompaction()  # compacts 4 files, no auto compaction
    assert operations(table_path)[-2:] == ["WRITE", "OPTIMIZE"]
    confs(enabled="false")
    _append(spark.range(20, 28).repartition(4), table_path)
    confs(enabled="true", minNumFiles="3")  # the compacted file and what the UPDATE writes
    DeltaTable.forPath(spark, table_path).update("id >= 20", {"id": "id + 100"})
    assert operations(table_path)[-2:] == ["UPDATE", "OPTIMIZE"]
    assert _last_commit_info(table_path)["operationParameters"]["auto"] is True
    ids = sorted(r.id for r in spark.read.format("deltalog").load(table_path).collect())
    assert ids == list(range(20)) + list(range(120, 128))


def test_a_bad_value_is_refused_and_leaves_the_table_untouched(spark, table_path, confs):
    from deltalog.errors import InvalidAutoCompactTypeError
    from deltalog.txn.delta_log import DeltaLog

    with pytest.raises(Exception, match=r"DELTA_INVALID_AUTO_COMPACT_TYPE.*auto-compact type: maybe"):
        _append(spark.range(3), table_path, **{"delta.autoOptimize.autoCompact": "maybe"})
    assert not DeltaLog.for_table(table_path).table_exists()
    _append(spark.range(3), table_path)
    confs(enabled="sometimes")
    with pytest.raises(Exception, match="DELTA_INVALID_AUTO_COMPACT_TYPE"):
        _append(spark.range(3), table_path)
    assert operations(table_path) == ["WRITE"]
    assert issubclass(InvalidAutoCompactTypeError, ValueError)
