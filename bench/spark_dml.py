"""Benchmark: MERGE and OPTIMIZE through Spark against the same work done with ``df.write.parquet``.

One Spark session (local[2]), alternating the two sides, best of ``--repeat``:

- **MERGE** of 1% updated rows (a contiguous id range) into an N-row table partitioned by
  ``k`` (10 partitions, ids sorted so each file holds one id range): deltalog's
  ``DeltaTable.merge(...).whenMatchedUpdate(...)`` against reading just the files holding
  those rows with ``spark.read.parquet``, updating them and writing them back with
  ``df.write.parquet``. Also checks that MERGE rewrote only those files.
- **OPTIMIZE** of F small files: ``DeltaTable.optimize().executeCompaction()`` (bins
  rewritten by executor tasks) against ``spark.read.parquet`` of the same files coalesced to
  as many files as OPTIMIZE wrote, written with ``df.write.parquet``. Each repetition starts
  from the small files again (a RESTORE to the version before the compaction).

    python bench/spark_dml.py [--rows 10000000] [--files 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _timed(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _files_holding(log: Any, lo: int, hi: int) -> list[str]:
    """The table's files whose id range (from their stats) overlaps [lo, hi)."""
    out = []
    for add in log.update().files:
        stats = json.loads(add.stats or "{}")
        if stats["minValues"]["id"] < hi and stats["maxValues"]["id"] >= lo:
            out.append(f"{log.table_uri}/{add.path}")
    return out


def bench_merge(spark: Any, work: str, rows: int, repeat: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    path = os.path.join(work, "merge")
    data = spark.range(rows).select("id", F.floor(F.col("id") * 10 / rows).cast("int").alias("k"), F.rand(1).alias("x"))
    data.repartition(40, "k").sortWithinPartitions("id").write.format("deltalog").mode("append").option(
        "partitionBy", "k"
    ).save(path)
    table = DeltaTable.forPath(spark, path)
    lo, hi = rows // 2, rows // 2 + rows // 100
    source = spark.range(lo, hi).select("id", F.lit(-1.0).alias("x")).cache()
    source.count()
    merge_s, parquet_s, removed, holding = [], [], 0, 0
    for i in range(repeat):
        files = _files_holding(table._log, lo, hi)
        holding = len(files)
        merge = table.alias("t").merge(source.alias("s"), "t.id = s.id").whenMatchedUpdate(set={"x": "s.x"})
        merge_s.append(_timed(merge.execute))
        removed = int(table._log.history(limit=1)[0].operation_metrics["numTargetFilesRemoved"])
        updated = (
            spark.read.parquet(*files)
            .join(source.withColumnRenamed("x", "sx"), "id", "left")
            .select("id", F.coalesce("sx", "x").alias("x"))
        )
        parquet_s.append(_timed(partial(updated.write.parquet, os.path.join(work, f"merge-parquet-{i}"))))
    return {
        "deltalog_s": round(min(merge_s), 3),
        "parquet_s": round(min(parquet_s), 3),
        "files_rewritten": removed,
        "files_holding_rows": holding,
        "rows": rows,
    }


def bench_optimize(spark: Any, work: str, files: int, repeat: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from deltalog.contrib.spark import DeltaTable

    path = os.path.join(work, "optimize")
    data = spark.range(files * 200).select("id", F.rand(2).alias("x"), F.expr("uuid()").alias("s"))
    data.repartition(files).write.format("deltalog").mode("append").save(path)
    table = DeltaTable.forPath(spark, path)
    small = table._log.update()
    small_files = [f"{small.table_uri}/{a.path}" for a in small.files]
    optimize_s, parquet_s, written = [], [], 0
    for i in range(repeat):
        if i:
            table.restoreToVersion(small.version)
        optimize_s.append(_timed(table.optimize().executeCompaction))
        written = table._log.update().num_files
        rewrite = spark.read.parquet(*small_files).coalesce(written).write
        parquet_s.append(_timed(partial(rewrite.parquet, os.path.join(work, f"optimize-parquet-{i}"))))
    return {
        "deltalog_s": round(min(optimize_s), 3),
        "parquet_s": round(min(parquet_s), 3),
        "files_in": len(small_files),
        "files_out": written,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from bench.common import spark_workspace

    with spark_workspace("deltalog-bench-dml-") as (spark, work):
        result = {
            "merge": bench_merge(spark, work, args.rows, args.repeat),
            "optimize": bench_optimize(spark, work, args.files, args.repeat),
        }
    print(json.dumps(result))
    return 0


# -- the ``python -m bench`` protocol (bench/report.py) -----------------------------------

WORKLOADS = ("PySpark MERGE: 1% of rows updated", "PySpark OPTIMIZE: compact small files")
SIZES = {"small": (50_000, 20, 1), "full": (10_000_000, 1000, 3)}


def run(size: str) -> list[object]:
    """Run this script in a fresh process (its own Spark session)."""
    from bench.common import run_script
    from bench.report import Result

    rows, files, repeat = SIZES[size]
    data = run_script(__file__, "--rows", str(rows), "--files", str(files), "--repeat", str(repeat))
    merge, optimize = data["merge"], data["optimize"]
    return [
        Result(
            WORKLOADS[0],
            "s",
            merge["deltalog_s"],
            None,
            merge["parquet_s"],
            target_ratio=1.5,
            baseline="parquet",
            conditions={
                "rewrote only the files holding the rows": merge["files_rewritten"] <= merge["files_holding_rows"]
            },
            details=merge,
            notes=f"{rows:,} rows, 10 partitions; vs spark.read.parquet of those files + df.write.parquet",
        ),
        Result(
            WORKLOADS[1],
            "s",
            optimize["deltalog_s"],
            None,
            optimize["parquet_s"],
            target_ratio=1.3,
            baseline="parquet",
            details=optimize,
            notes=f"{optimize['files_in']:,} files -> {optimize['files_out']}; "
            "vs spark.read.parquet(...).coalesce(n).write.parquet",
        ),
    ]


if __name__ == "__main__":
    sys.exit(main())
