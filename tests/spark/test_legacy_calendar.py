"""Files Spark wrote in its legacy hybrid calendar (Spark 2.x, or a session with
``datetimeRebaseModeInWrite``/``int96RebaseModeInWrite`` set to ``LEGACY``) hold dates before
1582-10-15 and timestamps before 1900 as the Julian calendar and ``java.util``'s zones count
them; Spark rebases them on read. Every deltalog read path returns Spark's values, and OPTIMIZE
writes them back proleptic."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pyarrow.parquet as pq

ROWS = [
    "date'0001-01-01' d, timestamp'0001-01-01 00:00:00' ts, timestamp_ntz'0001-01-01 00:00:00' ntz",
    "date'1000-02-28' d, timestamp'1850-06-01 12:00:00' ts, timestamp_ntz'1000-02-28 12:00:00' ntz",
    "date'1582-10-04' d, timestamp'1582-10-04 23:00:00' ts, null ntz",
    "date'2024-01-01' d, timestamp'2024-01-01 00:00:00' ts, timestamp_ntz'2024-01-01 00:00:00' ntz",
]
AS_TEXT = (
    "cast(d as string) d",
    "cast(ts as string) ts",
    "cast(ntz as string) ntz",
    "cast(s.d as string) sd",
    "cast(a as string) a",
)


def _write_legacy(spark: Any, path: str) -> None:
    """A file a row: INT64 timestamps in UTC, INT96 timestamps in America/Los_Angeles."""
    confs = {
        "spark.sql.parquet.datetimeRebaseModeInWrite": "LEGACY",
        "spark.sql.parquet.int96RebaseModeInWrite": "LEGACY",
    }
    rows = spark.sql(" union all ".join(f"select {r}" for r in ROWS)).selectExpr(
        "*", "named_struct('d', d) s", "array(d, d) a"
    )
    for zone, output, name in (("UTC", "TIMESTAMP_MICROS", "micros"), ("America/Los_Angeles", "INT96", "int96")):
        settings = {**confs, "spark.sql.session.timeZone": zone, "spark.sql.parquet.outputTimestampType": output}
        for key, value in settings.items():
            spark.conf.set(key, value)
        try:
            rows.repartitionByRange(len(ROWS), "d").write.parquet(os.path.join(path, name))
        finally:
            for key in settings:
                spark.conf.unset(key)
            spark.conf.set("spark.sql.session.timeZone", "UTC")
        parts = sorted(n for n in os.listdir(os.path.join(path, name)) if n.endswith(".parquet"))
        for i, part in enumerate(parts):  # a file a row: its footer bounds are that row's numbers
            os.replace(os.path.join(path, name, part), os.path.join(path, f"{name}-{i}.parquet"))
        shutil.rmtree(os.path.join(path, name))


def _text(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.selectExpr(*AS_TEXT).collect())


def test_legacy_calendar_files_read_as_spark_reads_them(spark: Any, tmp_path: Any) -> None:
    from deltalog.contrib.spark import DeltaTable, read_table

    path = str(tmp_path / "t")
    _write_legacy(spark, path)
    expected = _text(spark.read.parquet(*(os.path.join(path, n) for n in os.listdir(path))))
    assert (
        "0001-01-01",
        "0001-01-01 00:00:00",
        "0001-01-01 00:00:00",
        "0001-01-01",
        "[0001-01-01, 0001-01-01]",
    ) in expected
    raw = pq.read_table(os.path.join(path, "micros-0.parquet")).column("d").cast("int32").to_pylist()
    assert raw == [-719164]  # the file holds the Julian day; proleptic 0001-01-01 is -719162
    DeltaTable.convertToDelta(spark, f"parquet.`{path}`")
    python_source = spark.read.format("deltalog").load(path)
    assert _text(python_source) == expected
    # footer statistics hold the Julian numbers: pushed filters must not skip by them
    assert python_source.where("d = date'1000-02-28'").count() == 2
    # and CONVERT's statistics leave out their date and timestamp bounds: no file skipped by them
    assert read_table(spark, path, where="d = date'1000-02-28'").count() == 2
    assert _text(read_table(spark, path, native=True)) == expected

    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    (compacted,) = [a.path for a in DeltaTable.forPath(spark, path)._log.update().files]
    footer = pq.read_metadata(os.path.join(path, compacted)).metadata or {}
    assert b"org.apache.spark.legacyDateTime" not in footer and b"org.apache.spark.legacyINT96" not in footer
    assert _text(spark.read.parquet(os.path.join(path, compacted))) == expected
