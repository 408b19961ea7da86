"""The ``replaceUsing`` write option, as Delta 4.3's ``DeltaInsertReplaceUsingDFWriterTests``
(DataFrame writer ``save()``): an overwrite replacing the rows whose key columns equal a
written row's, in one ``WRITE`` commit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deltalog.contrib.spark import write_table
from deltalog.txn.delta_log import DeltaLog


def _create(spark: Any, path: str, rows: list[Any], schema: str, **options: str) -> None:
    writer = spark.createDataFrame(rows, schema).write.format("deltalog").mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(path)


def _replace(spark: Any, path: str, rows: list[Any], schema: str, columns: str, mode: str = "overwrite") -> None:
    df = spark.createDataFrame(rows, schema)
    df.write.format("deltalog").mode(mode).option("replaceUsing", columns).save(path)


def _rows(spark: Any, path: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in spark.read.format("deltalog").load(path).collect()), key=str)


def _commit_info(path: str, version: int) -> dict[str, Any]:
    with open(f"{path}/_delta_log/{version:020d}.json", encoding="utf-8") as f:
        return next(a["commitInfo"] for a in map(json.loads, f) if "commitInfo" in a)


def test_replace_using_replaces_the_rows_with_the_written_keys(spark, tmp_path):
    """ "replaceUsing with single column", "inserts by name with misaligned column positions",
    "NULL values in matching column" and "CDF enabled and NULL values in matching columns": the
    rows whose key equals a written row's are replaced, matched by ``=`` (a null key replaces
    nothing and is never replaced), in one WRITE commit recording ``replaceUsingCols``; the
    change data feed has the replaced rows as deletes and the written rows as inserts."""
    path = str(tmp_path / "t")
    _create(
        spark,
        path,
        [(1, "a", "target"), (None, "a", "target_null"), (3, "a", "target")],
        "id int, a string, value string",
        **{"delta.enableChangeDataFeed": "true"},
    )
    _replace(
        spark,
        path,
        [("source", 1, "b"), ("source_null", None, "b"), ("source", 4, "b")],
        "value string, id int, a string",
        "id",
    )
    assert _rows(spark, path) == [
        (1, "b", "source"),
        (3, "a", "target"),
        (4, "b", "source"),
        (None, "a", "target_null"),
        (None, "b", "source_null"),
    ]
    info = _commit_info(path, 1)
    assert info["operation"] == "WRITE"
    assert info["operationParameters"] == {"mode": "Overwrite", "partitionBy": "[]", "replaceUsingCols": "(id)"}
    assert (info["operationMetrics"]["numDeletedRows"], info["operationMetrics"]["numOutputRows"]) == ("1", "3")
    changes = spark.read.format("deltalog").option("readChangeFeed", "true").option("startingVersion", 1).load(path)
    got = sorted(((r.id, r.value, r._change_type) for r in changes.collect()), key=str)
    assert got == [
        (1, "source", "insert"),
        (1, "target", "delete"),
        (4, "source", "insert"),
        (None, "source_null", "insert"),
    ]


def test_replace_using_several_columns_partitions_and_append(spark, tmp_path):
    """ "replaceUsing with multiple columns", "on partitioned table with matching on partition
    column", "replaces all matching rows when target has duplicates", "with empty source" and
    "in Append mode does not do selective overwrite"; the same through ``write_table``, whose
    files Spark's own writer writes."""
    path = str(tmp_path / "t")
    _create(
        spark, path, [(1, "x", 1), (1, "x", 5), (1, "y", 2), (2, "x", 3)], "p int, b string, v int", partitionBy="p"
    )
    _replace(spark, path, [(1, "x", 10), (1, "x", 11)], "p int, b string, v int", "p, B")
    assert _rows(spark, path) == [(1, "x", 10), (1, "x", 11), (1, "y", 2), (2, "x", 3)]
    _replace(spark, path, [], "p int, b string, v int", "p")
    assert _rows(spark, path) == [(1, "x", 10), (1, "x", 11), (1, "y", 2), (2, "x", 3)]
    _replace(spark, path, [(2, "x", 30)], "p int, b string, v int", "p", mode="append")
    assert _rows(spark, path) == [(1, "x", 10), (1, "x", 11), (1, "y", 2), (2, "x", 3), (2, "x", 30)]
    source = spark.createDataFrame([(2, "z", 40)], "p int, b string, v int")
    write_table(source, path, mode="overwrite", replaceUsing="p")
    assert _rows(spark, path) == [(1, "x", 10), (1, "x", 11), (1, "y", 2), (2, "z", 40)]


@pytest.mark.parametrize(
    ("columns", "options", "error"),
    [
        ("", {}, "DELTA_ILLEGAL_OPTION"),
        ("nope", {}, "UNRESOLVED_INSERT_REPLACE_USING_COLUMN: Column `nope` cannot be resolved in table"),
        ("region", {}, "UNRESOLVED_INSERT_REPLACE_USING_COLUMN: Column `region` cannot be resolved in query"),
        ("id", {"replaceWhere": "id > 0"}, "DELTA_OVERWRITE_BY_FILTER_INCOMPATIBLE_REPLACE_ON_OR_USING"),
        ("id", {"partitionOverwriteMode": "dynamic"}, "DELTA_DYNAMIC_PARTITION_OVERWRITE_INCOMPATIBLE"),
        ("id", {"overwriteSchema": "true"}, "DELTA_INCOMPATIBLE_DATAFRAME_OPTIONS: The `overwriteSchema`"),
        ("id", {"replaceOn": "t.id = s.id"}, "(?i)replaceOn .*not supported"),
    ],
)
def test_replace_using_refusals_leave_the_table_untouched(spark, tmp_path, columns, options, error):
    """Delta's option checks (``validateReplaceOnOrUsingOptionCombinations``,
    ``parsedReplaceUsingColsList``, ``UNRESOLVED_INSERT_REPLACE_USING_COLUMN``); nothing is
    committed. ``replaceOn`` is not supported and never taken as a whole-table overwrite."""
    path = str(tmp_path / "t")
    _create(spark, path, [(1, "t", "us")], "id int, value string, region string")
    writer = spark.createDataFrame([(1, "s")], "id int, value string").write.format("deltalog").mode("overwrite")
    for k, v in {"replaceUsing": columns, **options}.items():
        writer = writer.option(k, v)
    with pytest.raises(Exception, match=error):
        writer.save(path)
    assert DeltaLog.for_table(path).update().version == 0
    assert _rows(spark, path) == [(1, "t", "us")]
